"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.callRecord = callRecord;
exports.keepThrown = keepThrown;
exports.callNative = callNative;
exports.fromNative = fromNative;
const native_js_1 = require("./native.js");
const errors_js_1 = require("./errors.js");
const depth_js_1 = require("./depth.js");
/** Must match `FAILURE_MARKER` in `src/binding/errors.rs`. */
const FAILURE_MARKER = '@@phone-a-friend/relay@@';
const calls = new Map();
let lastTag = 0;
function callRecord(tag) {
    return calls.get(tag);
}
/** Keeps a thrown value for the call and returns its handle. */
function keepThrown(record, value) {
    const handle = record.thrown.size + 1;
    record.thrown.set(handle, value);
    return handle;
}
function nextTag() {
    lastTag = lastTag >= 0xffff_fffe ? 1 : lastTag + 1;
    return lastTag;
}
/** A copy of `process.env`, at the depth of the JS backend making this call if there is one. */
function environment() {
    const env = {};
    for (const [key, value] of Object.entries(process.env)) {
        if (typeof value === 'string')
            env[key] = value;
    }
    return (0, depth_js_1.withBackendDepth)(env);
}
/**
 * Runs one native call: snapshots the environment and cwd on this thread, bridges the
 * AbortSignal to a native cancellation token, and turns a native failure into what the caller
 * must see.
 */
async function callNative(signal, start) {
    if (signal?.aborted)
        throw new errors_js_1.AbortError(undefined, { cause: signal.reason });
    const tag = nextTag();
    const record = { thrown: new Map(), signal };
    calls.set(tag, record);
    const cancelId = signal ? native_js_1.binding.openCancelToken(native_js_1.scope) : undefined;
    const onAbort = () => native_js_1.binding.cancel(cancelId);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
        return await start({ scope: native_js_1.scope, env: environment(), cwd: process.cwd(), callTag: tag, cancelId });
    }
    catch (error) {
        throw fromNative(error, record);
    }
    finally {
        calls.delete(tag);
        if (signal) {
            signal.removeEventListener('abort', onAbort);
            native_js_1.binding.closeCancelToken(cancelId);
        }
    }
}
/** Turns a native failure into a `RelayError`, an `AbortError` or the value a backend threw. */
function fromNative(error, record) {
    if (!(error instanceof Error) || !error.message.startsWith(FAILURE_MARKER))
        return error;
    const failure = JSON.parse(error.message.slice(FAILURE_MARKER.length));
    switch (failure.kind) {
        case 'thrown':
            return record?.thrown.get(failure.handle);
        case 'aborted':
            return new errors_js_1.AbortError(undefined, { cause: record?.signal?.reason });
        case 'relay': {
            const { message, code, backend, causeHandle } = failure;
            if (backend === undefined)
                return new errors_js_1.RelayError(message, code);
            const cause = causeHandle === undefined ? new errors_js_1.BackendError(message) : record?.thrown.get(causeHandle);
            return new errors_js_1.RelayError(message, code, { backend, cause });
        }
    }
}
