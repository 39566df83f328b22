import type { BackendCall, BackendOutcome, NativeBackendOutcome, NativeCaller, NativeRelayOptions } from '../binding.js';
import { RelayError } from './errors.js';
/** What one relay call keeps on the JS side while it runs. */
export interface CallRecord {
    /** Values its JS backends threw, by handle, so the caller can get the very same value back. */
    readonly thrown: Map<number, unknown>;
    readonly signal?: AbortSignal;
    /** Where the call's warnings go (else `console.error`). */
    readonly onWarning?: (message: string) => void;
}
/** What a call brings besides its native options. */
export interface CallOptions {
    signal?: AbortSignal;
    /** A check 1 or 2 failure found in JS (see `refusedEarly`). */
    refused?: RelayError;
    onWarning?: (message: string) => void;
}
export declare function callRecord(tag: number): CallRecord | undefined;
/** Keeps a thrown value for the call and returns its handle. */
export declare function keepThrown(record: CallRecord, value: unknown): number;
/** Runs one native call and turns a native failure into what the caller must see. */
export declare function callNative<T>(options: CallOptions, start: (caller: NativeCaller) => Promise<T>): Promise<T>;
/**
 * `relay()` to a JS backend, made without leaving this thread when its preparation waits on
 * nothing (no context file, diff, session or schema): checks and envelope in one synchronous
 * native call, then the backend's trampoline, which keeps its time and the caller's signal. The
 * asynchronous path would cross threads four times, several times what such a backend costs.
 * Else (or for a backend that is not a JS one) the call is `relay()`'s asynchronous one.
 */
export declare function relayOnThisThread(options: CallOptions, native: NativeRelayOptions, trampoline: (call: BackendCall) => Promise<BackendOutcome>): Promise<string>;
/** How one backend of a `relayAll()` call settled. */
export type RelayAllResult = {
    backend: string;
    ok: true;
    answer: string;
} | {
    backend: string;
    ok: false;
    error: RelayError;
};
/**
 * Runs a native `relayAll()` call: a failure of the whole call rejects; each backend's own failure
 * becomes its `RelayError`. A value a JS backend threw that is not one is wrapped in one
 * (`ERR_BACKEND_FAILED`, the value as its `cause`), so one backend's TypeError neither rejects
 * the call nor breaks the result's type.
 */
export declare function callNativeAll(options: CallOptions, start: (caller: NativeCaller) => Promise<NativeBackendOutcome[]>): Promise<RelayAllResult[]>;
/**
 * Runs one native streaming call (docs/CONTRACT.md §10): yields its chunks as they come, returns
 * the final answer. Leaving early (`break`, `return()`, `throw()`) aborts the run and stops its
 * backend.
 */
export declare function streamNative(options: CallOptions, start: (caller: NativeCaller) => number): AsyncGenerator<string, string, undefined>;
/**
 * Runs a stream for a caller's `onChunk`: each chunk is handed to it; a throw from it aborts
 * the run and rejects with what it threw.
 */
export declare function collectStream(stream: AsyncGenerator<string, string, undefined>, onChunk: (text: string) => void): Promise<string>;
/** Turns a native failure into a `RelayError`, an `AbortError` or the value a backend threw. */
export declare function fromNative(error: unknown, record?: CallRecord): unknown;
