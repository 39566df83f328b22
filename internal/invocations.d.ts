import type { InvocationAbort } from '../binding.js';
/** Opens invocation `id` and returns the signal its backend receives. */
export declare function openInvocation(id: number, backend: string, callerSignal: AbortSignal | undefined): AbortSignal;
/** Forgets a settled invocation: an abort that comes later has nobody left to tell. */
export declare function closeInvocation(id: number): void;
/** Called by the native side when the relay gives up on an invocation (timeout or cancellation). */
export declare function abortInvocation(abort: InvocationAbort): void;
