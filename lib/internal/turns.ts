/**
 * Relays made on the JS thread (the JS-thread branch of `relay()`, `relayHere` in calls.ts) take turns with the event loop. Each
 * runs its checks and its backend's `run()` synchronously, so a burst of them, or a loop of
 * relays to a backend that answers at once (which never leaves the microtask queue), would hold
 * the loop for as long as they last. Instead, once relays have run for `TURN_MS` since the loop
 * last turned, the next ones queue until it has turned (`setImmediate`), so timers and I/O run
 * between; then they are let through one after another, in order, while the new turn lasts.
 */

/** How long relays may run before they let the event loop turn. */
const TURN_MS = 4

let turnStartedAt: number | undefined
const waiting: Array<() => void> = []

function startTurn(now: number): void {
  turnStartedAt = now
  setImmediate(endTurn)
}

function endTurn(): void {
  turnStartedAt = undefined
  const next = waiting.shift()
  if (next === undefined) return
  startTurn(performance.now())
  next()
}

/** `undefined` when a relay may run now; else a promise that resolves when it may. */
export function waitForTurn(): Promise<void> | undefined {
  // Relays already waiting go first.
  if (waiting.length === 0) {
    const now = performance.now()
    if (turnStartedAt === undefined) {
      startTurn(now)
      return undefined
    }
    if (now - turnStartedAt < TURN_MS) return undefined
  }
  return new Promise((resolve) => waiting.push(resolve))
}

/** Called when a relay has done its synchronous part: lets the next waiting one run if the turn lasts. */
export function passTurn(): void {
  if (waiting.length === 0 || turnStartedAt === undefined) return
  if (performance.now() - turnStartedAt < TURN_MS) waiting.shift()?.()
}
