"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.currentBackendDepth = currentBackendDepth;
exports.runAtDepthOf = runAtDepthOf;
exports.withBackendDepth = withBackendDepth;
const node_async_hooks_1 = require("node:async_hooks");
/** Must match `DEPTH_ENV_VAR` in `src/limits.rs`. */
const DEPTH_ENV_VAR = 'PHONE_A_FRIEND_DEPTH';
/**
 * The relay depth of the JS backend code running now. A JS backend runs in this process, where the
 * depth its relay gave it (in its `env`) never reaches `process.env`; this carries it instead, through
 * timers and promise chains, to any relay the backend starts.
 */
const backendDepth = new node_async_hooks_1.AsyncLocalStorage();
/** The depth of the JS backend whose code is running now, if any. */
function currentBackendDepth() {
    return backendDepth.getStore();
}
/** The depth an environment records (SPEC 3 step 8): `^\d+$`, else 0. */
function depthOf(env) {
    const value = env[DEPTH_ENV_VAR];
    return value !== undefined && /^\d+$/.test(value) ? Number(value) : 0;
}
/** Runs a JS backend's `run()`/`review()` at the depth its relay gave it (its `PHONE_A_FRIEND_DEPTH`). */
function runAtDepthOf(depth, work) {
    return backendDepth.run(depthOf({ [DEPTH_ENV_VAR]: depth }), work);
}
/**
 * Raises the depth in `env` (a snapshot for the native side, never `process.env`) to the depth of
 * the JS backend this call comes from, if that is deeper; the native depth guard does the rest.
 */
function withBackendDepth(env) {
    const depth = backendDepth.getStore();
    if (depth !== undefined && depth > depthOf(env))
        env[DEPTH_ENV_VAR] = String(depth);
    return env;
}
