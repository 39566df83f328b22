"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MAX_RELAY_DEPTH = exports.MAX_PROMPT_BYTES = exports.MAX_OUTPUT_BYTES = exports.MAX_DIFF_BYTES = exports.MAX_CONTEXT_FILE_BYTES = exports.DEFAULT_TIMEOUT_SECONDS = exports.DEFAULT_SANDBOX = exports.DEFAULT_BACKEND = exports.BackendError = exports.RelayError = void 0;
exports.registerBackend = registerBackend;
exports.relay = relay;
exports.relayStream = relayStream;
exports.relayAll = relayAll;
exports.reviewRelay = reviewRelay;
exports.listSessions = listSessions;
exports.deleteSession = deleteSession;
exports.pruneSessions = pruneSessions;
exports.parseVerdict = parseVerdict;
exports.detectDefaultBranch = detectDefaultBranch;
exports.gitDiffBase = gitDiffBase;
exports.checkBackends = checkBackends;
exports._resetRegistry = _resetRegistry;
let loaded;
function internals() {
    /* eslint-disable @typescript-eslint/no-require-imports */
    return (loaded ??= {
        calls: require('./internal/calls.js'),
        options: require('./internal/options.js'),
        backends: require('./internal/backends.js'),
        dryRun: require('./internal/dry-run.js'),
        native: require('./internal/native.js'),
    });
    /* eslint-enable @typescript-eslint/no-require-imports */
}
var errors_js_1 = require("./internal/errors.js");
Object.defineProperty(exports, "RelayError", { enumerable: true, get: function () { return errors_js_1.RelayError; } });
Object.defineProperty(exports, "BackendError", { enumerable: true, get: function () { return errors_js_1.BackendError; } });
const errors_js_2 = require("./internal/errors.js");
const limits_js_1 = require("./internal/limits.js");
var limits_js_2 = require("./internal/limits.js");
Object.defineProperty(exports, "DEFAULT_BACKEND", { enumerable: true, get: function () { return limits_js_2.DEFAULT_BACKEND; } });
Object.defineProperty(exports, "DEFAULT_SANDBOX", { enumerable: true, get: function () { return limits_js_2.DEFAULT_SANDBOX; } });
Object.defineProperty(exports, "DEFAULT_TIMEOUT_SECONDS", { enumerable: true, get: function () { return limits_js_2.DEFAULT_TIMEOUT_SECONDS; } });
Object.defineProperty(exports, "MAX_CONTEXT_FILE_BYTES", { enumerable: true, get: function () { return limits_js_2.MAX_CONTEXT_FILE_BYTES; } });
Object.defineProperty(exports, "MAX_DIFF_BYTES", { enumerable: true, get: function () { return limits_js_2.MAX_DIFF_BYTES; } });
Object.defineProperty(exports, "MAX_OUTPUT_BYTES", { enumerable: true, get: function () { return limits_js_2.MAX_OUTPUT_BYTES; } });
Object.defineProperty(exports, "MAX_PROMPT_BYTES", { enumerable: true, get: function () { return limits_js_2.MAX_PROMPT_BYTES; } });
Object.defineProperty(exports, "MAX_RELAY_DEPTH", { enumerable: true, get: function () { return limits_js_2.MAX_RELAY_DEPTH; } });
/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
function registerBackend(backend) {
    internals().backends.registerBackend(backend);
}
async function relay(options) {
    const parsed = internals().options.nativeRelayOptions(options);
    const { options: native, onChunk, dryRun } = parsed;
    if (dryRun)
        return internals().dryRun.toDryRun(await internals().calls.callNative(parsed, (caller) => internals().native.binding.dryRunRelay(native, caller)));
    if (onChunk)
        return internals().calls.collectStream(internals().calls.streamNative(parsed, (caller) => internals().native.binding.relayStream(native, caller)), onChunk);
    const trampoline = internals().backends.trampolineFor(native.backend ?? limits_js_1.DEFAULT_BACKEND);
    if (trampoline)
        return internals().calls.relayOnThisThread(parsed, native, trampoline);
    return internals().calls.callNative(parsed, (caller) => internals().native.binding.relay(native, caller));
}
/**
 * `relay()` as an async generator (docs/CONTRACT.md §10): the same checks in the same order (a
 * failed one rejects the first `next()`), then the answer's text as the backend produces it; its
 * return value is the final answer, exactly what `relay()` resolves with. Nothing starts before the
 * first `next()`; `break`, `return()`, `throw()` or the signal abort the run and stop the backend.
 * At most 1 MiB of unread text is held: past that the backend is not read until you catch up.
 */
async function* relayStream(options) {
    const parsed = internals().options.nativeRelayOptions(options);
    const { options: native, dryRun } = parsed;
    // A dry run has nothing to stream; `relay({ dryRun: true })` describes the call.
    if (dryRun)
        throw (0, errors_js_2.invalidArgType)('options.dryRun', 'false for relayStream() (use relay({ dryRun: true }))', true);
    return yield* internals().calls.streamNative(parsed, (caller) => internals().native.binding.relayStream(native, caller));
}
/**
 * Asks several backends at once (docs/CONTRACT.md §15): the checks, context, diff and envelope are
 * done once and shared; the backends run concurrently and each settles on its own, so the call
 * takes as long as the slowest one and one failure does not affect the others. Resolves with one
 * result per backend, in the order of `backends`: `{ backend, ok: true, answer }` or
 * `{ backend, ok: false, error }` (a `RelayError`).
 *
 * What depends on the backend fails that backend alone: a name nobody registered
 * (`ERR_UNSUPPORTED_BACKEND`), a sandbox mode it refuses (`ERR_INVALID_SANDBOX`), and whatever
 * happens when it runs. Every other check (prompt, timeout, repository, context, diff, sizes,
 * depth) rejects the whole call with the `RelayError` `relay()` would give, whatever the
 * backends. The signal aborts every backend: the call rejects with an `AbortError`.
 */
async function relayAll(options) {
    const parsed = internals().options.nativeRelayAllOptions(options);
    return internals().calls.callNativeAll(parsed, (caller) => internals().native.binding.relayAll(parsed.options, parsed.backends, caller));
}
async function reviewRelay(options) {
    const parsed = internals().options.nativeReviewOptions(options);
    const { options: native, onChunk, dryRun } = parsed;
    if (dryRun)
        return internals().dryRun.toDryRun(await internals().calls.callNative(parsed, (caller) => internals().native.binding.dryRunReview(native, caller)));
    if (onChunk)
        return internals().calls.collectStream(internals().calls.streamNative(parsed, (caller) => internals().native.binding.reviewStream(native, caller)), onChunk);
    return internals().calls.callNative(parsed, (caller) => internals().native.binding.reviewRelay(native, caller));
}
/** Every session in the store (`PHONE_A_FRIEND_HOME`, else `$XDG_CONFIG_HOME/phone-a-friend`, else `~/.config/phone-a-friend`). */
async function listSessions() {
    const sessions = await internals().calls.callNative({}, (caller) => internals().native.binding.listSessions(caller));
    return sessions.map((s) => ({ ...s, backendSessionId: s.backendSessionId ?? null }));
}
/** Removes a session from the store; whether there was one. */
async function deleteSession(label) {
    const name = internals().options.stringArgument(label, 'label');
    return internals().calls.callNative({}, (caller) => internals().native.binding.deleteSession(name, caller));
}
/** Removes the sessions last used more than `olderThanDays` days ago; their labels. */
async function pruneSessions(olderThanDays) {
    if (typeof olderThanDays !== 'number')
        throw (0, errors_js_2.invalidArgType)('olderThanDays', 'of type number', olderThanDays);
    return internals().calls.callNative({}, (caller) => internals().native.binding.pruneSessions(olderThanDays, caller));
}
/**
 * Reads a verdict envelope (the text `reviewRelay({ verdict: true })` resolves with, or any model's
 * answer, also inside a ```json fence) and checks it as upstream (the phone-a-friend v4.1.1 CLI)
 * does (docs/CONTRACT.md §13): the shape, and a verdict consistent with the findings (a blocker or
 * important finding requires `iterate`; `abstain` only with no findings). Throws a `RelayError`
 * with `ERR_SCHEMA` saying what is wrong.
 */
function parseVerdict(text) {
    const raw = internals().options.stringArgument(text, 'text');
    try {
        return JSON.parse(internals().native.binding.parseVerdict(raw));
    }
    catch (error) {
        throw internals().calls.fromNative(error);
    }
}
/**
 * The first of `main`, `master` that the repository has, else `'HEAD~1'` (also when git fails or
 * takes longer than `options.timeoutSeconds`, default 30). Synchronous: it holds the JS thread for
 * at most that long, and answers `'HEAD~1'` at once when a file git reads as it starts (`.git`,
 * `HEAD`, `config`, `commondir`, `index`, `packed-refs`) is not a regular file, such as a FIFO.
 */
function detectDefaultBranch(repoPath, options) {
    const repo = internals().options.stringArgument(repoPath, 'repoPath');
    const timeoutSeconds = internals().options.gitHelperTimeout(options);
    try {
        return internals().native.binding.detectDefaultBranch(repo, timeoutSeconds);
    }
    catch (error) {
        throw internals().calls.fromNative(error);
    }
}
/**
 * `git diff <base>...HEAD`, trimmed. Synchronous; throws a `RelayError` (`ERR_GIT_DIFF`, also when
 * git takes longer than `options.timeoutSeconds`, default 30, or at once when a file git reads as
 * it starts is not a regular file, as for `detectDefaultBranch`; `ERR_TOO_LARGE`).
 */
function gitDiffBase(repoPath, base, options) {
    const repo = internals().options.stringArgument(repoPath, 'repoPath');
    const from = internals().options.stringArgument(base, 'base');
    const timeoutSeconds = internals().options.gitHelperTimeout(options);
    try {
        return internals().native.binding.gitDiffBase(repo, from, timeoutSeconds);
    }
    catch (error) {
        throw internals().calls.fromNative(error);
    }
}
/** Whether the `codex`, `gemini`, `ollama`, `claude` and `opencode` CLIs are on this process's PATH. Synchronous. */
function checkBackends() {
    return { ...internals().native.binding.checkBackends() };
}
/** Drops every backend registered from JS and restores the five built-ins. */
function _resetRegistry() {
    internals().backends.resetRegistry();
}
