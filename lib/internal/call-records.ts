// The table of calls in progress on the JS side, by call tag: what native code's callbacks (a
// warning, a value a JS backend threw) need to find the call they belong to.

/** What one relay call keeps on the JS side while it runs. */
export interface CallRecord {
  /** Values its JS backends threw, by handle, so the caller can get the very same value back. */
  readonly thrown: Map<number, unknown>
  readonly signal?: AbortSignal
  /** Where the call's warnings go (else `console.error`). */
  readonly onWarning?: (message: string) => void
}

const calls = new Map<number, CallRecord>()
let lastTag = 0

export function callRecord(tag: number): CallRecord | undefined {
  return calls.get(tag)
}

/** Keeps a thrown value for the call and returns its handle. */
export function keepThrown(record: CallRecord, value: unknown): number {
  const handle = record.thrown.size + 1
  record.thrown.set(handle, value)
  return handle
}

function nextTag(): number {
  lastTag = lastTag >= 0xffff_fffe ? 1 : lastTag + 1
  return lastTag
}

/** Enters `record` in the table under a new tag, and returns the tag. */
export function openRecord(record: CallRecord): number {
  const tag = nextTag()
  calls.set(tag, record)
  return tag
}

export function closeRecord(tag: number): void {
  calls.delete(tag)
}
