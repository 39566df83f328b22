import type { BackendCall, StopReason } from '../../binding.js'
import { AbortError, BackendError, RelayError } from './errors.js'
import { onAbort } from './abort-listeners.js'

/** Why an invocation was stopped before its backend settled: the relay's `StopReason`. */
export type Stop = (reason: StopReason, message?: string) => void

/**
 * The `AbortController` of one invocation of a JS backend, and how to stop it: at its timeout
 * (`reason`: the relay's `ERR_BACKEND_TIMEOUT` error), when the caller aborts (the caller's
 * `signal.reason`) or when the relay is given up otherwise (an `AbortError`). The first stop wins.
 */
export function openInvocation(backend: string, callerSignal: AbortSignal | undefined): { signal: AbortSignal; stop: Stop } {
  const controller = new AbortController()
  const stop: Stop = (reason, message) => {
    if (!controller.signal.aborted) controller.abort(reasonFor(reason, message, backend, callerSignal))
  }
  return { signal: controller.signal, stop }
}

function reasonFor(reason: StopReason, message: string | undefined, backend: string, callerSignal: AbortSignal | undefined): unknown {
  if (reason === 'timeout') {
    const text = message ?? `${backend} timed out`
    // The error the relay itself reports for a backend that does not settle in time.
    return new RelayError(text, 'ERR_BACKEND_TIMEOUT', { backend, cause: new BackendError(text) })
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
export function withinTime<T>(call: BackendCall, startedAt: number, callerSignal: AbortSignal | undefined, stop: Stop, work: Promise<T>): Promise<T | typeof TIMED_OUT | typeof ABORTED> {
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
      stop('cancelled')
      resolve(ABORTED)
    }
    after(Math.max(0, endsAt - performance.now()), () => {
      late = true
      stop('timeout', call.timeoutMessage)
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
