"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.binding = void 0;
exports.scope = scope;
exports.onMainThread = onMainThread;
const invocations_js_1 = require("./invocations.js");
const calls_js_1 = require("./calls.js");
let loaded;
/** The addon, loaded on first use: importing the package costs no native load (a few ms). */
function load() {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (loaded ??= require('../binding.js'));
}
/** The addon's exports, each looked up (and the addon loaded) when first used. */
exports.binding = new Proxy({}, {
    get: (_, name) => load()[name],
});
let scopeId;
/**
 * This module instance's scope: its backend registry, its warning sink, and how its JS backends
 * are told to stop. Workers get their own; a scope's calls are cancelled when its thread ends.
 * Made on first use, with the addon.
 */
function scope() {
    scopeId ??= load().createScope((warning) => {
        const onWarning = (0, calls_js_1.callRecord)(warning.callTag)?.onWarning;
        if (onWarning) {
            try {
                onWarning(warning.message);
            }
            catch {
                // A caller's callback that throws must not take the relay down with it.
            }
            return;
        }
        // Looked up on each call so a test's spy on console.error sees it.
        console.error(warning.message);
    }, invocations_js_1.abortInvocation);
    return scopeId;
}
let mainThread;
/** Whether this module runs on the process's main thread, where native code reads `process.env` itself. */
function onMainThread() {
    return (mainThread ??= load().onProcessMainThread());
}
