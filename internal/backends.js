"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.trampolineFor = trampolineFor;
exports.registerBackend = registerBackend;
exports.resetRegistry = resetRegistry;
const native_js_1 = require("./native.js");
const calls_js_1 = require("./calls.js");
const depth_js_1 = require("./depth.js");
const errors_js_1 = require("./errors.js");
const invocations_js_1 = require("./invocations.js");
/** `key=value` entries each ended by NUL, as an object. */
function parseEnv(entries) {
    const env = {};
    for (const entry of entries.split('\0')) {
        const equals = entry.indexOf('=');
        if (equals > 0)
            env[entry.slice(0, equals)] = entry.slice(equals + 1);
    }
    return env;
}
/** The session fields of `run()`'s options, for a call in a session. */
function sessionOptions(options, call, reported) {
    if (!call.inSession)
        return;
    options.sessionId = call.sessionId ?? null;
    options.resumeSession = typeof call.sessionId === 'string';
    if (typeof call.sessionHistory === 'string')
        options.sessionHistory = JSON.parse(call.sessionHistory);
    options.onSessionCreated = (id) => {
        if (typeof id !== 'string')
            throw (0, errors_js_1.invalidArgType)('sessionId', 'of type string', id);
        reported.sessionId = id;
    };
}
function optionsFor(call, signal, reported) {
    let env;
    // Built in place, not spread: a spread would read the lazy `env` at once.
    const options = {};
    if (call.method === 'run') {
        options.prompt = call.prompt ?? '';
        options.schema = call.schema ?? null;
        sessionOptions(options, call, reported);
    }
    options.repoPath = call.repoPath;
    options.timeoutSeconds = call.timeoutSeconds;
    options.sandbox = call.sandbox;
    options.model = call.model ?? null;
    Object.defineProperty(options, 'env', {
        // Made into an object on first read: most backends never read it.
        get: () => (env ??= parseEnv(call.env)),
        set: (value) => {
            env = value;
        },
        enumerable: true,
        configurable: true,
    });
    options.signal = signal;
    if (call.method !== 'run') {
        options.base = call.base ?? '';
        if (call.reviewPrompt !== undefined && call.reviewPrompt !== null)
            options.prompt = call.reviewPrompt;
    }
    return options;
}
const UNINSPECTABLE = 'a value that cannot be inspected';
/** A message for any value; never throws (throwing getters, Proxy traps, revoked Proxies). */
function messageOf(value) {
    try {
        return value instanceof Error ? String(value.message) : String(value);
    }
    catch {
        try {
            return Object.prototype.toString.call(value);
        }
        catch {
            return UNINSPECTABLE;
        }
    }
}
/**
 * What a thrown value is. Every inspection may throw, and a value that cannot be inspected is
 * none of our errors: it goes back to the caller unchanged, like any other foreign value.
 */
function classify(thrown) {
    try {
        if (thrown instanceof errors_js_1.BackendError)
            return { failure: 'backend', message: String(thrown.message) };
        if (thrown instanceof errors_js_1.RelayError)
            return { failure: 'relay', message: String(thrown.message) };
    }
    catch {
        // Not inspectable: passed through below.
    }
    return { failure: 'thrown', message: messageOf(thrown) };
}
function invalidOutput(name, method, output) {
    let shown;
    try {
        shown = (0, errors_js_1.describe)(output);
    }
    catch {
        shown = UNINSPECTABLE;
    }
    return { failure: 'invalid', message: `Backend ${name} ${method}() resolved with ${shown}; expected a string` };
}
/**
 * Runs `runStream`, handing each chunk to the relay as it comes; resolves with the chunks joined.
 * Once the relay has given up on the call (`signal`), its text is nobody's: the iterator is stopped.
 */
async function streamed(chunks, invocation, signal) {
    const parts = [];
    for await (const chunk of chunks) {
        if (typeof chunk !== 'string')
            return chunk; // reported as an invalid answer
        if (signal.aborted)
            break;
        parts.push(chunk);
        await native_js_1.binding.pushChunk(invocation, chunk);
    }
    return parts.join('');
}
/** Calls the user's backend; always resolves, never throws, so nothing escapes into Node as uncaught. */
async function invoke(backend, name, call) {
    const startedAt = performance.now();
    const record = (0, calls_js_1.callRecord)(call.callTag);
    // Opened before the first await: the native side aborts it only once this function has returned.
    const signal = (0, invocations_js_1.openInvocation)(call.invocation, name, record?.signal);
    const reported = {};
    try {
        const options = optionsFor(call, signal, reported);
        // Relays the backend starts (through timers and promise chains too) see its depth.
        const running = (0, depth_js_1.runAtDepthOf)(call.depth, () => {
            if (call.method !== 'run')
                return backend.review?.(options);
            if (call.stream && typeof backend.runStream === 'function')
                return streamed(backend.runStream(options), call.invocation, signal);
            return backend.run(options);
        });
        const output = await (0, invocations_js_1.withinTime)(call, startedAt, record?.signal, Promise.resolve(running));
        if (output === invocations_js_1.TIMED_OUT)
            return { failure: 'timeout', message: call.timeoutMessage };
        if (output === invocations_js_1.ABORTED)
            return { failure: 'aborted' };
        if (typeof output === 'string')
            return { output, sessionId: reported.sessionId };
        return invalidOutput(name, call.method, output);
    }
    catch (thrown) {
        return { ...classify(thrown), handle: record && (0, calls_js_1.keepThrown)(record, thrown) };
    }
    finally {
        (0, invocations_js_1.closeInvocation)(call.invocation);
    }
}
const RESUME_STRATEGIES = ['native-session', 'transcript-replay', 'unsupported'];
function resumeStrategyOf(backend) {
    const { capabilities } = backend;
    if (capabilities === undefined || capabilities === null)
        return 'unsupported';
    if (typeof capabilities !== 'object')
        throw (0, errors_js_1.invalidArgType)('backend.capabilities', 'of type object', capabilities);
    const strategy = capabilities.resumeStrategy ?? 'unsupported';
    if (!RESUME_STRATEGIES.includes(strategy))
        throw (0, errors_js_1.invalidArgType)('backend.capabilities.resumeStrategy', `one of ${RESUME_STRATEGIES.join(', ')}`, strategy);
    return strategy;
}
/** The trampolines of the backends registered from this module, by name, for relays made on this thread. */
const trampolines = new Map();
/** The trampoline of the JS backend registered as `name`, if it is one. */
function trampolineFor(name) {
    return trampolines.get(name);
}
/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
function registerBackend(backend) {
    if (typeof backend !== 'object' || backend === null)
        throw (0, errors_js_1.invalidArgType)('backend', 'of type object', backend);
    const { name, allowedSandboxes, run, review, runStream } = backend;
    if (typeof name !== 'string' || name === '')
        throw (0, errors_js_1.invalidArgType)('backend.name', 'a non-empty string', name);
    if (typeof run !== 'function')
        throw (0, errors_js_1.invalidArgType)('backend.run', 'of type function', run);
    if (review !== undefined && typeof review !== 'function')
        throw (0, errors_js_1.invalidArgType)('backend.review', 'of type function', review);
    if (runStream !== undefined && typeof runStream !== 'function')
        throw (0, errors_js_1.invalidArgType)('backend.runStream', 'of type function', runStream);
    const iterable = allowedSandboxes;
    if (typeof iterable === 'string' || typeof iterable?.[Symbol.iterator] !== 'function') {
        throw (0, errors_js_1.invalidArgType)('backend.allowedSandboxes', 'an iterable of strings', allowedSandboxes);
    }
    const modes = [...new Set(iterable)];
    const notAString = modes.find((mode) => typeof mode !== 'string');
    if (notAString !== undefined)
        throw (0, errors_js_1.invalidArgType)('backend.allowedSandboxes', 'an iterable of strings', notAString);
    const trampoline = (call) => invoke(backend, name, call);
    native_js_1.binding.registerJsBackend((0, native_js_1.scope)(), name, modes, typeof review === 'function', resumeStrategyOf(backend), trampoline);
    trampolines.set(name, trampoline);
}
/** Drops every backend registered from JS and restores the five built-ins. */
function resetRegistry() {
    native_js_1.binding.resetRegistry((0, native_js_1.scope)());
    trampolines.clear();
}
