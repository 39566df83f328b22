/**
 * Relays made on the JS thread (see `relayOnThisThread`) take turns with the event loop. Each
 * runs its checks and its backend's `run()` synchronously, so a burst of them, or a loop of
 * relays to a backend that answers at once (which never leaves the microtask queue), would hold
 * the loop for as long as they last. Instead, once relays have run for `TURN_MS` since the loop
 * last turned, the next ones queue until it has turned (`setImmediate`), so timers and I/O run
 * between; then they are let through one after another, in order, while the new turn lasts.
 */
/** `undefined` when a relay may run now; else a promise that resolves when it may. */
export declare function waitForTurn(): Promise<void> | undefined;
/** Called when a relay has done its synchronous part: lets the next waiting one run if the turn lasts. */
export declare function passTurn(): void;
