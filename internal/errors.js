"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.AbortError = exports.BackendError = exports.RelayError = void 0;
exports.invalidArgType = invalidArgType;
exports.describe = describe;
/** The one error type of the relay: `code` says what went wrong, `message` says it for people. */
class RelayError extends Error {
    name = 'RelayError';
    code;
    backend;
    constructor(message, code = 'ERR_BACKEND_FAILED', options = {}) {
        super(message, 'cause' in options ? { cause: options.cause } : undefined);
        this.code = code;
        if (options.backend !== undefined)
            this.backend = options.backend;
    }
}
exports.RelayError = RelayError;
/** What a backend written in JS throws to report a failure; the relay turns it into a `RelayError`. */
class BackendError extends Error {
    name = 'BackendError';
}
exports.BackendError = BackendError;
/** Node's usual cancellation error: `name` 'AbortError', `code` 'ABORT_ERR', `cause` the signal's reason. */
class AbortError extends Error {
    name = 'AbortError';
    code = 'ABORT_ERR';
    constructor(message = 'The operation was aborted', options) {
        super(message, options);
    }
}
exports.AbortError = AbortError;
/** A `TypeError` with Node's `ERR_INVALID_ARG_TYPE` code, for arguments of the wrong type. */
function invalidArgType(name, expected, actual) {
    const error = new TypeError(`The "${name}" ${name.includes('.') ? 'property' : 'argument'} must be ${expected}. Received ${describe(actual)}`);
    Object.defineProperty(error, 'code', { value: 'ERR_INVALID_ARG_TYPE', enumerable: true, writable: true, configurable: true });
    return error;
}
/** How Node's own argument errors describe a received value. */
function describe(value) {
    if (value === null)
        return 'null';
    if (value === undefined)
        return 'undefined';
    if (typeof value === 'function')
        return `function ${value.name || '<anonymous>'}`;
    if (typeof value === 'object') {
        const constructorName = value.constructor?.name;
        return constructorName ? `an instance of ${constructorName}` : 'an object';
    }
    let shown;
    if (typeof value === 'bigint')
        shown = `${value}n`;
    else if (typeof value === 'number')
        shown = Object.is(value, -0) ? '-0' : String(value);
    else
        shown = JSON.stringify(value) ?? String(value);
    if (shown.length > 28)
        shown = `${shown.slice(0, 25)}...`;
    return `type ${typeof value} (${shown})`;
}
