import type { BackendCall, InvocationAbort } from '../../binding.js'
import { AbortError, BackendError, RelayError } from './errors.js'
import { onAbort } from './abort-listeners.js'

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

/** How an invocation ended when its backend did not settle first. */
export const TIMED_OUT: unique symbol = Symbol('timed out')
export const ABORTED: unique symbol = Symbol('aborted')

/** Node's longest timer; a longer wait is made of several. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

/**
 * Settles as `work` does, unless the invocation's time runs out or its caller aborts first. When
 * the time the relay's deadline left it is over, the backend's signal aborts with the timeout
 * error and the backend has `graceMs` more to settle (what it throws in answer to the abort wins);
 * then it is given up. An answer that comes once the time is over is too late, whatever it says
 * (a backend may resolve with whatever it had when its signal aborted): the invocation timed out.
 * The caller's signal gives it up at once. The timers do not keep Node running. `startedAt`:
 * `performance.now()` when the backend was called (its time counts from then).
 */
export function withinTime<T>(call: BackendCall, startedAt: number, callerSignal: AbortSignal | undefined, work: Promise<T>): Promise<T | typeof TIMED_OUT | typeof ABORTED> {
  const { invocation } = call
  // The clock too, not only the timer: a backend that kept the thread busy past its time
  // settles before the timer can fire.
  const endsAt = startedAt + call.timeLeftMs
  let late = false
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    let stopListening: (() => void) | undefined
    const after = (ms: number, then: () => void): void => {
      timer = ms > LONGEST_TIMER_MS ? setTimeout(() => after(ms - LONGEST_TIMER_MS, then), LONGEST_TIMER_MS) : setTimeout(then, ms)
      timer.unref()
    }
    const end = (): void => {
      clearTimeout(timer)
      stopListening?.()
    }
    const aborted = (): void => {
      end()
      abortInvocation({ invocation, reason: 'cancelled' })
      resolve(ABORTED)
    }
    after(Math.max(0, endsAt - performance.now()), () => {
      late = true
      abortInvocation({ invocation, reason: 'timeout', message: call.timeoutMessage })
      after(call.graceMs, () => {
        end()
        resolve(TIMED_OUT)
      })
    })
    if (callerSignal?.aborted) aborted()
    else if (callerSignal !== undefined) stopListening = onAbort(callerSignal, aborted)
    work.then(
      (value) => {
        end()
        resolve(late || performance.now() >= endsAt ? TIMED_OUT : value)
      },
      (error: unknown) => {
        end()
        reject(error)
      },
    )
  })
}
