"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ABORTED = exports.TIMED_OUT = void 0;
exports.openInvocation = openInvocation;
exports.closeInvocation = closeInvocation;
exports.abortInvocation = abortInvocation;
exports.withinTime = withinTime;
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
/** How an invocation ended when its backend did not settle first. */
exports.TIMED_OUT = Symbol('timed out');
exports.ABORTED = Symbol('aborted');
/** Node's longest timer; a longer wait is made of several. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;
/**
 * Settles as `work` does, unless the invocation's time runs out or its caller aborts first. When
 * the time the relay's deadline left it is over, the backend's signal aborts with the timeout
 * error and the backend has `graceMs` more to settle (what it throws in answer to the abort wins);
 * then it is given up. An answer that comes once the time is over is too late, whatever it says
 * (a backend may resolve with whatever it had when its signal aborted): the invocation timed out.
 * The caller's signal gives it up at once. The timers do not keep Node running. `startedAt`:
 * `performance.now()` when the backend was called (its time counts from then).
 */
function withinTime(call, startedAt, callerSignal, work) {
    const { invocation } = call;
    // The clock too, not only the timer: a backend that kept the thread busy past its time
    // settles before the timer can fire.
    const endsAt = startedAt + call.timeLeftMs;
    let late = false;
    return new Promise((resolve, reject) => {
        let timer;
        const after = (ms, then) => {
            timer = ms > LONGEST_TIMER_MS ? setTimeout(() => after(ms - LONGEST_TIMER_MS, then), LONGEST_TIMER_MS) : setTimeout(then, ms);
            timer.unref();
        };
        const end = () => {
            clearTimeout(timer);
            callerSignal?.removeEventListener('abort', onAbort);
        };
        const onAbort = () => {
            end();
            abortInvocation({ invocation, reason: 'cancelled' });
            resolve(exports.ABORTED);
        };
        after(Math.max(0, endsAt - performance.now()), () => {
            late = true;
            abortInvocation({ invocation, reason: 'timeout', message: call.timeoutMessage });
            after(call.graceMs, () => {
                end();
                resolve(exports.TIMED_OUT);
            });
        });
        if (callerSignal?.aborted)
            onAbort();
        else
            callerSignal?.addEventListener('abort', onAbort, { once: true });
        work.then((value) => {
            end();
            resolve(late || performance.now() >= endsAt ? exports.TIMED_OUT : value);
        }, (error) => {
            end();
            reject(error);
        });
    });
}
