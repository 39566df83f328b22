/** Every code a `RelayError` can carry (docs/CONTRACT.md §7). */
export type RelayErrorCode = 'ERR_PROMPT_REQUIRED' | 'ERR_INVALID_TIMEOUT' | 'ERR_INVALID_REPO' | 'ERR_UNSUPPORTED_BACKEND' | 'ERR_INVALID_SANDBOX' | 'ERR_CONTEXT_CONFLICT' | 'ERR_CONTEXT_FILE' | 'ERR_TOO_LARGE' | 'ERR_DEPTH_LIMIT' | 'ERR_GIT_DIFF' | 'ERR_BACKEND_UNAVAILABLE' | 'ERR_BACKEND_TIMEOUT' | 'ERR_TIMEOUT' | 'ERR_SCHEMA' | 'ERR_SESSION' | 'ERR_BACKEND_FAILED' | 'ERR_BACKEND_NO_OUTPUT' | 'ERR_INTERNAL';
export interface RelayErrorOptions {
    /** The backend that failed, for errors a backend reported. */
    backend?: string;
    /** The original error (for a JS backend: the `BackendError` it threw). */
    cause?: unknown;
}
/** The one error type of the relay: `code` says what went wrong, `message` says it for people. */
export declare class RelayError extends Error {
    readonly name: "RelayError";
    readonly code: RelayErrorCode;
    readonly backend?: string;
    constructor(message: string, code?: RelayErrorCode, options?: RelayErrorOptions);
}
/** What a backend written in JS throws to report a failure; the relay turns it into a `RelayError`. */
export declare class BackendError extends Error {
    readonly name: string;
}
/** Node's usual cancellation error: `name` 'AbortError', `code` 'ABORT_ERR', `cause` the signal's reason. */
export declare class AbortError extends Error {
    readonly name: "AbortError";
    readonly code: "ABORT_ERR";
    constructor(message?: string, options?: {
        cause?: unknown;
    });
}
/** A `TypeError` with Node's `ERR_INVALID_ARG_TYPE` code, for arguments of the wrong type. */
export declare function invalidArgType(name: string, expected: string, actual: unknown): TypeError;
/** How Node's own argument errors describe a received value. */
export declare function describe(value: unknown): string;
