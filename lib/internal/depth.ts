import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * The relay depth of the JS backend code running now. A JS backend runs in this process, where the
 * depth its relay gave it (in its `env`) never reaches `process.env`; this carries it instead, through
 * timers and promise chains, to any relay the backend starts.
 */
const backendDepth = new AsyncLocalStorage<number>()

/** The depth of the JS backend whose code is running now, if any. */
export function currentBackendDepth(): number | undefined {
  return backendDepth.getStore()
}

/** Runs a JS backend's `run()`/`review()` at the depth its relay gave it (its `PHONE_A_FRIEND_DEPTH`, `^\d+$` else 0, as docs/CONTRACT.md §3 step 8 reads it). */
export function runAtDepthOf<T>(depth: string, work: () => T): T {
  return backendDepth.run(/^\d+$/.test(depth) ? Number(depth) : 0, work)
}
