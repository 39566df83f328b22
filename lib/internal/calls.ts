import type { BackendCall, BackendOutcome, NativeBackendOutcome, NativeCaller, NativeRelayOptions } from '../../binding.js'
import { binding, onMainThread, scope } from './native.js'
import { AbortError, BackendError, RelayError, type RelayErrorCode } from './errors.js'
import { currentBackendDepth } from './depth.js'
import { encodeEnv } from './env.js'
import { closeRecord, openRecord, type CallRecord } from './call-records.js'
import { passTurn, waitForTurn } from './turns.js'
import { onAbort } from './abort-listeners.js'

/** Must match `FAILURE_MARKER` in `src/binding/errors.rs`. */
const FAILURE_MARKER = '@@phone-a-friend/relay@@'

type NativeFailure =
  | { kind: 'relay'; code: RelayErrorCode; message: string; backend?: string; causeHandle?: number }
  | { kind: 'thrown'; handle: number }
  | { kind: 'aborted' }

/** What a call brings besides its native options. */
export interface CallOptions {
  signal?: AbortSignal
  /** A check 1 or 2 failure found in JS (see `refusedEarly`). */
  refused?: RelayError
  onWarning?: (message: string) => void
}

/**
 * The environment for native code: nothing on the main thread, where `process.env` is the
 * process's environment and native code reads it far faster; elsewhere (a worker has its own
 * copy) `key=value` entries each ended by NUL. The depth of a JS backend making the call goes
 * beside it (`depth`) and is applied natively either way.
 */
function environment(): string | undefined {
  return onMainThread() ? undefined : encodeEnv(process.env)
}

/** One call in progress on the JS side: what native code is given, and its cleanup. */
interface OpenCall {
  readonly caller: NativeCaller
  readonly record: CallRecord
  close(): void
}

/**
 * Opens a call: snapshots the environment and cwd on this thread and bridges the AbortSignal to
 * a native cancellation token (registered here, so an abort cannot race it), unless the call
 * stays on this thread (`native: false`).
 */
function openCall({ signal, refused, onWarning }: CallOptions, native = true): OpenCall {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason })
  // Checks that need no environment, file or backend fail here, before any of that is copied.
  if (refused) throw refused
  const record: CallRecord = { thrown: new Map(), signal, onWarning }
  const tag = openRecord(record)
  const bridged = native && signal !== undefined
  const cancelId = bridged ? binding.openCancelToken(scope()) : undefined
  const stopListening = bridged ? onAbort(signal, () => binding.cancel(cancelId as number)) : undefined
  return {
    caller: { scope: scope(), env: environment(), depth: currentBackendDepth(), cwd: process.cwd(), callTag: tag, cancelId },
    record,
    close() {
      closeRecord(tag)
      if (bridged) {
        stopListening?.()
        binding.closeCancelToken(cancelId as number)
      }
    },
  }
}

/** Runs one native call and turns a native failure into what the caller must see. */
export async function callNative<T>(options: CallOptions, start: (caller: NativeCaller) => Promise<T>): Promise<T> {
  const call = openCall(options)
  try {
    return await start(call.caller)
  } catch (error) {
    throw fromNative(error, call.record)
  } finally {
    call.close()
  }
}

/**
 * `relay()` to a JS backend, made without leaving this thread when its preparation waits on
 * nothing (no context file, diff, session or schema): checks and envelope in one synchronous
 * native call, then the backend's trampoline, which keeps its time and the caller's signal. The
 * asynchronous path would cross threads four times, several times what such a backend costs.
 * Else (or for a backend that is not a JS one) the call is `relay()`'s asynchronous one.
 */
export async function relayOnThisThread(
  options: CallOptions,
  native: NativeRelayOptions,
  trampoline: (call: BackendCall) => Promise<BackendOutcome>,
): Promise<string> {
  const wait = waitForTurn()
  if (wait !== undefined) await wait
  const started = startOnThisThread(options, native, trampoline)
  if (started === null) return callNative(options, (caller) => binding.relay(native, caller))
  const { call, backend, outcome } = started
  try {
    const settled = await outcome
    if (options.signal?.aborted) throw new AbortError(undefined, { cause: options.signal.reason })
    // As on the other path, where the answer passes through a Rust string: lone surrogates become U+FFFD.
    if (typeof settled.output === 'string') return settled.output.isWellFormed() ? settled.output : settled.output.toWellFormed()
    return binding.settleDirect(backend, settled)
  } catch (error) {
    throw fromNative(error, call.record)
  } finally {
    call.close()
  }
}

/** The synchronous part of `relayOnThisThread`: the checks, then the backend called; `null` when the call cannot run here. */
function startOnThisThread(
  options: CallOptions,
  native: NativeRelayOptions,
  trampoline: (call: BackendCall) => Promise<BackendOutcome>,
): { call: OpenCall; backend: string; outcome: Promise<BackendOutcome> } | null {
  let call: OpenCall | undefined
  try {
    call = openCall(options, false)
    const direct = binding.prepareDirectRelay(native, call.caller)
    if (direct === null) {
      call.close()
      return null
    }
    return { call, backend: direct.backend, outcome: trampoline(direct.call) }
  } catch (error) {
    call?.close()
    throw fromNative(error, call?.record)
  } finally {
    passTurn()
  }
}

/** How one backend of a `relayAll()` call settled. */
export type RelayAllResult = { backend: string; ok: true; answer: string } | { backend: string; ok: false; error: RelayError }

/**
 * Runs a native `relayAll()` call: a failure of the whole call rejects; each backend's own failure
 * becomes its `RelayError`. A value a JS backend threw that is not one is wrapped in one
 * (`ERR_BACKEND_FAILED`, the value as its `cause`), so one backend's TypeError neither rejects
 * the call nor breaks the result's type.
 */
export async function callNativeAll(options: CallOptions, start: (caller: NativeCaller) => Promise<NativeBackendOutcome[]>): Promise<RelayAllResult[]> {
  const call = openCall(options)
  try {
    const outcomes = await start(call.caller)
    return outcomes.map(({ backend, answer, failure }): RelayAllResult => {
      if (failure === undefined || failure === null) return { backend, ok: true, answer: answer ?? '' }
      const error = fromNative(new Error(failure), call.record)
      if (error instanceof RelayError) return { backend, ok: false, error }
      const message = error instanceof Error ? error.message : String(error)
      return { backend, ok: false, error: new RelayError(message, 'ERR_BACKEND_FAILED', { backend, cause: error }) }
    })
  } catch (error) {
    throw fromNative(error, call.record)
  } finally {
    call.close()
  }
}

/**
 * Runs one native streaming call (docs/CONTRACT.md §10): yields its chunks as they come, returns
 * the final answer. Leaving early (`break`, `return()`, `throw()`) aborts the run and stops its
 * backend.
 */
export async function* streamNative(options: CallOptions, start: (caller: NativeCaller) => number): AsyncGenerator<string, string, undefined> {
  const call = openCall(options)
  let id: number | undefined
  let settled = false
  try {
    id = start(call.caller)
    for (;;) {
      const step = await binding.streamNext(id)
      if (typeof step.text === 'string') {
        yield step.text
        continue
      }
      settled = true
      return step.answer ?? ''
    }
  } catch (error) {
    settled = true
    throw fromNative(error, call.record)
  } finally {
    if (id !== undefined && !settled) binding.streamCancel(id)
    call.close()
  }
}

/**
 * Runs a stream for a caller's `onChunk`: each chunk is handed to it; a throw from it aborts
 * the run and rejects with what it threw.
 */
export async function collectStream(stream: AsyncGenerator<string, string, undefined>, onChunk: (text: string) => void): Promise<string> {
  for (;;) {
    const step = await stream.next()
    if (step.done) return step.value
    try {
      onChunk(step.value)
    } catch (thrown) {
      await stream.return('')
      throw thrown
    }
  }
}

/** Turns a native failure into a `RelayError`, an `AbortError` or the value a backend threw. */
export function fromNative(error: unknown, record?: CallRecord): unknown {
  if (!(error instanceof Error) || !error.message.startsWith(FAILURE_MARKER)) return error
  const failure = JSON.parse(error.message.slice(FAILURE_MARKER.length)) as NativeFailure
  switch (failure.kind) {
    case 'thrown':
      return record?.thrown.get(failure.handle)
    case 'aborted':
      return new AbortError(undefined, { cause: record?.signal?.reason })
    case 'relay': {
      const { message, code, backend, causeHandle } = failure
      if (backend === undefined) return new RelayError(message, code)
      const cause = causeHandle === undefined ? new BackendError(message) : record?.thrown.get(causeHandle)
      return new RelayError(message, code, { backend, cause })
    }
  }
}
