/** The depth of the JS backend whose code is running now, if any. */
export declare function currentBackendDepth(): number | undefined;
/** Runs a JS backend's `run()`/`review()` at the depth its relay gave it (its `PHONE_A_FRIEND_DEPTH`, `^\d+$` else 0, as docs/CONTRACT.md §3 step 8 reads it). */
export declare function runAtDepthOf<T>(depth: string, work: () => T): T;
