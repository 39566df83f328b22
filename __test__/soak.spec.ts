// Soak: 100 relays that time out and 100 that are aborted, 10 at a time, against a fake CLI that
// hangs with a grandchild (`sleep 30 &`, then `sleep 30`). Afterwards nothing may be left: no
// process, no file descriptor, no temp folder, no memory growth past a generous bound.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { RelayError, _resetRegistry, relay } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { childrenOf, isAlive, processesWithEnv } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'

const BATCHES = 10
const BATCH_SIZE = 10
const TIMEOUT_SECONDS = 0.3
const ABORT_AFTER_MS = 50
/**
 * File descriptors the process may gain once warmed up. The warm-up batch already made the
 * addon's lazily created, long-lived handles (tokio's runtime and signal driver, napi's async
 * handles, blocking-pool threads); what can still come and go is of that kind and bounded, not
 * per relay: 200 relays that each leaked a pipe, a pidfd or the answer file would show up as ≥ 200.
 */
const FD_SLACK = 8
/**
 * RSS may grow this much between the warm-up and the end. V8's heap is not collected on demand
 * (no --expose-gc) and grows in steps of several MB, and glibc keeps freed arenas of the worker
 * threads; a per-relay leak of the 8 MiB output buffers, or of the envelopes, would be far above
 * it (200 × 8 MiB = 1.6 GB; even 200 kB per relay = 40 MB).
 */
const RSS_SLACK_BYTES = 40 * 1024 * 1024

/** In every child's environment, so the processes this file starts can be found in /proc. */
const MARK_KEY = 'PAF_SOAK_MARK'
const MARK = `${process.pid}-${Date.now()}`

let root: string
let relayTmp: string
let logs: string
let fake: FakeClis
let repo: TempRepo
let saved: NodeJS.ProcessEnv
let seq = 0

const baseline = { fds: 0, rss: 0, children: [] as number[] }
/** The `sleep 30 &` pid each relay's fake CLI recorded, when it got that far. */
const grandchildren = new Map<string, number>()

beforeAll(() => {
  saved = { ...process.env }
  for (const key of Object.keys(process.env)) if (key.startsWith('PHONE_A_FRIEND_')) delete process.env[key]
  root = mkdtempSync(join(tmpdir(), 'paf-soak-'))
  relayTmp = join(root, 'relay-tmp')
  logs = join(root, 'logs')
  mkdirSync(relayTmp)
  mkdirSync(logs)
  // Made before TMPDIR points at relayTmp, so that folder holds the relay's temp folders only.
  fake = new FakeClis().mode('hang-with-grandchild')
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  process.env.TMPDIR = relayTmp
  process.env[MARK_KEY] = MARK
  _resetRegistry()
})

afterAll(() => {
  fake.restore()
  repo.remove()
  rmSync(root, { recursive: true, force: true })
  for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key]
  Object.assign(process.env, saved)
})

// ---------------------------------------------------------------------------------------------
// helpers

/** Children of this process, zombies included: a zombie child of ours is one nobody reaped. */
function children(): number[] {
  return childrenOf(process.pid)
}

/** Live (non-zombie) processes other than this one with MARK in their environment. */
function marked(): number[] {
  return processesWithEnv(`${MARK_KEY}=${MARK}`)
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length
}

type Kind = 'timeout' | 'abort'

interface Outcome {
  kind: Kind
  backend: 'codex' | 'gemini'
  log: string
  error: unknown
  /** Milliseconds from the call (timeout) or from the abort (abort) to the rejection. */
  ms: number
  reason?: Error
}

/**
 * Starts one relay with its own FAKE_LOG: the relay snapshots process.env when it is called, so
 * setting the variable just before the call and restoring it just after gives each fake CLI its
 * own log folder, and so its own `grandchild` file, however many run at once.
 */
function start(kind: Kind): Promise<Outcome> {
  seq += 1
  const log = join(logs, `${kind}-${seq}`)
  mkdirSync(log)
  const backend = seq % 2 === 0 ? 'codex' : 'gemini'
  const shared = process.env.FAKE_LOG
  process.env.FAKE_LOG = log
  const started = Date.now()
  let pending: Promise<string>
  let reason: Error | undefined
  let abortedAt = 0
  try {
    if (kind === 'timeout') {
      pending = relay({ prompt: `soak ${seq}`, repoPath: repo.path, backend, timeoutSeconds: TIMEOUT_SECONDS })
    } else {
      const controller = new AbortController()
      reason = new Error(`soak abort ${seq}`)
      const why = reason
      pending = relay({ prompt: `soak ${seq}`, repoPath: repo.path, backend, signal: controller.signal })
      setTimeout(() => {
        abortedAt = Date.now()
        controller.abort(why)
      }, ABORT_AFTER_MS)
    }
  } finally {
    process.env.FAKE_LOG = shared
  }
  return pending.then(
    () => expect.fail(`relay ${seq} answered instead of failing`),
    (error: unknown): Outcome => ({ kind, backend, log, error, reason, ms: Date.now() - (kind === 'timeout' ? started : abortedAt) }),
  )
}

function readGrandchild(log: string): number | undefined {
  try {
    const text = readFileSync(join(log, 'grandchild'), 'utf8')
    return /^\d+\n$/.test(text) ? Number(text) : undefined
  } catch {
    return undefined
  }
}

/** Runs one batch, checks every outcome, records the grandchildren; returns the outcomes. */
async function batch(kind: Kind): Promise<Outcome[]> {
  const outcomes = await Promise.all(Array.from({ length: BATCH_SIZE }, () => start(kind)))
  for (const outcome of outcomes) {
    if (outcome.kind === 'timeout') {
      expect(outcome.error).toBeInstanceOf(RelayError)
      expect(outcome.error).toMatchObject({
        code: 'ERR_BACKEND_TIMEOUT',
        message: `${outcome.backend === 'codex' ? 'codex exec' : 'gemini'} timed out after ${TIMEOUT_SECONDS}s`,
        backend: outcome.backend,
      })
      expect(outcome.ms).toBeGreaterThanOrEqual(TIMEOUT_SECONDS * 1000 - 5)
      expect(outcome.ms).toBeLessThan(5_000)
    } else {
      expect(outcome.error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
      expect((outcome.error as Error).cause).toBe(outcome.reason)
      expect(outcome.ms).toBeLessThan(1_000)
    }
    const pid = readGrandchild(outcome.log)
    if (pid !== undefined) grandchildren.set(outcome.log, pid)
  }
  // By the time a relay has rejected, its process group has been killed: every member is gone
  // or a zombie waiting for init. Checked at once, not polled.
  const survivors = outcomes.map((o) => grandchildren.get(o.log)).filter((pid): pid is number => pid !== undefined && isAlive(pid))
  expect(survivors).toEqual([])
  return outcomes
}

// ---------------------------------------------------------------------------------------------

describe('soak: 200 relays against a CLI that hangs with a grandchild', () => {
  it('warm-up: one batch of each kind, then the baselines', async () => {
    await batch('timeout')
    await batch('abort')
    await vi.waitFor(() => expect(marked()).toEqual([]), { timeout: 5_000, interval: 50 })
    baseline.children = children()
    baseline.fds = openFds()
    baseline.rss = process.memoryUsage().rss
    expect(readdirSync(relayTmp)).toEqual([])
  })

  it(`${BATCHES * BATCH_SIZE} relays time out after ${TIMEOUT_SECONDS}s, ${BATCH_SIZE} at a time`, async () => {
    const before = grandchildren.size
    for (let i = 0; i < BATCHES; i++) await batch('timeout')
    // 0.3 s is ample for every fake CLI to start its grandchild: each one was there to be killed,
    // and each relay had its own log (no pid recorded twice).
    expect(grandchildren.size - before).toBe(BATCHES * BATCH_SIZE)
    expect(new Set(grandchildren.values()).size).toBe(grandchildren.size)
  })

  it(`${BATCHES * BATCH_SIZE} relays are aborted after ~${ABORT_AFTER_MS} ms, ${BATCH_SIZE} at a time`, async () => {
    const before = grandchildren.size
    for (let i = 0; i < BATCHES; i++) await batch('abort')
    // How far each got in 50 ms varies; some surely started their CLI and its grandchild.
    expect(grandchildren.size - before).toBeGreaterThan(0)
  })

  it('afterwards: no process, file descriptor, temp folder or memory left behind', async () => {
    // No grandchild and no CLI alive (zombies waiting for init excluded). A recorded pid counts
    // only while it still carries our marker, so a pid reused by an unrelated process cannot fail it.
    const alive = marked()
    expect([...grandchildren.values()].filter((pid) => alive.includes(pid))).toEqual([])
    await vi.waitFor(() => expect(marked()).toEqual([]), { timeout: 5_000, interval: 50 })
    // Every CLI the relay started was reaped: no child of ours beyond those of the baseline.
    await vi.waitFor(() => expect(children()).toEqual(baseline.children), { timeout: 5_000, interval: 50 })
    // No temp folder (codex's answer folders).
    expect(readdirSync(relayTmp)).toEqual([])
    // No descriptor growth past a small constant.
    expect(openFds()).toBeLessThanOrEqual(baseline.fds + FD_SLACK)
    // Memory stable within a generous bound.
    expect(process.memoryUsage().rss - baseline.rss).toBeLessThan(RSS_SLACK_BYTES)
  })
})
