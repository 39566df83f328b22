"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.registerBackend = registerBackend;
exports.resetRegistry = resetRegistry;
const native_js_1 = require("./native.js");
const calls_js_1 = require("./calls.js");
const errors_js_1 = require("./errors.js");
function optionsFor(call, signal) {
    const common = {
        repoPath: call.repoPath,
        timeoutSeconds: call.timeoutSeconds,
        sandbox: call.sandbox,
        model: call.model ?? null,
        env: call.env,
        ...(signal && { signal }),
    };
    if (call.method === 'run')
        return { prompt: call.prompt ?? '', ...common };
    return { ...common, base: call.base ?? '', ...(call.reviewPrompt !== undefined && call.reviewPrompt !== null && { prompt: call.reviewPrompt }) };
}
function messageOf(value) {
    if (value instanceof Error)
        return value.message;
    try {
        return String(value);
    }
    catch {
        return Object.prototype.toString.call(value);
    }
}
/** Calls the user's backend; always resolves, never throws, so nothing escapes into Node as uncaught. */
async function invoke(backend, call) {
    const record = (0, calls_js_1.callRecord)(call.callTag);
    try {
        const options = optionsFor(call, record?.signal);
        const output = call.method === 'run'
            ? await backend.run(options)
            : await backend.review?.(options);
        if (typeof output === 'string')
            return { output };
        return { failure: 'invalid', message: `Backend ${backend.name} ${call.method}() resolved with ${(0, errors_js_1.describe)(output)}; expected a string` };
    }
    catch (thrown) {
        const failure = thrown instanceof errors_js_1.BackendError ? 'backend' : thrown instanceof errors_js_1.RelayError ? 'relay' : 'thrown';
        return { failure, message: messageOf(thrown), handle: record && (0, calls_js_1.keepThrown)(record, thrown) };
    }
}
/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
function registerBackend(backend) {
    if (typeof backend !== 'object' || backend === null)
        throw (0, errors_js_1.invalidArgType)('backend', 'of type object', backend);
    const { name, allowedSandboxes, run, review } = backend;
    if (typeof name !== 'string' || name === '')
        throw (0, errors_js_1.invalidArgType)('backend.name', 'a non-empty string', name);
    if (typeof run !== 'function')
        throw (0, errors_js_1.invalidArgType)('backend.run', 'of type function', run);
    if (review !== undefined && typeof review !== 'function')
        throw (0, errors_js_1.invalidArgType)('backend.review', 'of type function', review);
    const iterable = allowedSandboxes;
    if (typeof iterable === 'string' || typeof iterable?.[Symbol.iterator] !== 'function') {
        throw (0, errors_js_1.invalidArgType)('backend.allowedSandboxes', 'an iterable of strings', allowedSandboxes);
    }
    const modes = [...new Set(iterable)];
    const notAString = modes.find((mode) => typeof mode !== 'string');
    if (notAString !== undefined)
        throw (0, errors_js_1.invalidArgType)('backend.allowedSandboxes', 'an iterable of strings', notAString);
    native_js_1.binding.registerJsBackend(native_js_1.scope, name, modes, typeof review === 'function', (call) => invoke(backend, call));
}
/** Drops every backend registered from JS and restores the three built-ins. */
function resetRegistry() {
    native_js_1.binding.resetRegistry(native_js_1.scope);
}
