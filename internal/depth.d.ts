/** The depth of the JS backend whose code is running now, if any. */
export declare function currentBackendDepth(): number | undefined;
/** Runs a JS backend's `run()`/`review()` at the depth its relay gave it (its `PHONE_A_FRIEND_DEPTH`). */
export declare function runAtDepthOf<T>(depth: string, work: () => T): T;
/**
 * Raises the depth in `env` (a snapshot for the native side, never `process.env`) to the depth of
 * the JS backend this call comes from, if that is deeper; the native depth guard does the rest.
 */
export declare function withBackendDepth(env: Record<string, string>): Record<string, string>;
