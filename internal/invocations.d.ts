import type { BackendCall, InvocationAbort } from '../binding.js';
/** Opens invocation `id` and returns the signal its backend receives. */
export declare function openInvocation(id: number, backend: string, callerSignal: AbortSignal | undefined): AbortSignal;
/** Forgets a settled invocation: an abort that comes later has nobody left to tell. */
export declare function closeInvocation(id: number): void;
/** Called by the native side when the relay gives up on an invocation (timeout or cancellation). */
export declare function abortInvocation(abort: InvocationAbort): void;
/** How an invocation ended when its backend did not settle first. */
export declare const TIMED_OUT: unique symbol;
export declare const ABORTED: unique symbol;
/**
 * Settles as `work` does, unless the invocation's time runs out or its caller aborts first. When
 * the time the relay's deadline left it is over, the backend's signal aborts with the timeout
 * error and the backend has `graceMs` more to settle (what it throws in answer to the abort wins);
 * then it is given up. An answer that comes once the time is over is too late, whatever it says
 * (a backend may resolve with whatever it had when its signal aborted): the invocation timed out.
 * The caller's signal gives it up at once. The timers do not keep Node running. `startedAt`:
 * `performance.now()` when the backend was called (its time counts from then).
 */
export declare function withinTime<T>(call: BackendCall, startedAt: number, callerSignal: AbortSignal | undefined, work: Promise<T>): Promise<T | typeof TIMED_OUT | typeof ABORTED>;
