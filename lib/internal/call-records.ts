import type { ProgressPhase } from '../../binding.js'

/**
 * What a waiting caller hears of a relay (`onProgress`, docs/CONTRACT.md §10a): on each change
 * of phase, and the same again every second without one. Made from what the backend itself
 * does; these reports never count as its progress for `idleTimeoutSeconds`.
 */
export type RelayProgress = {
  /** The backend at work; `null` while the call is prepared (or after a fallback, the next one). */
  backend: string | null
  /**
   * `preparing` (checks, context, diff), `starting` (the backend said nothing yet), `thinking`
   * (the model at work), `tool` (running `tool`), `writing` (the answer's text is coming): the
   * core's one list, as napi renders it in binding.d.ts.
   */
  phase: ProgressPhase
  /** The tool the backend runs, in the `tool` phase, by the name the backend gives it. */
  tool: string | null
  /** Bytes of the answer's text so far. */
  answerBytes: number
  /** Since the call was made. */
  elapsedMs: number
  /** The same for people: `codex: running Read (12s, 340 bytes of the answer so far)`. */
  message: string
}

/** What one relay call keeps on the JS side while it runs: its JS backends' invocations reach it through the call's own steps. */
export interface CallRecord {
  /** Values its JS backends threw, by handle, so the caller can get the very same value back. */
  readonly thrown: Map<number, unknown>
  readonly signal?: AbortSignal
  /** Where the call's warnings go (else `console.error`). */
  readonly onWarning?: (message: string) => void
  /** The call's warnings, kept for a detailed call's result (`relayDetailed()`). */
  readonly warnings?: string[]
  /** Where what the backend is doing goes (`onProgress`). */
  readonly onProgress?: (progress: RelayProgress) => void
}

/** Keeps a thrown value for the call and returns its handle. */
export function keepThrown(record: CallRecord, value: unknown): number {
  const handle = record.thrown.size + 1
  record.thrown.set(handle, value)
  return handle
}
