"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.currentBackendDepth = currentBackendDepth;
exports.runAtDepthOf = runAtDepthOf;
const node_async_hooks_1 = require("node:async_hooks");
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
/** Runs a JS backend's `run()`/`review()` at the depth its relay gave it (its `PHONE_A_FRIEND_DEPTH`, `^\d+$` else 0, as docs/CONTRACT.md §3 step 8 reads it). */
function runAtDepthOf(depth, work) {
    return backendDepth.run(/^\d+$/.test(depth) ? Number(depth) : 0, work);
}
