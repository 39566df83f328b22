"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.callRecord = callRecord;
exports.keepThrown = keepThrown;
exports.callNative = callNative;
exports.relayOnThisThread = relayOnThisThread;
exports.callNativeAll = callNativeAll;
exports.streamNative = streamNative;
exports.collectStream = collectStream;
exports.fromNative = fromNative;
const native_js_1 = require("./native.js");
const errors_js_1 = require("./errors.js");
const depth_js_1 = require("./depth.js");
const turns_js_1 = require("./turns.js");
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
/**
 * The environment for native code: nothing on the main thread, where `process.env` is the
 * process's environment and native code reads it far faster; elsewhere (a worker has its own
 * copy) `key=value` entries each ended by NUL. The depth of a JS backend making the call goes
 * beside it (`depth`) and is applied natively either way.
 */
function environment() {
    if ((0, native_js_1.onMainThread)())
        return undefined;
    let entries = '';
    // `process.env` answers each read through an interceptor: one `for…in` pass reads least.
    for (const key in process.env) {
        const value = process.env[key];
        if (typeof value === 'string')
            entries += `${key}=${value}\0`;
    }
    return entries;
}
/**
 * Opens a call: snapshots the environment and cwd on this thread and bridges the AbortSignal to
 * a native cancellation token (registered here, so an abort cannot race it), unless the call
 * stays on this thread (`native: false`).
 */
function openCall({ signal, refused, onWarning }, native = true) {
    if (signal?.aborted)
        throw new errors_js_1.AbortError(undefined, { cause: signal.reason });
    // Checks that need no environment, file or backend fail here, before any of that is copied.
    if (refused)
        throw refused;
    const tag = nextTag();
    const record = { thrown: new Map(), signal, onWarning };
    calls.set(tag, record);
    const bridged = native && signal !== undefined;
    const cancelId = bridged ? native_js_1.binding.openCancelToken((0, native_js_1.scope)()) : undefined;
    const onAbort = () => native_js_1.binding.cancel(cancelId);
    if (bridged)
        signal.addEventListener('abort', onAbort, { once: true });
    return {
        caller: { scope: (0, native_js_1.scope)(), env: environment(), depth: (0, depth_js_1.currentBackendDepth)(), cwd: process.cwd(), callTag: tag, cancelId },
        record,
        close() {
            calls.delete(tag);
            if (bridged) {
                signal.removeEventListener('abort', onAbort);
                native_js_1.binding.closeCancelToken(cancelId);
            }
        },
    };
}
/** Runs one native call and turns a native failure into what the caller must see. */
async function callNative(options, start) {
    const call = openCall(options);
    try {
        return await start(call.caller);
    }
    catch (error) {
        throw fromNative(error, call.record);
    }
    finally {
        call.close();
    }
}
/**
 * `relay()` to a JS backend, made without leaving this thread when its preparation waits on
 * nothing (no context file, diff, session or schema): checks and envelope in one synchronous
 * native call, then the backend's trampoline, which keeps its time and the caller's signal. The
 * asynchronous path would cross threads four times, several times what such a backend costs.
 * Else (or for a backend that is not a JS one) the call is `relay()`'s asynchronous one.
 */
async function relayOnThisThread(options, native, trampoline) {
    const wait = (0, turns_js_1.waitForTurn)();
    if (wait !== undefined)
        await wait;
    const started = startOnThisThread(options, native, trampoline);
    if (started === null)
        return callNative(options, (caller) => native_js_1.binding.relay(native, caller));
    const { call, backend, outcome } = started;
    try {
        const settled = await outcome;
        if (options.signal?.aborted)
            throw new errors_js_1.AbortError(undefined, { cause: options.signal.reason });
        // As on the other path, where the answer passes through a Rust string: lone surrogates become U+FFFD.
        if (typeof settled.output === 'string')
            return settled.output.isWellFormed() ? settled.output : settled.output.toWellFormed();
        return native_js_1.binding.settleDirect(backend, settled);
    }
    catch (error) {
        throw fromNative(error, call.record);
    }
    finally {
        call.close();
    }
}
/** The synchronous part of `relayOnThisThread`: the checks, then the backend called; `null` when the call cannot run here. */
function startOnThisThread(options, native, trampoline) {
    let call;
    try {
        call = openCall(options, false);
        const direct = native_js_1.binding.prepareDirectRelay(native, call.caller);
        if (direct === null) {
            call.close();
            return null;
        }
        return { call, backend: direct.backend, outcome: trampoline(direct.call) };
    }
    catch (error) {
        call?.close();
        throw fromNative(error, call?.record);
    }
    finally {
        (0, turns_js_1.passTurn)();
    }
}
/**
 * Runs a native `relayAll()` call: a failure of the whole call rejects; each backend's own failure
 * becomes its `RelayError`. A value a JS backend threw that is not one is wrapped in one
 * (`ERR_BACKEND_FAILED`, the value as its `cause`), so one backend's TypeError neither rejects
 * the call nor breaks the result's type.
 */
async function callNativeAll(options, start) {
    const call = openCall(options);
    try {
        const outcomes = await start(call.caller);
        return outcomes.map(({ backend, answer, failure }) => {
            if (failure === undefined || failure === null)
                return { backend, ok: true, answer: answer ?? '' };
            const error = fromNative(new Error(failure), call.record);
            if (error instanceof errors_js_1.RelayError)
                return { backend, ok: false, error };
            const message = error instanceof Error ? error.message : String(error);
            return { backend, ok: false, error: new errors_js_1.RelayError(message, 'ERR_BACKEND_FAILED', { backend, cause: error }) };
        });
    }
    catch (error) {
        throw fromNative(error, call.record);
    }
    finally {
        call.close();
    }
}
/**
 * Runs one native streaming call (docs/CONTRACT.md §10): yields its chunks as they come, returns
 * the final answer. Leaving early (`break`, `return()`, `throw()`) aborts the run and stops its
 * backend.
 */
async function* streamNative(options, start) {
    const call = openCall(options);
    let id;
    let settled = false;
    try {
        id = start(call.caller);
        for (;;) {
            const step = await native_js_1.binding.streamNext(id);
            if (typeof step.text === 'string') {
                yield step.text;
                continue;
            }
            settled = true;
            return step.answer ?? '';
        }
    }
    catch (error) {
        settled = true;
        throw fromNative(error, call.record);
    }
    finally {
        if (id !== undefined && !settled)
            native_js_1.binding.streamCancel(id);
        call.close();
    }
}
/**
 * Runs a stream for a caller's `onChunk`: each chunk is handed to it; a throw from it aborts
 * the run and rejects with what it threw.
 */
async function collectStream(stream, onChunk) {
    for (;;) {
        const step = await stream.next();
        if (step.done)
            return step.value;
        try {
            onChunk(step.value);
        }
        catch (thrown) {
            await stream.return('');
            throw thrown;
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
