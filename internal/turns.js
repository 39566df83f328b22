"use strict";
/**
 * Relays made on the JS thread (see `relayOnThisThread`) take turns with the event loop. Each
 * runs its checks and its backend's `run()` synchronously, so a burst of them, or a loop of
 * relays to a backend that answers at once (which never leaves the microtask queue), would hold
 * the loop for as long as they last. Instead, once relays have run for `TURN_MS` since the loop
 * last turned, the next ones queue until it has turned (`setImmediate`), so timers and I/O run
 * between; then they are let through one after another, in order, while the new turn lasts.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.waitForTurn = waitForTurn;
exports.passTurn = passTurn;
/** How long relays may run before they let the event loop turn. */
const TURN_MS = 4;
let turnStartedAt;
const waiting = [];
function startTurn(now) {
    turnStartedAt = now;
    setImmediate(endTurn);
}
function endTurn() {
    turnStartedAt = undefined;
    const next = waiting.shift();
    if (next === undefined)
        return;
    startTurn(performance.now());
    next();
}
/** `undefined` when a relay may run now; else a promise that resolves when it may. */
function waitForTurn() {
    // Relays already waiting go first.
    if (waiting.length === 0) {
        const now = performance.now();
        if (turnStartedAt === undefined) {
            startTurn(now);
            return undefined;
        }
        if (now - turnStartedAt < TURN_MS)
            return undefined;
    }
    return new Promise((resolve) => waiting.push(resolve));
}
/** Called when a relay has done its synchronous part: lets the next waiting one run if the turn lasts. */
function passTurn() {
    if (waiting.length === 0 || turnStartedAt === undefined)
        return;
    if (performance.now() - turnStartedAt < TURN_MS)
        waiting.shift()?.();
}
