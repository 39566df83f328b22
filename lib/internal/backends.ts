import type { BackendCall, BackendOutcome, Invocation } from '../../binding.js'
import { scope } from './native.js'
import { keepThrown, type CallRecord } from './call-records.js'
import { runAtDepthOf } from './depth.js'
import { decodeEnv } from './env.js'
import { BackendError, RelayError, describe, invalidArgType } from './errors.js'
import { ABORTED, TIMED_OUT, openInvocation, withinTime } from './invocations.js'
import type { SandboxMode } from './options.js'

/** What a backend's `run()` receives. */
export interface BackendRunOptions {
  /** The whole prompt envelope. */
  prompt: string
  /** Absolute path of the repository. */
  repoPath: string
  timeoutSeconds: number
  sandbox: SandboxMode
  model: string | null
  /** The full child environment (the caller's, as it was at the call), `PHONE_A_FRIEND_DEPTH` already raised. */
  env: Record<string, string>
  /**
   * The JSON Schema (its JSON text) the answer must match, when the caller gave one: it is
   * already asked for at the end of `prompt`; pass it to your model's structured output if it
   * has one. The relay checks the answer against it either way. Absent (no key) without one.
   */
  schema?: string
  /**
   * In a session, for a backend whose `capabilities.resumeStrategy` is `'native-session'`: its
   * own session id to continue (`resumeSession: true`), or `null` to start one (then report its
   * id through `onSessionCreated`).
   */
  sessionId?: string | null
  resumeSession?: boolean
  /** In a session, for `'transcript-replay'`: the earlier turns, oldest first, to send before `prompt`. */
  sessionHistory?: Array<{ role: string; content: string }>
  /** Reports the backend's own session id (kept with the caller's session label). */
  onSessionCreated?: (sessionId: string) => void
  /**
   * Aborts when the relay gives up on this call: at its timeout (`reason`: a `RelayError` with
   * code `ERR_BACKEND_TIMEOUT`), when the caller aborts (`reason`: the caller's `signal.reason`)
   * or when the relay is cancelled otherwise. Never aborts once the call has settled.
   */
  signal: AbortSignal
}

/** What a backend's native `review()` receives. */
export interface BackendReviewOptions {
  repoPath: string
  timeoutSeconds: number
  sandbox: SandboxMode
  model: string | null
  env: Record<string, string>
  /** The branch or commit to review against. */
  base: string
  /** Review instructions, when the caller gave some. */
  prompt?: string
  /** As for `run()`. */
  signal: AbortSignal
}

/** A backend written in JS. Throw a `BackendError` to report a failure. */
export interface Backend {
  name: string
  /**
   * The sandbox modes it accepts (`SandboxMode` values); a relay asking for another is refused
   * with `ERR_INVALID_SANDBOX`. Any iterable of strings (an array, a `Set<string>`) but a string
   * itself: checked when it is registered.
   */
  allowedSandboxes: Iterable<string> & object
  run(options: BackendRunOptions): Promise<string>
  /**
   * The answer as it is produced, for `relayStream()` and `onChunk` (else they get `run()`'s
   * answer as one chunk). The chunks joined are the answer. Each chunk is taken only once the
   * consumer has room for it (at most 1 MiB unread), so a slow consumer pauses this iterator.
   */
  runStream?(options: BackendRunOptions): AsyncIterable<string>
  /** A native review; without it, reviews go through `run()` with the diff in the prompt. */
  review?(options: BackendReviewOptions): Promise<string>
  /**
   * How it continues a conversation (docs/CONTRACT.md §12), in the shape of upstream (the
   * phone-a-friend v4.1.1 CLI): `'native-session'` (it keeps sessions: `run()` gets
   * `sessionId`/`resumeSession` and reports new ids through `onSessionCreated`),
   * `'transcript-replay'` (`run()` gets `sessionHistory`), or `'unsupported'` (the default: a
   * `session` is refused with `ERR_SESSION`). Read when it is registered.
   */
  capabilities?: { resumeStrategy?: 'native-session' | 'transcript-replay' | 'unsupported' }
}

/** The session id a backend reports during one invocation. */
interface Reported {
  sessionId?: string
}

/** The session fields of `run()`'s options, for a call in a session. */
function sessionOptions(options: Record<string, unknown>, call: BackendCall, reported: Reported): void {
  if (!call.inSession) return
  options.sessionId = call.sessionId ?? null
  options.resumeSession = typeof call.sessionId === 'string'
  if (typeof call.sessionHistory === 'string') options.sessionHistory = JSON.parse(call.sessionHistory) as unknown
  options.onSessionCreated = (id: unknown) => {
    if (typeof id !== 'string') throw invalidArgType('sessionId', 'of type string', id)
    reported.sessionId = id
  }
}

function optionsFor(call: BackendCall, signal: AbortSignal, reported: Reported): BackendRunOptions | BackendReviewOptions {
  let env: Record<string, string> | undefined
  // Built in place, not spread: a spread would read the lazy `env` at once.
  const options: Record<string, unknown> = {}
  if (call.method === 'run') {
    options.prompt = call.prompt ?? ''
    // Only when the caller gave one: backends written before schemas see the options they knew.
    if (typeof call.schema === 'string') options.schema = call.schema
    sessionOptions(options, call, reported)
  }
  options.repoPath = call.repoPath
  options.timeoutSeconds = call.timeoutSeconds
  options.sandbox = call.sandbox as SandboxMode
  options.model = call.model ?? null
  Object.defineProperty(options, 'env', {
    // Made into an object on first read: most backends never read it.
    get: () => (env ??= decodeEnv(call.env)),
    set: (value: Record<string, string>) => {
      env = value
    },
    enumerable: true,
    configurable: true,
  })
  options.signal = signal
  if (call.method !== 'run') {
    options.base = call.base ?? ''
    if (call.reviewPrompt !== undefined && call.reviewPrompt !== null) options.prompt = call.reviewPrompt
  }
  return options as unknown as BackendRunOptions | BackendReviewOptions
}

const UNINSPECTABLE = 'a value that cannot be inspected'

/** A message for any value; never throws (throwing getters, Proxy traps, revoked Proxies). */
function messageOf(value: unknown): string {
  try {
    return value instanceof Error ? String(value.message) : String(value)
  } catch {
    try {
      return Object.prototype.toString.call(value)
    } catch {
      return UNINSPECTABLE
    }
  }
}

type Failure = Pick<BackendOutcome, 'failure' | 'message'>

/**
 * What a thrown value is. Every inspection may throw, and a value that cannot be inspected is
 * none of our errors: it goes back to the caller unchanged, like any other foreign value.
 */
function classify(thrown: unknown): Failure {
  try {
    if (thrown instanceof BackendError) return { failure: 'backend', message: String(thrown.message) }
    if (thrown instanceof RelayError) return { failure: 'relay', message: String(thrown.message) }
  } catch {
    // Not inspectable: passed through below.
  }
  return { failure: 'thrown', message: messageOf(thrown) }
}

function invalidOutput(name: string, method: string, output: unknown): Failure {
  let shown: string
  try {
    shown = describe(output)
  } catch {
    shown = UNINSPECTABLE
  }
  return { failure: 'invalid', message: `Backend ${name} ${method}() resolved with ${shown}; expected a string` }
}

/**
 * Runs `runStream`, handing each chunk to the relay as it comes; resolves with the chunks joined.
 * Once the relay has given up on the call (`signal`), its text is nobody's: the iterator is stopped.
 */
async function streamed(chunks: AsyncIterable<string>, invocation: Invocation, signal: AbortSignal): Promise<unknown> {
  const parts: string[] = []
  for await (const chunk of chunks) {
    if (typeof chunk !== 'string') return chunk // reported as an invalid answer
    if (signal.aborted) break
    parts.push(chunk)
    await invocation.push(chunk)
  }
  return parts.join('')
}

/** Calls the user's backend for the call whose `record` it is; always resolves, never throws, so nothing escapes into Node as uncaught. */
async function invoke(backend: Backend, name: string, call: BackendCall, record: CallRecord): Promise<BackendOutcome> {
  const startedAt = performance.now()
  const { signal, stop } = openInvocation(name, record.signal)
  const { invocation } = call
  // Made from the runtime: the relay may stop it (a stream left early, a timeout on a stuck thread).
  invocation?.stopped().then(
    (stopped) => {
      if (stopped === null) return
      stop(stopped.reason, stopped.message ?? undefined)
      invocation.close()
    },
    () => {}, // the environment is closing: nobody is left to tell
  )
  const reported: Reported = {}
  try {
    const options = optionsFor(call, signal, reported)
    // Relays the backend starts (through timers and promise chains too) see its depth.
    const running: unknown = runAtDepthOf(call.depth, () => {
      if (call.method !== 'run') return backend.review?.(options as BackendReviewOptions)
      if (call.stream && invocation && typeof backend.runStream === 'function') return streamed(backend.runStream(options as BackendRunOptions), invocation, signal)
      return backend.run(options as BackendRunOptions)
    })
    const output = await withinTime(call, startedAt, record.signal, stop, Promise.resolve(running))
    if (output === TIMED_OUT) return { failure: 'timeout', message: call.timeoutMessage }
    if (output === ABORTED) return { failure: 'aborted' }
    if (typeof output === 'string') return { output, sessionId: reported.sessionId }
    return invalidOutput(name, call.method, output)
  } catch (thrown) {
    return { ...classify(thrown), handle: keepThrown(record, thrown) }
  } finally {
    invocation?.close()
  }
}

const RESUME_STRATEGIES = ['native-session', 'transcript-replay', 'unsupported'] as const

function resumeStrategyOf(backend: Backend): (typeof RESUME_STRATEGIES)[number] {
  const { capabilities } = backend
  if (capabilities === undefined || capabilities === null) return 'unsupported'
  if (typeof capabilities !== 'object') throw invalidArgType('backend.capabilities', 'of type object', capabilities)
  const strategy = capabilities.resumeStrategy ?? 'unsupported'
  if (!RESUME_STRATEGIES.includes(strategy)) throw invalidArgType('backend.capabilities.resumeStrategy', `one of ${RESUME_STRATEGIES.join(', ')}`, strategy)
  return strategy
}

/** Calls a registered backend's `run()`/`review()` for the call whose record it is; always resolves. */
export type Trampoline = (call: BackendCall, record: CallRecord) => Promise<BackendOutcome>

/** The trampolines of the backends registered from this module, by name: a call runs the one its invocation names. */
const trampolines = new Map<string, Trampoline>()

/** The trampoline of the JS backend registered as `name`, if it is one. */
export function trampolineFor(name: string): Trampoline | undefined {
  return trampolines.get(name)
}

/**
 * Runs an invocation a call handed to its caller (`NativeCall.next()`): the trampoline of the
 * backend it names, registered from this module, with the caller's record; its outcome settles
 * the invocation. A backend unregistered since the call began fails that invocation.
 */
export function runInvocation(call: BackendCall, record: CallRecord): void {
  const { invocation } = call
  if (invocation === undefined || invocation === null) return
  const trampoline = trampolines.get(call.backend)
  if (trampoline === undefined) {
    invocation.settle({ failure: 'backend', message: `Backend ${call.backend} is no longer registered` })
    return
  }
  void trampoline(call, record).then((outcome) => invocation.settle(outcome))
}

/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
export function registerBackend(backend: Backend): void {
  if (typeof backend !== 'object' || backend === null) throw invalidArgType('backend', 'of type object', backend)
  const { name, allowedSandboxes, run, review, runStream } = backend
  if (typeof name !== 'string' || name === '') throw invalidArgType('backend.name', 'a non-empty string', name)
  if (typeof run !== 'function') throw invalidArgType('backend.run', 'of type function', run)
  if (review !== undefined && typeof review !== 'function') throw invalidArgType('backend.review', 'of type function', review)
  if (runStream !== undefined && typeof runStream !== 'function') throw invalidArgType('backend.runStream', 'of type function', runStream)
  const iterable = allowedSandboxes as unknown
  if (typeof iterable === 'string' || typeof (iterable as Iterable<unknown> | null)?.[Symbol.iterator] !== 'function') {
    throw invalidArgType('backend.allowedSandboxes', 'an iterable of strings', allowedSandboxes)
  }
  const modes = [...new Set(iterable as Iterable<unknown>)]
  const notAString = modes.find((mode) => typeof mode !== 'string')
  if (notAString !== undefined) throw invalidArgType('backend.allowedSandboxes', 'an iterable of strings', notAString)
  const trampoline: Trampoline = (call, record) => invoke(backend, name, call, record)
  scope().registerJsBackend(name, modes as string[], typeof review === 'function', resumeStrategyOf(backend))
  trampolines.set(name, trampoline)
}

/** Drops every backend registered from JS and restores the six built-ins. */
export function resetRegistry(): void {
  scope().resetRegistry()
  trampolines.clear()
}
