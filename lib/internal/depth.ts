import { AsyncLocalStorage } from 'node:async_hooks'

/** Must match `DEPTH_ENV_VAR` in `src/limits.rs`. */
const DEPTH_ENV_VAR = 'PHONE_A_FRIEND_DEPTH'

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

/** The depth an environment records (SPEC 3 step 8): `^\d+$`, else 0. */
function depthOf(env: Record<string, string>): number {
  const value = env[DEPTH_ENV_VAR]
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : 0
}

/** Runs a JS backend's `run()`/`review()` at the depth its relay gave it (its `PHONE_A_FRIEND_DEPTH`). */
export function runAtDepthOf<T>(depth: string, work: () => T): T {
  return backendDepth.run(depthOf({ [DEPTH_ENV_VAR]: depth }), work)
}

/**
 * Raises the depth in `env` (a snapshot for the native side, never `process.env`) to the depth of
 * the JS backend this call comes from, if that is deeper; the native depth guard does the rest.
 */
export function withBackendDepth(env: Record<string, string>): Record<string, string> {
  const depth = backendDepth.getStore()
  if (depth !== undefined && depth > depthOf(env)) env[DEPTH_ENV_VAR] = String(depth)
  return env
}
