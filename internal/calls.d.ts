import type { NativeCaller } from '../binding.js';
/** What one relay call keeps on the JS side while it runs. */
export interface CallRecord {
    /** Values its JS backends threw, by handle, so the caller can get the very same value back. */
    readonly thrown: Map<number, unknown>;
    readonly signal?: AbortSignal;
}
export declare function callRecord(tag: number): CallRecord | undefined;
/** Keeps a thrown value for the call and returns its handle. */
export declare function keepThrown(record: CallRecord, value: unknown): number;
/**
 * Runs one native call: snapshots the environment and cwd on this thread, bridges the
 * AbortSignal to a native cancellation token, and turns a native failure into what the caller
 * must see.
 */
export declare function callNative<T>(signal: AbortSignal | undefined, start: (caller: NativeCaller) => Promise<T>): Promise<T>;
/** Turns a native failure into a `RelayError`, an `AbortError` or the value a backend threw. */
export declare function fromNative(error: unknown, record?: CallRecord): unknown;
