// The one road of a call on the JS side (docs/ARCHITECTURE.md §2): open it (environment, cwd,
// the call's record), start it in the scope (one native entry per operation), read its steps
// (warnings, streamed text, then its end) and turn a failure into what the caller must see.
import type { CallStep, DirectRelay, NativeCall, NativeCaller, NativeFailure, NativeProgress, NativeUsage } from '../../binding.js'
import { binding, onMainThread, scope } from './native.js'
import { AbortError, BackendError, RelayError, type RelayErrorCode, type RelayErrorReason } from './errors.js'
import { currentBackendDepth } from './depth.js'
import { encodeEnv } from './env.js'
import type { CallRecord, RelayProgress } from './call-records.js'
import { passTurn, waitForTurn } from './turns.js'
import { onAbort } from './abort-listeners.js'
import { runInvocation, trampolineFor } from './backends.js'
import { toCoverage, toDryRun, type DryRun, type DryRunCoverage } from './dry-run.js'
import { DEFAULT_BACKEND } from './limits.js'
import type { Parsed } from './options.js'

/** What a call brings besides its native options. */
export interface CallOptions {
  signal?: AbortSignal
  onWarning?: (message: string) => void
  onProgress?: (progress: RelayProgress) => void
  /** Where to keep its warnings too (a detailed call's result). */
  warnings?: string[]
}

/**
 * The environment for native code: nothing on the main thread, where `process.env` is the
 * process's environment and native code reads it far faster; elsewhere (a worker has its own
 * copy) `key=value` entries each ended by NUL. The depth of a JS backend making the call goes
 * beside it (`depth`) and is applied natively either way.
 */
export function caller(): NativeCaller {
  return { env: onMainThread() ? undefined : encodeEnv(process.env), depth: currentBackendDepth(), cwd: process.cwd() }
}

/** One call in progress on the JS side: what native code is given, and what the call keeps here. */
interface OpenCall {
  readonly caller: NativeCaller
  readonly record: CallRecord
}

/** Opens a call: an aborted signal fails it first, before anything is copied. */
function openCall({ signal, onWarning, onProgress, warnings }: CallOptions): OpenCall {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason })
  return { caller: caller(), record: { thrown: new Map(), signal, onWarning, onProgress, warnings } }
}

/** What the backend is doing goes to the call's `onProgress`; a throw from it is ignored. */
function report(record: CallRecord, progress: NativeProgress): void {
  const { backend, phase, tool, answerBytes, elapsedMs, message } = progress
  try {
    record.onProgress?.({ backend: backend ?? null, phase, tool: tool ?? null, answerBytes, elapsedMs, message })
  } catch {
    // A caller's callback that throws must not take the relay down with it.
  }
}

/** A warning about a call goes to its `onWarning`, else `console.error`. */
function warn(record: CallRecord, message: string): void {
  const { onWarning } = record
  record.warnings?.push(message)
  if (onWarning === undefined) {
    // Looked up on each call so a test's spy on console.error sees it.
    console.error(message)
    return
  }
  try {
    onWarning(message)
  } catch {
    // A caller's callback that throws must not take the relay down with it.
  }
}

/** How a call ended well, with the record its failures are read against. */
interface Ended {
  readonly step: CallStep
  readonly record: CallRecord
}

/** A call opened and started. */
interface Started {
  readonly call: OpenCall
  readonly native: NativeCall
}

/**
 * Opens a call and starts it with `start`. A check that waits on nothing (1 to 4) refuses the
 * call at once, where it is made: it rejects as the started call would have.
 */
function begin(options: CallOptions, start: (caller: NativeCaller) => NativeCall | NativeFailure): Started {
  const call = openCall(options)
  const native = start(call.caller)
  if (!(native instanceof binding.NativeCall)) throw fromNative(native, call.record)
  return { call, native }
}

/**
 * A call's streamed text as it comes; returns its end. Nothing starts before the first `next()`
 * (`started` runs then); a failure rejects as what the caller must see; leaving early (`break`,
 * `return()`, `throw()`) or the caller's signal cancels it, which stops its backend.
 */
async function* steps(started: () => Started, signal: AbortSignal | undefined): AsyncGenerator<string, Ended, undefined> {
  const { call, native } = started()
  const stopListening = signal === undefined ? undefined : onAbort(signal, () => native.cancel())
  let ended = false
  try {
    for (;;) {
      const step = await native.next()
      if (step.kind === 'text') yield step.text ?? ''
      else if (step.kind === 'warning') warn(call.record, step.text ?? '')
      else if (step.kind === 'invoke' && step.invoke) runInvocation(step.invoke, call.record)
      else if (step.kind === 'progress' && step.progress) report(call.record, step.progress)
      else if (step.kind === 'failure') {
        ended = true
        throw fromNative(step.failure, call.record)
      } else {
        ended = true
        return { step, record: call.record }
      }
    }
  } finally {
    stopListening?.()
    if (!ended) native.cancel()
  }
}

/** Runs a call to its end, handing its streamed text to `onChunk`; a throw from it cancels the call and rejects with what it threw. */
async function settle(stream: AsyncGenerator<string, Ended, undefined>, onChunk?: (text: string) => void): Promise<Ended> {
  for (;;) {
    const step = await stream.next()
    if (step.done) return step.value
    try {
      onChunk?.(step.value)
    } catch (thrown) {
      await stream.return(undefined as never)
      throw thrown
    }
  }
}

function answerOf({ step }: Ended): string {
  return step.text ?? ''
}

function endOf({ step }: Ended): string | DryRun {
  if (step.kind === 'dryrun' && step.dryRun) return toDryRun(step.dryRun)
  return step.text ?? ''
}

/**
 * `relay()`. A relay to a JS backend registered here, neither streamed nor a dry run, starts with
 * `relayHere`: when its preparation waits on nothing (no context file, diff, session or schema)
 * the scope prepares it on this thread and hands back a `DirectRelay`, whose trampoline the
 * wrapper calls itself, keeping its time and the caller's signal. The runtime's road would cross
 * threads four times, four times what such a backend costs (BENCHMARKS.md). Such relays take
 * turns with the event loop (`turns.ts`).
 */
export async function relay(parsed: Parsed): Promise<string | DryRun> {
  const { options, onChunk, dryRun } = parsed
  const watched = parsed.onProgress !== undefined
  const here = !dryRun && onChunk === undefined && !watched && trampolineFor(options.backend ?? DEFAULT_BACKEND) !== undefined
  if (!here) return endOf(await settle(steps(() => begin(parsed, (caller) => scope().relay(options, caller, { dryRun, stream: onChunk !== undefined, progress: watched })), parsed.signal), onChunk))
  const wait = waitForTurn()
  if (wait !== undefined) await wait
  try {
    const call = openCall(parsed)
    const started = scope().relayHere(options, call.caller)
    if (!(started instanceof binding.NativeCall)) return await relayHere(parsed, call, started)
    passTurn()
    return answerOf(await settle(steps(() => ({ call, native: started }), parsed.signal)))
  } finally {
    passTurn()
  }
}

/** The JS-thread branch of `relay()`: the trampoline called here, its outcome settled by the runtime road's own functions. */
async function relayHere(options: CallOptions, call: OpenCall, direct: DirectRelay | NativeFailure): Promise<string> {
  if ('failure' in direct) throw fromNative(direct, call.record)
  const trampoline = trampolineFor(direct.backend)
  if (trampoline === undefined) throw new RelayError(`Backend ${direct.backend} is not registered here`, 'ERR_INTERNAL')
  const outcome = trampoline(direct.call, call.record)
  passTurn()
  const settled = await outcome
  if (options.signal?.aborted) throw new AbortError(undefined, { cause: options.signal.reason })
  // As on the other road, where the answer passes through a Rust string: lone surrogates become U+FFFD.
  if (typeof settled.output === 'string') return settled.output.isWellFormed() ? settled.output : settled.output.toWellFormed()
  const result = binding.settleDirect(direct.backend, settled)
  if (typeof result === 'string') return result
  throw fromNative(result, call.record)
}

/** A backend that could not answer now, before the next was asked (`fallback`). */
export type RelayAttempt = {
  backend: string
  /** Why it could not (docs/ERRORS.md, `reason`). */
  reason: RelayErrorReason
  code: RelayErrorCode
  message: string
}

/**
 * What an answer cost, as far as its backend said (docs/CONTRACT.md §8b); a field it did not
 * report is absent. `inputTokens` includes `cachedInputTokens`, as the AI SDK counts them. A type,
 * not an interface, so that it is a JSON object to the AI SDK's provider metadata; its fields are the
 * core's `Usage`, as napi renders them (`NativeUsage`).
 */
export type RelayUsage = { [Count in keyof NativeUsage]?: number }

/** A native usage as `RelayUsage`: only the fields the backend reported. */
export function toUsage(usage: NativeUsage | null | undefined): RelayUsage | null {
  if (usage === undefined || usage === null) return null
  return Object.fromEntries(Object.entries(usage).filter(([, value]) => typeof value === 'number')) as RelayUsage
}

/** An answer with what is known about it: `relayDetailed()` and `reviewRelayDetailed()` resolve with it. */
export interface RelayDetails {
  /** The answer: what `relay()` (or `reviewRelay()`) resolves with. */
  answer: string
  /** The backend that answered. */
  backend: string
  /** The model that answered: as the backend named it, else as the call named it; `null` when neither did. */
  model: string | null
  /** What the answer cost, as far as the backend said; `null` when it said nothing (docs/CONTRACT.md §8b). */
  usage: RelayUsage | null
  /** With `fit`, how a diff too large to send whole was fitted, every changed file in git's order (docs/CONTRACT.md §6a); `null` when it went whole (or there was none). */
  coverage: DryRunCoverage[] | null
  /** The backends asked before the one that answered (`fallback`), in order, with why each could not answer. */
  attempts: RelayAttempt[]
  /** The call's warnings, in order; each also went to `onWarning`, else `console.error`. */
  warnings: string[]
  /** From the call to its answer, in milliseconds. */
  durationMs: number
}

/** What is known about an answer, from its last step. */
function detailsOf({ step }: Ended, warnings: string[], started: number): RelayDetails {
  const attempts = (step.attempts ?? []).map(({ backend, reason, code, message }) => ({ backend, reason, code: code as RelayErrorCode, message }))
  return {
    answer: step.text ?? '',
    backend: step.backend ?? '',
    model: step.model ?? null,
    usage: toUsage(step.usage),
    coverage: toCoverage(step.coverage),
    attempts,
    warnings,
    durationMs: performance.now() - started,
  }
}

/** `relayDetailed()` and `reviewRelayDetailed()`: the call on the runtime's road, its answer with what is known about it. */
export async function detailed(parsed: Parsed, operation: 'relay' | 'review'): Promise<RelayDetails> {
  const started = performance.now()
  const warnings: string[] = []
  const { options, onChunk } = parsed
  const mode = { dryRun: false, stream: onChunk !== undefined, progress: parsed.onProgress !== undefined }
  const start = (caller: NativeCaller): NativeCall | NativeFailure => (operation === 'relay' ? scope().relay(options, caller, mode) : scope().review(options, caller, mode))
  return detailsOf(await settle(steps(() => begin({ ...parsed, warnings }, start), parsed.signal), onChunk), warnings, started)
}

/** `relayStream()`: the text as it comes; returns the answer. */
export async function* relayStream(parsed: Parsed): AsyncGenerator<string, string, undefined> {
  return (yield* relayStreamDetailed(parsed)).answer
}

/** `relayStreamDetailed()`: the text as it comes; returns the answer with what is known about it. */
export async function* relayStreamDetailed(parsed: Parsed): AsyncGenerator<string, RelayDetails, undefined> {
  const started = performance.now()
  const warnings: string[] = []
  const start = (caller: NativeCaller): NativeCall | NativeFailure => scope().relay(parsed.options, caller, { dryRun: false, stream: true, progress: parsed.onProgress !== undefined })
  return detailsOf(yield* steps(() => begin({ ...parsed, warnings }, start), parsed.signal), warnings, started)
}

/** `reviewRelay()`. */
export async function review(parsed: Parsed): Promise<string | DryRun> {
  const { options, onChunk, dryRun } = parsed
  const start = (caller: NativeCaller): NativeCall | NativeFailure => scope().review(options, caller, { dryRun, stream: onChunk !== undefined, progress: parsed.onProgress !== undefined })
  return endOf(await settle(steps(() => begin(parsed, start), parsed.signal), onChunk))
}

/**
 * How one backend of a `relayAll()` call settled; `model` and `usage` as `relayDetailed()` gives
 * them (`usage` `null` when the backend said nothing, as a failed one mostly does).
 */
export type RelayAllResult =
  | { backend: string; ok: true; answer: string; model: string | null; usage: RelayUsage | null }
  | { backend: string; ok: false; error: RelayError; model: string | null; usage: RelayUsage | null }

/**
 * `relayAll()`: a failure of the whole call rejects; each backend's own failure becomes its
 * `RelayError`. A value a JS backend threw that is not one is wrapped in one
 * (`ERR_BACKEND_FAILED`, the value as its `cause`), so one backend's TypeError neither rejects
 * the call nor breaks the result's type.
 */
export async function relayAll(parsed: Parsed & { backends: string[] }): Promise<RelayAllResult[]> {
  const start = (caller: NativeCaller): NativeCall | NativeFailure => scope().relayAll(parsed.options, parsed.backends, caller)
  const { step, record } = await settle(steps(() => begin(parsed, start), parsed.signal))
  return (step.outcomes ?? []).map(({ backend, answer, failure, model, usage }): RelayAllResult => {
    const known = { model: model ?? null, usage: toUsage(usage) }
    if (failure === undefined || failure === null) return { backend, ok: true, answer: answer ?? '', ...known }
    const error = fromNative(failure, record)
    if (error instanceof RelayError) return { backend, ok: false, error, ...known }
    const message = error instanceof Error ? error.message : String(error)
    return { backend, ok: false, error: new RelayError(message, 'ERR_BACKEND_FAILED', { backend, cause: error }), ...known }
  })
}

/** Whether a native result is a failure rather than the value. */
function isFailure(value: unknown): value is NativeFailure {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'failure' in value
}

/** A value a native helper returned, or its failure thrown as what the caller must see. */
export function valueOf<T>(result: T | NativeFailure): T {
  if (isFailure(result)) throw fromNative(result)
  return result
}

/** A session operation (no call record: nothing of it is a JS backend's). */
export async function sessionCall<T>(start: (caller: NativeCaller) => Promise<T | NativeFailure>): Promise<T> {
  return valueOf(await start(caller()))
}

/** Turns a native failure into a `RelayError`, an `AbortError` or the value a backend threw. */
export function fromNative(failure: NativeFailure | null | undefined, record?: CallRecord): unknown {
  switch (failure?.failure) {
    case 'thrown':
      return record?.thrown.get(failure.handle ?? 0)
    case 'relay': {
      const message = failure.message ?? ''
      const code = failure.code ?? 'ERR_INTERNAL'
      const hint = failure.hint === undefined || failure.hint === null ? {} : { hint: failure.hint }
      if (failure.backend === undefined || failure.backend === null) return new RelayError(message, code, hint)
      // An answer that did not match its schema: the backend answered, it did not fail.
      if (typeof failure.answer === 'string') return new RelayError(message, code, { backend: failure.backend, answer: failure.answer })
      const cause = failure.handle === undefined || failure.handle === null ? new BackendError(message) : record?.thrown.get(failure.handle)
      const output = failure.backendOutput === undefined || failure.backendOutput === null ? {} : { backendOutput: failure.backendOutput }
      const reason = failure.reason === undefined || failure.reason === null ? {} : { reason: failure.reason }
      const partial = failure.partialAnswer === undefined || failure.partialAnswer === null ? {} : { partialAnswer: failure.partialAnswer }
      const retry = failure.retryAfterSeconds === undefined || failure.retryAfterSeconds === null ? {} : { retryAfterSeconds: failure.retryAfterSeconds }
      return new RelayError(message, code, { backend: failure.backend, cause, ...output, ...reason, ...retry, ...partial, ...hint })
    }
    default:
      return new AbortError(undefined, { cause: record?.signal?.reason })
  }
}
