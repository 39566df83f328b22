"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.signalOf = signalOf;
exports.onChunkOf = onChunkOf;
exports.nativeRelayOptions = nativeRelayOptions;
exports.nativeReviewOptions = nativeReviewOptions;
exports.nativeRelayAllOptions = nativeRelayAllOptions;
exports.gitHelperTimeout = gitHelperTimeout;
exports.stringArgument = stringArgument;
const errors_js_1 = require("./errors.js");
function objectArgument(value, name) {
    if (typeof value !== 'object' || value === null)
        throw (0, errors_js_1.invalidArgType)(name, 'of type object', value);
    return value;
}
function requiredString(options, key) {
    const value = options[key];
    if (typeof value !== 'string')
        throw (0, errors_js_1.invalidArgType)(`options.${key}`, 'of type string', value);
    return value;
}
/** A string, or `undefined` for an absent (`undefined` or `null`) option. */
function optionalString(options, key) {
    const value = options[key];
    if (value === undefined || value === null)
        return undefined;
    if (typeof value !== 'string')
        throw (0, errors_js_1.invalidArgType)(`options.${key}`, 'of type string', value);
    return value;
}
function optionalBoolean(options, key) {
    const value = options[key];
    if (value === undefined || value === null)
        return undefined;
    if (typeof value !== 'boolean')
        throw (0, errors_js_1.invalidArgType)(`options.${key}`, 'of type boolean', value);
    return value;
}
/** Any value that is not a number is not a finite number > 0: the core reports ERR_INVALID_TIMEOUT in its turn. */
function timeout(options) {
    const value = options.timeoutSeconds;
    if (value === undefined || value === null)
        return undefined;
    return typeof value === 'number' ? value : Number.NaN;
}
function signalOf(options) {
    const value = options.signal;
    if (value === undefined || value === null)
        return undefined;
    if (!(value instanceof AbortSignal))
        throw (0, errors_js_1.invalidArgType)('options.signal', 'an instance of AbortSignal', value);
    return value;
}
/** `onChunk`, when one is given. */
function onChunkOf(options) {
    return callbackOf(options, 'onChunk');
}
function callbackOf(options, key) {
    const value = options[key];
    if (value === undefined || value === null)
        return undefined;
    if (typeof value !== 'function')
        throw (0, errors_js_1.invalidArgType)(`options.${key}`, 'of type function', value);
    return value;
}
/** A schema's JSON text: a string as given (the core parses it), an object as `JSON.stringify` writes it. */
function schemaText(options) {
    const value = options.schema;
    if (value === undefined || value === null)
        return undefined;
    if (typeof value === 'string')
        return value;
    if (typeof value !== 'object')
        throw (0, errors_js_1.invalidArgType)('options.schema', 'of type string or object', value);
    let text;
    try {
        text = JSON.stringify(value);
    }
    catch (cause) {
        // A BigInt, a cycle, a throwing toJSON(): as unusable as a schema that stringifies to nothing.
        throw Object.assign((0, errors_js_1.invalidArgType)('options.schema', 'JSON-serialisable', value), { cause });
    }
    if (text === undefined)
        throw (0, errors_js_1.invalidArgType)('options.schema', 'JSON-serialisable', value);
    return text;
}
/** Check 1 (a prompt blank after JavaScript's trim) and check 2 (a timeout that is not a finite number > 0). */
function refusedEarly(prompt, timeoutSeconds) {
    if (prompt !== undefined && prompt.trim() === '')
        return new errors_js_1.RelayError('Prompt is required', 'ERR_PROMPT_REQUIRED');
    if (timeoutSeconds !== undefined && !(Number.isFinite(timeoutSeconds) && timeoutSeconds > 0)) {
        return new errors_js_1.RelayError('Timeout must be greater than zero', 'ERR_INVALID_TIMEOUT');
    }
    return undefined;
}
function nativeRelayOptions(input) {
    const fields = objectArgument(input, 'options');
    const options = {
        // A missing prompt is an empty one: ERR_PROMPT_REQUIRED, as the original reported it.
        prompt: fields.prompt === undefined || fields.prompt === null ? '' : requiredString(fields, 'prompt'),
        repoPath: requiredString(fields, 'repoPath'),
        backend: optionalString(fields, 'backend'),
        contextFile: optionalString(fields, 'contextFile'),
        contextText: optionalString(fields, 'contextText'),
        includeDiff: optionalBoolean(fields, 'includeDiff'),
        timeoutSeconds: timeout(fields),
        model: optionalString(fields, 'model'),
        sandbox: optionalString(fields, 'sandbox'),
        schema: schemaText(fields),
        session: optionalString(fields, 'session'),
        backendSession: optionalString(fields, 'backendSession'),
    };
    return { options, signal: signalOf(fields), onChunk: onChunkOf(fields), onWarning: callbackOf(fields, 'onWarning'), dryRun: optionalBoolean(fields, 'dryRun') ?? false, refused: refusedEarly(options.prompt, options.timeoutSeconds ?? undefined) };
}
function nativeReviewOptions(input) {
    const fields = objectArgument(input, 'options');
    const options = {
        repoPath: requiredString(fields, 'repoPath'),
        backend: optionalString(fields, 'backend'),
        base: optionalString(fields, 'base'),
        prompt: optionalString(fields, 'prompt'),
        timeoutSeconds: timeout(fields),
        model: optionalString(fields, 'model'),
        sandbox: optionalString(fields, 'sandbox'),
        schema: schemaText(fields),
        verdict: optionalBoolean(fields, 'verdict'),
    };
    return { options, signal: signalOf(fields), onChunk: onChunkOf(fields), onWarning: callbackOf(fields, 'onWarning'), dryRun: optionalBoolean(fields, 'dryRun') ?? false, refused: refusedEarly(undefined, options.timeoutSeconds ?? undefined) };
}
function nativeRelayAllOptions(input) {
    const fields = objectArgument(input, 'options');
    const given = fields.backends;
    // Array.from: a hole (`[, 'ok']`) is an undefined name, which every() would skip.
    const backends = Array.isArray(given) ? Array.from(given) : [];
    if (backends.length === 0 || !backends.every((name) => typeof name === 'string')) {
        throw (0, errors_js_1.invalidArgType)('options.backends', 'a non-empty array of strings', given);
    }
    // Options that mean something else here are refused rather than silently ignored.
    if (fields.backend !== undefined && fields.backend !== null)
        throw (0, errors_js_1.invalidArgType)('options.backend', 'undefined for relayAll() (name them in backends)', fields.backend);
    if (fields.onChunk !== undefined && fields.onChunk !== null)
        throw (0, errors_js_1.invalidArgType)('options.onChunk', 'undefined for relayAll()', fields.onChunk);
    if (fields.dryRun !== undefined && fields.dryRun !== null && fields.dryRun !== false)
        throw (0, errors_js_1.invalidArgType)('options.dryRun', 'false for relayAll()', fields.dryRun);
    return { ...nativeRelayOptions(fields), backends: backends };
}
/** The `timeoutSeconds` of a git helper's optional options (the core checks its value). */
function gitHelperTimeout(input) {
    if (input === undefined || input === null)
        return undefined;
    return timeout(objectArgument(input, 'options'));
}
function stringArgument(value, name) {
    if (typeof value !== 'string')
        throw (0, errors_js_1.invalidArgType)(name, 'of type string', value);
    return value;
}
