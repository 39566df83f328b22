/**
 * Abort listeners shared per signal: one `abort` listener on a caller's signal however many calls
 * in flight wait on it. A listener per call trips Node's `MaxListenersExceededWarning` once more
 * than ten relays share one signal (Node 20's `events.addAbortListener` trips it too).
 */

interface Waiting {
  readonly listeners: Set<() => void>
  readonly dispatch: () => void
}

const waiting = new WeakMap<AbortSignal, Waiting>()

/**
 * Calls `listener` once when `signal` aborts (not if it has aborted already: check first).
 * Returns what removes it; the signal's own listener goes with the last one removed, so a
 * settled call leaves nothing on the signal.
 */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  const entry = waiting.get(signal) ?? listenOn(signal)
  // Its own wrapper: the same function added twice is two listeners, removed one at a time.
  const once = (): void => listener()
  const { listeners, dispatch } = entry
  listeners.add(once)
  return () => {
    if (!listeners.delete(once) || listeners.size > 0) return
    if (waiting.get(signal) === entry) waiting.delete(signal)
    signal.removeEventListener('abort', dispatch)
  }
}

function listenOn(signal: AbortSignal): Waiting {
  const listeners = new Set<() => void>()
  const dispatch = (): void => {
    waiting.delete(signal)
    // A copy: a listener may remove itself or another as it runs (one removed does not run).
    for (const each of [...listeners]) {
      if (!listeners.has(each)) continue
      try {
        each()
      } catch (error) {
        // As an event listener's throw: reported, and the other listeners still run.
        queueMicrotask(() => {
          throw error
        })
      }
    }
    listeners.clear()
  }
  const entry = { listeners, dispatch }
  waiting.set(signal, entry)
  signal.addEventListener('abort', dispatch, { once: true })
  return entry
}
