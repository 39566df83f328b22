import type { RelayErrorCode as NativeRelayErrorCode, RelayErrorReason as NativeRelayErrorReason } from '../../binding.js'

/**
 * Every code a `RelayError` can carry (docs/CONTRACT.md §7): the core's one list, which napi
 * renders in binding.d.ts, and the wrapper's own code for an addon that is not installed.
 */
export type RelayErrorCode = NativeRelayErrorCode | 'ERR_NATIVE_BINDING_MISSING'

export interface RelayErrorOptions {
  /** The backend that failed, for errors a backend reported. */
  backend?: string
  /** The original error (for a JS backend: the `BackendError` it threw). */
  cause?: unknown
  /** What a CLI backend said last, at most 2 KiB (see `RelayError.backendOutput`). */
  backendOutput?: string
  /** The answer that did not match its schema (see `RelayError.answer`). */
  answer?: string
  /** Why the backend failed (see `RelayError.reason`). */
  reason?: RelayErrorReason
  /** Seconds the backend said to wait before asking again (see `RelayError.retryAfterSeconds`). */
  retryAfterSeconds?: number
  /** What the backend had answered when it was stopped (see `RelayError.partialAnswer`). */
  partialAnswer?: string
  /** What to do about it (see `RelayError.hint`). */
  hint?: string
}

/**
 * Why a backend failed (docs/ERRORS.md, "Why: `reason`"): read from the kind of failure and the
 * backend's own words (a CLI's error events or stderr, Ollama's HTTP status). The core's one
 * list, as napi renders it in binding.d.ts.
 */
export type RelayErrorReason = NativeRelayErrorReason

/** The one error type of the relay: `code` says what went wrong, `message` says it for people. */
export class RelayError extends Error {
  override readonly name = 'RelayError' as const
  readonly code: RelayErrorCode
  readonly backend?: string
  /**
   * The end (at most 2 KiB) of what a CLI backend said last before it failed or was stopped:
   * its error events (codex's `Reconnecting... 2/5 (…)`), else its stderr. Absent when it said
   * nothing, and for other backends. The message carries it too.
   */
  readonly backendOutput?: string
  /**
   * For `ERR_SCHEMA` of an answer (a `schema` or `verdict` call whose answer is not the JSON
   * asked for): the backend's whole answer, to read, repair or ask again with. Absent otherwise.
   */
  readonly answer?: string
  /** Why the backend failed, for every failure a backend reported (docs/ERRORS.md, "Why: `reason`"). */
  readonly reason?: RelayErrorReason
  /** Seconds the backend (a CLI's words, a server's `Retry-After`) said to wait before asking again, when it said. */
  readonly retryAfterSeconds?: number
  /**
   * What the backend had answered when the relay stopped it (its time ran out, or it stalled),
   * when it had begun. Absent otherwise.
   */
  readonly partialAnswer?: string
  /**
   * What to do about it, beside a message the original relay fixed (docs/ERRORS.md, "`hint`"):
   * the name most likely meant (`Did you mean gemini?`), how to get under a size limit. Absent
   * when there is nothing to add.
   */
  readonly hint?: string

  constructor(message: string, code: RelayErrorCode = 'ERR_BACKEND_FAILED', options: RelayErrorOptions = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined)
    this.code = code
    if (options.backend !== undefined) this.backend = options.backend
    if (options.backendOutput !== undefined) this.backendOutput = options.backendOutput
    if (options.answer !== undefined) this.answer = options.answer
    if (options.reason !== undefined) this.reason = options.reason
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds
    if (options.partialAnswer !== undefined) this.partialAnswer = options.partialAnswer
    if (options.hint !== undefined) this.hint = options.hint
  }
}

/** What a backend written in JS throws to report a failure; the relay turns it into a `RelayError`. */
export class BackendError extends Error {
  override readonly name: string = 'BackendError'
}

/** Node's usual cancellation error: `name` 'AbortError', `code` 'ABORT_ERR', `cause` the signal's reason. */
export class AbortError extends Error {
  override readonly name = 'AbortError' as const
  readonly code = 'ABORT_ERR' as const

  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options)
  }
}

/** A `TypeError` with Node's `ERR_INVALID_ARG_TYPE` code, for arguments of the wrong type. */
export function invalidArgType(name: string, expected: string, actual: unknown): TypeError {
  const error = new TypeError(`The "${name}" ${name.includes('.') ? 'property' : 'argument'} must be ${expected}. Received ${describe(actual)}`)
  Object.defineProperty(error, 'code', { value: 'ERR_INVALID_ARG_TYPE', enumerable: true, writable: true, configurable: true })
  return error
}

/** A `RangeError` with Node's `ERR_OUT_OF_RANGE` code, for a number outside what an argument takes. */
export function outOfRange(name: string, range: string, actual: number): RangeError {
  const error = new RangeError(`The value of "${name}" is out of range. It must be ${range}. Received ${String(actual)}`)
  Object.defineProperty(error, 'code', { value: 'ERR_OUT_OF_RANGE', enumerable: true, writable: true, configurable: true })
  return error
}

/** How Node's own argument errors describe a received value. */
export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return `function ${value.name || '<anonymous>'}`
  if (typeof value === 'object') {
    const constructorName = (value as { constructor?: { name?: string } }).constructor?.name
    return constructorName ? `an instance of ${constructorName}` : 'an object'
  }
  let shown: string
  if (typeof value === 'bigint') shown = `${value}n`
  else if (typeof value === 'number') shown = Object.is(value, -0) ? '-0' : String(value)
  else shown = JSON.stringify(value) ?? String(value)
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`
  return `type ${typeof value} (${shown})`
}
