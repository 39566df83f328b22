/** What one relay call keeps on the JS side while it runs: its JS backends' invocations reach it through the call's own steps. */
export interface CallRecord {
  /** Values its JS backends threw, by handle, so the caller can get the very same value back. */
  readonly thrown: Map<number, unknown>
  readonly signal?: AbortSignal
  /** Where the call's warnings go (else `console.error`). */
  readonly onWarning?: (message: string) => void
  /** The call's warnings, kept for a detailed call's result (`relayDetailed()`). */
  readonly warnings?: string[]
}

/** Keeps a thrown value for the call and returns its handle. */
export function keepThrown(record: CallRecord, value: unknown): number {
  const handle = record.thrown.size + 1
  record.thrown.set(handle, value)
  return handle
}
