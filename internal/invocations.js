"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.openInvocation = openInvocation;
exports.closeInvocation = closeInvocation;
exports.abortInvocation = abortInvocation;
const errors_js_1 = require("./errors.js");
const invocations = new Map();
/** Opens invocation `id` and returns the signal its backend receives. */
function openInvocation(id, backend, callerSignal) {
    const controller = new AbortController();
    invocations.set(id, { controller, backend, callerSignal });
    return controller.signal;
}
/** Forgets a settled invocation: an abort that comes later has nobody left to tell. */
function closeInvocation(id) {
    invocations.delete(id);
}
/** Called by the native side when the relay gives up on an invocation (timeout or cancellation). */
function abortInvocation(abort) {
    const invocation = invocations.get(abort.invocation);
    if (invocation === undefined)
        return;
    invocations.delete(abort.invocation);
    invocation.controller.abort(reasonFor(abort, invocation));
}
function reasonFor(abort, { backend, callerSignal }) {
    if (abort.reason === 'timeout') {
        const message = abort.message ?? `${backend} timed out`;
        // The error the relay itself reports for a backend that does not settle in time.
        return new errors_js_1.RelayError(message, 'ERR_BACKEND_TIMEOUT', { backend, cause: new errors_js_1.BackendError(message) });
    }
    if (callerSignal?.aborted)
        return callerSignal.reason;
    return new errors_js_1.AbortError();
}
