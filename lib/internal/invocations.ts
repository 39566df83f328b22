import type { InvocationAbort } from '../binding.js'
import { AbortError, BackendError, RelayError } from './errors.js'

/** One call of a JS backend's `run()`/`review()` that has not settled yet. */
interface Invocation {
  readonly controller: AbortController
  readonly backend: string
  /** The caller's signal: its reason is the reason when the caller aborted. */
  readonly callerSignal?: AbortSignal
}

const invocations = new Map<number, Invocation>()

/** Opens invocation `id` and returns the signal its backend receives. */
export function openInvocation(id: number, backend: string, callerSignal: AbortSignal | undefined): AbortSignal {
  const controller = new AbortController()
  invocations.set(id, { controller, backend, callerSignal })
  return controller.signal
}

/** Forgets a settled invocation: an abort that comes later has nobody left to tell. */
export function closeInvocation(id: number): void {
  invocations.delete(id)
}

/** Called by the native side when the relay gives up on an invocation (timeout or cancellation). */
export function abortInvocation(abort: InvocationAbort): void {
  const invocation = invocations.get(abort.invocation)
  if (invocation === undefined) return
  invocations.delete(abort.invocation)
  invocation.controller.abort(reasonFor(abort, invocation))
}

function reasonFor(abort: InvocationAbort, { backend, callerSignal }: Invocation): unknown {
  if (abort.reason === 'timeout') {
    const message = abort.message ?? `${backend} timed out`
    // The error the relay itself reports for a backend that does not settle in time.
    return new RelayError(message, 'ERR_BACKEND_TIMEOUT', { backend, cause: new BackendError(message) })
  }
  if (callerSignal?.aborted) return callerSignal.reason
  return new AbortError()
}
