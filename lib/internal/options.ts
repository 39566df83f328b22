import type { RelayRequest } from '../../binding.js'
import { invalidArgType, outOfRange } from './errors.js'
import type { RelayProgress } from './call-records.js'

/** How much a backend may touch. Built-in backends accept all three. */
export type SandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access'

/**
 * Options as napi describes them (`binding.d.ts`, generated from the one Rust request type,
 * crates/core/src/relay/request.rs, where each option is documented once), any of them absent as
 * `undefined` or `null`.
 */
type Absent<T> = { [K in keyof T]?: T[K] | null }

/** The options only `relay()` takes (`RelayRequest::RELAY_ONLY`: typings.spec.ts holds the two together). */
type RelayOnly = 'contextFile' | 'contextText' | 'includeDiff' | 'fallback' | 'session' | 'backendSession'
/** The options only `reviewRelay()` takes (`RelayRequest::REVIEW_ONLY`). */
type ReviewOnly = 'base' | 'verdict'

/** What the JS API types itself: literal unions and objects napi cannot say. */
type TypedHere = 'sandbox' | 'schema'

/** What napi cannot say of the options: literal unions, objects, callbacks, the signal. */
interface CallbackOptions {
  /**
   * What the backend may change in the repository.
   * @default 'read-only'
   */
  sandbox?: SandboxMode | null
  /** Receives the call's warnings instead of `console.error`. */
  onWarning?: ((message: string) => void) | null
  /**
   * Hears what the backend is doing while the call waits: each change of phase (thinking, a tool,
   * writing) and, between changes, the same status every second with its elapsed time. A throw
   * from it is ignored.
   */
  onProgress?: ((progress: RelayProgress) => void) | null
}

export interface RelayOptions extends Required<Pick<RelayRequest, 'prompt'>>, Pick<RelayRequest, 'repoPath'>, Omit<Absent<RelayRequest>, 'prompt' | 'repoPath' | TypedHere | ReviewOnly>, CallbackOptions {
  /** Cancels the relay: the promise rejects with an `AbortError` and the backend is killed. */
  signal?: AbortSignal
  /**
   * Receives the answer's text as the backend produces it (the chunks `relayStream()` yields);
   * the promise still resolves with the whole answer. If it throws, the relay is aborted and
   * rejects with what it threw.
   */
  onChunk?: ((text: string) => void) | null
  /**
   * A JSON Schema (an object, or its JSON text) the answer must match (docs/CONTRACT.md §13): asked
   * of the backend (at the end of the prompt, and through its native structured output where it has
   * one), then checked; a mismatch rejects with `ERR_SCHEMA` naming the first violation's path. The
   * answer stays a string: the JSON text.
   */
  schema?: string | object | null
  /** `true` makes the call a dry run: see `DryRunRelayOptions`. */
  dryRun?: false | null
}

/**
 * `relay()` options for a dry run: every check runs and the context, diff and envelope are built
 * as usual (same errors), then the call resolves with a `DryRun` describing what would be sent
 * and run, instead of running it: nothing is spawned and no request is made.
 */
export type DryRunRelayOptions = Omit<RelayOptions, 'dryRun'> & { dryRun: true }

/** `relay()` options whose `dryRun` is only known at run time: the call resolves with a string or a `DryRun`. */
export type MaybeDryRunRelayOptions = Omit<RelayOptions, 'dryRun'> & { dryRun?: boolean | null }

export interface ReviewRelayOptions extends Pick<RelayRequest, 'repoPath'>, Omit<Absent<RelayRequest>, 'repoPath' | TypedHere | RelayOnly>, CallbackOptions {
  /** Cancels the review: the promise rejects with an `AbortError` and the backend is killed. */
  signal?: AbortSignal
  /** Receives the answer's text as it is produced, as `RelayOptions.onChunk` does. */
  onChunk?: ((text: string) => void) | null
  /** As `RelayOptions.schema`; a review with a schema takes the generic path (diff in the prompt). */
  schema?: string | object | null
  /** `true` makes the review a dry run: see `DryRunReviewOptions`. */
  dryRun?: false | null
}

/** `reviewRelay()` options for a dry run, as `DryRunRelayOptions`. */
export type DryRunReviewOptions = Omit<ReviewRelayOptions, 'dryRun'> & { dryRun: true }

/** `reviewRelay()` options whose `dryRun` is only known at run time, as `MaybeDryRunRelayOptions`. */
export type MaybeDryRunReviewOptions = Omit<ReviewRelayOptions, 'dryRun'> & { dryRun?: boolean | null }

type Fields = Record<string, unknown>

function objectArgument(value: unknown, name: string): Fields {
  if (typeof value !== 'object' || value === null) throw invalidArgType(name, 'of type object', value)
  return value as Fields
}

function requiredString(options: Fields, key: string): string {
  const value = options[key]
  if (typeof value !== 'string') throw invalidArgType(`options.${key}`, 'of type string', value)
  return value
}

/** A string, or `undefined` for an absent (`undefined` or `null`) option. */
function optionalString(options: Fields, key: string): string | undefined {
  const value = options[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalidArgType(`options.${key}`, 'of type string', value)
  return value
}

/** An array of strings, or `undefined` for an absent option. */
function optionalStrings(options: Fields, key: string): string[] | undefined {
  const value = options[key]
  if (value === undefined || value === null) return undefined
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw invalidArgType(`options.${key}`, 'an array of strings', value)
  return [...(value as string[])]
}

function optionalBoolean(options: Fields, key: string): boolean | undefined {
  const value = options[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'boolean') throw invalidArgType(`options.${key}`, 'of type boolean', value)
  return value
}

/** A number of seconds, or NaN for what is not a number: not a finite number > 0, which the core reports (ERR_INVALID_TIMEOUT) in its turn. */
function seconds(options: Fields, key: string): number | undefined {
  const value = options[key]
  if (value === undefined || value === null) return undefined
  return typeof value === 'number' ? value : Number.NaN
}

/** The largest count the addon takes (a u32); the core's limits are far below it. */
const MAX_U32 = 0xffff_ffff

/** A count of bytes: a whole number from 0 up; past the core's limit it means the limit. */
function byteCount(options: Fields, key: string): number | undefined {
  const value = options[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number') throw invalidArgType(`options.${key}`, 'of type number', value)
  if (!Number.isInteger(value) || value < 0) throw outOfRange(`options.${key}`, 'an integer >= 0', value)
  return Math.min(value, MAX_U32)
}

export function signalOf(options: Fields): AbortSignal | undefined {
  const value = options.signal
  if (value === undefined || value === null) return undefined
  if (!(value instanceof AbortSignal)) throw invalidArgType('options.signal', 'an instance of AbortSignal', value)
  return value
}

/** `onChunk`, when one is given. */
export function onChunkOf(options: Fields): ((text: string) => void) | undefined {
  return callbackOf(options, 'onChunk')
}

function callbackOf<T = string>(options: Fields, key: string): ((value: T) => void) | undefined {
  const value = options[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'function') throw invalidArgType(`options.${key}`, 'of type function', value)
  return value as (value: T) => void
}

export interface Parsed {
  options: RelayRequest
  signal?: AbortSignal
  onWarning?: (message: string) => void
  onProgress?: (progress: RelayProgress) => void
  onChunk?: (text: string) => void
  dryRun: boolean
}

/** A schema's JSON text: a string as given (the core parses it), an object as `JSON.stringify` writes it. */
function schemaText(options: Fields): string | undefined {
  const value = options.schema
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') return value
  if (typeof value !== 'object') throw invalidArgType('options.schema', 'of type string or object', value)
  let text: string | undefined
  try {
    text = JSON.stringify(value) as string | undefined
  } catch (cause) {
    // A BigInt, a cycle, a throwing toJSON(): as unusable as a schema that stringifies to nothing.
    throw Object.assign(invalidArgType('options.schema', 'JSON-serialisable', value), { cause })
  }
  if (text === undefined) throw invalidArgType('options.schema', 'JSON-serialisable', value)
  return text
}

/**
 * A call's native request: each option it takes type-checked (`ERR_INVALID_ARG_TYPE`), in the
 * request's order; an option of the other call is not read. Checks 1 to 4 are the core's
 * (`refused_at_once`), made where the call is made.
 */
function parsed(input: unknown, call: 'relay' | 'review'): Parsed {
  const fields = objectArgument(input, 'options')
  const relay = call === 'relay'
  const options: RelayRequest = {
    // A missing prompt is an empty one for a relay: ERR_PROMPT_REQUIRED, as the original reported it.
    prompt: relay && (fields.prompt === undefined || fields.prompt === null) ? '' : optionalString(fields, 'prompt'),
    repoPath: requiredString(fields, 'repoPath'),
    backend: optionalString(fields, 'backend'),
    contextFile: relay ? optionalString(fields, 'contextFile') : undefined,
    contextText: relay ? optionalString(fields, 'contextText') : undefined,
    includeDiff: relay ? optionalBoolean(fields, 'includeDiff') : undefined,
    timeoutSeconds: seconds(fields, 'timeoutSeconds'),
    idleTimeoutSeconds: seconds(fields, 'idleTimeoutSeconds'),
    model: optionalString(fields, 'model'),
    sandbox: optionalString(fields, 'sandbox'),
    schema: schemaText(fields),
    fallback: relay ? optionalStrings(fields, 'fallback') : undefined,
    session: relay ? optionalString(fields, 'session') : undefined,
    backendSession: relay ? optionalString(fields, 'backendSession') : undefined,
    fit: optionalBoolean(fields, 'fit'),
    maxPromptBytes: byteCount(fields, 'maxPromptBytes'),
    base: relay ? undefined : optionalString(fields, 'base'),
    verdict: relay ? undefined : optionalBoolean(fields, 'verdict'),
  }
  return {
    options,
    signal: signalOf(fields),
    onChunk: onChunkOf(fields),
    onWarning: callbackOf(fields, 'onWarning'),
    onProgress: callbackOf<RelayProgress>(fields, 'onProgress'),
    dryRun: optionalBoolean(fields, 'dryRun') ?? false,
  }
}

export function nativeRelayOptions(input: unknown): Parsed {
  return parsed(input, 'relay')
}

export function nativeReviewOptions(input: unknown): Parsed {
  return parsed(input, 'review')
}

/**
 * `relayAll()` options (docs/CONTRACT.md §15): those of `relay()`, with `backends` in place of
 * `backend`. What `relayAll()` refuses at run time is typed as absent (`null` or left out).
 */
export interface RelayAllOptions extends Omit<RelayOptions, 'backend' | 'onChunk' | 'onProgress' | 'dryRun' | 'signal' | 'session' | 'backendSession' | 'fallback'> {
  /**
   * The backends to ask, all at once, each on the same envelope; at least one. The results come
   * in this order (a name given twice is asked twice).
   */
  backends: string[]
  /** Cancels every backend of the call: the promise rejects with an `AbortError`. */
  signal?: AbortSignal
  /** Not for `relayAll()`: name the backends in `backends`. */
  backend?: null
  /** Not for `relayAll()`: it asks every backend already. */
  fallback?: null
  /** Not for `relayAll()`: it streams nothing. */
  onChunk?: null
  /** Not for `relayAll()`: its backends work at once, each in its own phase. */
  onProgress?: null
  /** Not for `relayAll()`: `relay({ dryRun: true })` describes a call. */
  dryRun?: false | null
  /** Not for `relayAll()` (`ERR_SESSION`): a session belongs to one backend. */
  session?: null
  /** Not for `relayAll()` (`ERR_SESSION`), as `session`. */
  backendSession?: null
}

export function nativeRelayAllOptions(input: unknown): Parsed & { backends: string[] } {
  const fields = objectArgument(input, 'options')
  const given = fields.backends
  // Array.from: a hole (`[, 'ok']`) is an undefined name, which every() would skip.
  const backends = Array.isArray(given) ? Array.from(given as unknown[]) : []
  if (backends.length === 0 || !backends.every((name) => typeof name === 'string')) {
    throw invalidArgType('options.backends', 'a non-empty array of strings', given)
  }
  // Options that mean something else here are refused rather than silently ignored.
  if (fields.backend !== undefined && fields.backend !== null) throw invalidArgType('options.backend', 'undefined for relayAll() (name them in backends)', fields.backend)
  if (fields.onChunk !== undefined && fields.onChunk !== null) throw invalidArgType('options.onChunk', 'undefined for relayAll()', fields.onChunk)
  if (fields.onProgress !== undefined && fields.onProgress !== null) throw invalidArgType('options.onProgress', 'undefined for relayAll()', fields.onProgress)
  if (fields.fallback !== undefined && fields.fallback !== null) throw invalidArgType('options.fallback', 'undefined for relayAll() (it asks every backend already)', fields.fallback)
  if (fields.dryRun !== undefined && fields.dryRun !== null && fields.dryRun !== false) throw invalidArgType('options.dryRun', 'false for relayAll()', fields.dryRun)
  return { ...nativeRelayOptions(fields), backends: backends as string[] }
}

/** Options of the synchronous git helpers. */
export interface GitHelperOptions {
  /**
   * Seconds git may take; a finite number greater than zero. Past it, `gitDiffBase` throws
   * `ERR_GIT_DIFF` and `detectDefaultBranch` answers `'HEAD~1'`, as for any git failure.
   * @default 30
   */
  timeoutSeconds?: number
}

/** The `timeoutSeconds` of a git helper's optional options (the core checks its value). */
export function gitHelperTimeout(input: unknown): number | undefined {
  if (input === undefined || input === null) return undefined
  return seconds(objectArgument(input, 'options'), 'timeoutSeconds')
}

export function stringArgument(value: unknown, name: string): string {
  if (typeof value !== 'string') throw invalidArgType(name, 'of type string', value)
  return value
}
