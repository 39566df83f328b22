// How long a backend's work may live: a JS backend is told (through its signal) when the relay
// gives up on it; what it throws comes back unchanged however hostile; a relay started from inside
// a JS backend is refused like one started from a relayed CLI; a terminated worker takes its
// backends with it; gemini gets the repository only as its working directory.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  BackendError,
  RelayError,
  _resetRegistry,
  registerBackend,
  relay,
  relayAll,
  relayStream,
  reviewRelay,
  type BackendRunOptions,
} from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { TempRepo } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'
import { isAlive, processesWithEnv } from './support/processes.js'

const ENTRY = resolve(__dirname, '..')

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

/**
 * What the promise rejected with, boxed: resolving a promise with the value itself would look up
 * its `then` (which throws for a revoked Proxy). Fails the test if it resolved.
 */
function boxedRejectionOf(pending: Promise<unknown>): Promise<{ error: unknown }> {
  return pending.then(
    (value) => expect.fail(`expected a rejection, got ${String(value)}`),
    (error: unknown) => ({ error }),
  )
}

async function rejectionOf(pending: Promise<unknown>): Promise<unknown> {
  return (await boxedRejectionOf(pending)).error
}

/** A backend whose run() (and review()) wait for their signal and reject with its reason. */
function signalWaiter(name: string): { aborted: Array<{ at: number; reason: unknown; startedAt: number }>; signals: AbortSignal[] } {
  const seen = { aborted: [] as Array<{ at: number; reason: unknown; startedAt: number }>, signals: [] as AbortSignal[] }
  const wait = ({ signal }: { signal?: AbortSignal }): Promise<string> => {
    const startedAt = Date.now()
    if (!signal) return Promise.reject(new Error('no signal given'))
    seen.signals.push(signal)
    return new Promise((_, reject) => {
      signal.addEventListener('abort', () => {
        seen.aborted.push({ at: Date.now(), reason: signal.reason, startedAt })
        reject(signal.reason)
      }, { once: true })
    })
  }
  registerBackend({ name, allowedSandboxes: ['read-only'], run: wait, review: wait })
  return seen
}

describe('1. a JS backend is told through its signal when the relay gives up on it', () => {
  it('the signal aborts at the relay timeout (0.3 s) with a RelayError ERR_BACKEND_TIMEOUT, which the caller gets back', async () => {
    const seen = signalWaiter('waits')
    const error = await rejectionOf(relay({ prompt: 'p', repoPath: repo.path, backend: 'waits', timeoutSeconds: 0.3 }))
    expect(seen.aborted).toHaveLength(1)
    const [{ at, reason, startedAt }] = seen.aborted
    expect(at - startedAt).toBeGreaterThanOrEqual(250)
    // At the timeout, not when the relay would give up on a backend that ignores it (a 1 s grace later).
    expect(at - startedAt).toBeLessThan(1_000)
    expect(reason).toBeInstanceOf(RelayError)
    expect(reason).toMatchObject({ name: 'RelayError', code: 'ERR_BACKEND_TIMEOUT', message: 'waits timed out after 0.3s', backend: 'waits' })
    // The backend rejected with the reason it was given: that is what the caller sees, at once.
    expect(error).toBe(reason)
  })

  it('a native review() gets the same signal behaviour', async () => {
    const seen = signalWaiter('waits')
    const error = await rejectionOf(reviewRelay({ repoPath: repo.path, backend: 'waits', base: 'HEAD', timeoutSeconds: 0.3 }))
    expect(seen.aborted.length).toBeGreaterThanOrEqual(1)
    const [{ at, reason, startedAt }] = seen.aborted
    expect(at - startedAt).toBeGreaterThanOrEqual(250)
    expect(at - startedAt).toBeLessThan(1_000)
    expect(reason).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT', message: 'waits timed out after 0.3s' })
    // A RelayError from review() is rethrown, never a reason to fall back.
    expect(error).toBe(reason)
  })

  it('the signal aborts once the caller aborts, with the caller\'s reason', async () => {
    const seen = signalWaiter('waits')
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, backend: 'waits', signal: controller.signal })
    await vi.waitFor(() => expect(seen.signals).toHaveLength(1))
    const signal = seen.signals[0]
    expect(signal).not.toBe(controller.signal)
    expect(signal.aborted).toBe(false)
    const reason = new Error('caller gave up')
    const abortedAt = Date.now()
    controller.abort(reason)
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason })
    // Told after the caller aborted (not before) and without waiting out any grace.
    await vi.waitFor(() => expect(seen.aborted).toHaveLength(1), { timeout: 1_000, interval: 5 })
    expect(seen.aborted[0].at).toBeGreaterThanOrEqual(abortedAt)
    expect(seen.aborted[0].reason).toBe(reason)
  })

  it('after a normal answer the signal never aborts, not even once the timeout has passed', async () => {
    const signals: AbortSignal[] = []
    registerBackend(new MockBackend('quick', ({ signal }: BackendRunOptions) => {
      if (signal) signals.push(signal)
      return 'quick answer'
    }))
    const controller = new AbortController()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'quick', timeoutSeconds: 0.2, signal: controller.signal })).resolves.toBe('quick answer')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'quick', timeoutSeconds: 0.2 })).resolves.toBe('quick answer')
    expect(signals).toHaveLength(2)
    // A relay started after them with the same timeout, to a backend that waits: once its signal has
    // aborted at that timeout, theirs would have too.
    const waiter = signalWaiter('waits')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'waits', timeoutSeconds: 0.2 })).rejects.toMatchObject({ code: 'ERR_BACKEND_TIMEOUT' })
    expect(waiter.aborted).toHaveLength(1)
    controller.abort()
    for (const signal of signals) expect(signal.aborted).toBe(false)
  })
})

describe('1b. an answer that comes once the timeout has passed is ERR_BACKEND_TIMEOUT, whatever it says', () => {
  /** run(), runStream() and review() resolve with 'aborted' as soon as their signal aborts. */
  function answersWhenAborted(name: string): string[] {
    const events: string[] = []
    const wait = ({ signal }: { signal: AbortSignal }): Promise<string> =>
      new Promise((resolve) => signal.addEventListener('abort', () => {
        events.push('aborted')
        resolve('aborted')
      }, { once: true }))
    registerBackend({
      name,
      allowedSandboxes: ['read-only'],
      run: wait,
      review: wait,
      async *runStream(options) {
        yield 'partial '
        yield await wait(options)
      },
    })
    return events
  }

  const timedOut = { name: 'RelayError', code: 'ERR_BACKEND_TIMEOUT', message: 'late timed out after 0.3s', backend: 'late' }

  it('relay(), on the JS thread and through the runtime', async () => {
    const events = answersWhenAborted('late')
    for (const extra of [{}, { includeDiff: true }]) {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'late', timeoutSeconds: 0.3, ...extra })).rejects.toMatchObject(timedOut)
    }
    expect(events).toEqual(['aborted', 'aborted'])
  })

  it('reviewRelay(), natively and through the generic path', async () => {
    const events = answersWhenAborted('late')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'late', base: 'HEAD', timeoutSeconds: 0.3 })).rejects.toMatchObject(timedOut)
    await expect(reviewRelay({ repoPath: repo.path, backend: 'late', base: 'HEAD', timeoutSeconds: 0.3, schema: { type: 'string' } })).rejects.toMatchObject(timedOut)
    expect(events).toEqual(['aborted', 'aborted'])
  })

  it('relayStream() and relay({ onChunk })', async () => {
    const events = answersWhenAborted('late')
    const chunks: string[] = []
    const stream = relayStream({ prompt: 'p', repoPath: repo.path, backend: 'late', timeoutSeconds: 0.3 })
    await expect((async () => {
      for await (const chunk of stream) chunks.push(chunk)
    })()).rejects.toMatchObject(timedOut)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'late', timeoutSeconds: 0.3, onChunk: (chunk) => chunks.push(chunk) })).rejects.toMatchObject(timedOut)
    expect(events).toEqual(['aborted', 'aborted'])
    expect(chunks).toEqual(['partial ', 'partial '])
  })

  it('relayAll()', async () => {
    const events = answersWhenAborted('late')
    const results = await relayAll({ prompt: 'p', repoPath: repo.path, backends: ['late', 'late'], timeoutSeconds: 0.3 })
    expect(results).toHaveLength(2)
    for (const result of results) {
      expect(result.ok).toBe(false)
      if (!result.ok) expect(result.error).toMatchObject(timedOut)
    }
    expect(events).toEqual(['aborted', 'aborted'])
  })

  it('an answer of a backend that kept the thread busy past its time, on both paths', async () => {
    registerBackend({
      name: 'late',
      allowedSandboxes: ['read-only'],
      run: () => {
        const until = performance.now() + 500
        while (performance.now() < until) {
          // Busy: no timer can fire before this returns.
        }
        return Promise.resolve('done, but late')
      },
    })
    for (const extra of [{}, { includeDiff: true }]) {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'late', timeoutSeconds: 0.3, ...extra })).rejects.toMatchObject(timedOut)
    }
  })
})

describe('2. a thrown value comes back as the very same value, even when inspecting it throws', () => {
  const inspectionThrows = (): Error => new Error('inspection is not allowed')
  const cases: Array<[string, () => unknown]> = [
    ['an Error whose message getter throws', () => {
      const error = new Error()
      Object.defineProperty(error, 'message', { get: () => { throw inspectionThrows() } })
      return error
    }],
    ['a BackendError whose message getter throws (not inspectable: not coded)', () => {
      const error = new BackendError()
      Object.defineProperty(error, 'message', { get: () => { throw inspectionThrows() } })
      return error
    }],
    ['a revoked Proxy', () => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      return proxy
    }],
    ['a Proxy whose getPrototypeOf trap throws', () => new Proxy({}, { getPrototypeOf: () => { throw inspectionThrows() } })],
  ]

  it.each(cases)('%s, thrown synchronously or rejected', async (_label, make) => {
    const thrown = make()
    registerBackend({ name: 'sync', allowedSandboxes: ['read-only'], run(): Promise<string> { throw thrown } })
    registerBackend({ name: 'async', allowedSandboxes: ['read-only'], run: async () => { throw thrown } })
    for (const backend of ['sync', 'async']) {
      const { error: caught } = await boxedRejectionOf(relay({ prompt: 'p', repoPath: repo.path, backend }))
      // Not toBe: printing a revoked Proxy on failure would throw inside the matcher.
      expect(caught === thrown).toBe(true)
    }
  })
})

describe('3. a relay started from inside a JS backend is refused in-process (ERR_DEPTH_LIMIT)', () => {
  const nestings: Array<[string, (start: () => Promise<string>) => Promise<string>]> = [
    ['directly from run()', (start) => start()],
    ['from a setTimeout callback', (start) => new Promise((done, fail) => setTimeout(() => start().then(done, fail), 10))],
    ['down a promise chain', (start) => Promise.resolve().then(() => null).then(() => start())],
    ['after an await of other work', async (start) => { await new Promise((done) => setImmediate(done)); return start() }],
  ]

  it.each(nestings)('%s', async (_label, nest) => {
    const leaf = new MockBackend('leaf')
    registerBackend(leaf)
    const inner: unknown[] = []
    registerBackend(new MockBackend('outer', () => nest(() => relay({ prompt: 'inner', repoPath: repo.path, backend: 'leaf' })).catch((error: unknown) => {
      inner.push(error)
      return 'outer answer'
    })))
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'outer' })).resolves.toBe('outer answer')
    expect(inner).toHaveLength(1)
    expect(inner[0]).toBeInstanceOf(RelayError)
    expect(inner[0]).toMatchObject({ code: 'ERR_DEPTH_LIMIT', message: 'Relay depth limit reached; refusing nested relay invocation' })
    expect(leaf.runs).toHaveLength(0)
    // Nothing leaked into the process or into later calls.
    expect(process.env.PHONE_A_FRIEND_DEPTH).toBeUndefined()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'leaf' })).resolves.toBe('mock answer')
    expect(leaf.runs[0].env.PHONE_A_FRIEND_DEPTH).toBe('1')
  })

  it('reviewRelay() from inside a native review() is refused too', async () => {
    const leaf = new MockBackend('leaf', undefined, { review: () => 'leaf review' })
    registerBackend(leaf)
    const inner: unknown[] = []
    registerBackend(new MockBackend('reviewer', undefined, {
      review: () => reviewRelay({ repoPath: repo.path, backend: 'leaf', base: 'HEAD' }).catch((error: unknown) => {
        inner.push(error)
        return 'review answer'
      }),
    }))
    await expect(reviewRelay({ repoPath: repo.path, backend: 'reviewer', base: 'HEAD' })).resolves.toBe('review answer')
    expect(inner).toHaveLength(1)
    expect(inner[0]).toMatchObject({ name: 'RelayError', code: 'ERR_DEPTH_LIMIT' })
    expect(leaf.reviews).toHaveLength(0)
    expect(leaf.runs).toHaveLength(0)
  })

  it('the checks before the depth guard still come first', async () => {
    const inner: unknown[] = []
    registerBackend(new MockBackend('outer', () => relay({ prompt: ' ', repoPath: repo.path, backend: 'outer' }).catch((error: unknown) => {
      inner.push(error)
      return 'outer answer'
    })))
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'outer' })
    expect(inner[0]).toMatchObject({ code: 'ERR_PROMPT_REQUIRED' })
  })
})

describe('4. worker.terminate() ends the relays the worker started', () => {
  it('a fake codex (and its grandchild) started from a worker is dead within 2 s of terminate()', async () => {
    const fake = new FakeClis(['codex']).mode('hang-with-grandchild')
    const tmp = mkdtempSync(join(tmpdir(), 'paf-worker-tmp-'))
    const mark = `paf-lifetime-${process.pid}-${Date.now()}`
    const code = `
      const api = require(${JSON.stringify(ENTRY)})
      api.registerBackend({ name: 'hangs', allowedSandboxes: ['read-only'], run: () => new Promise(() => {}) })
      api.relay({ prompt: 'p', repoPath: ${JSON.stringify(repo.path)}, backend: 'hangs', timeoutSeconds: 120 }).catch(() => {})
      api.relay({ prompt: 'p', repoPath: ${JSON.stringify(repo.path)}, timeoutSeconds: 120 }).catch(() => {})
    `
    const worker = new Worker(code, { eval: true, env: { ...process.env, TMPDIR: tmp, PAF_LIFETIME_MARK: mark } })
    try {
      const grandchildFile = join(fake.log, 'grandchild')
      await vi.waitFor(() => expect(existsSync(grandchildFile) && /^\d+\n$/.test(readFileSync(grandchildFile, 'utf8'))).toBe(true), { timeout: 10_000, interval: 20 })
      const grandchild = Number(fake.read('grandchild'))
      expect(isAlive(grandchild)).toBe(true)
      expect(processesWithEnv(mark).length).toBeGreaterThanOrEqual(2)
      expect(readdirSync(tmp)).toHaveLength(1)
      await worker.terminate()
      await vi.waitFor(() => {
        expect(isAlive(grandchild)).toBe(false)
        expect(processesWithEnv(mark)).toEqual([])
      }, { timeout: 2_000, interval: 20 })
      await vi.waitFor(() => expect(readdirSync(tmp)).toEqual([]), { timeout: 2_000, interval: 20 })
      // This thread's own relays still work.
      registerBackend(new MockBackend('after'))
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'after' })).resolves.toBe('mock answer')
    } finally {
      await worker.terminate()
      for (const pid of processesWithEnv(mark)) process.kill(pid, 'SIGKILL')
      fake.restore()
      rmSync(tmp, { recursive: true, force: true })
    }
  })
})

describe('5. gemini runs in the repository without naming it in argv', () => {
  it('a repository path containing a comma reaches gemini only as its cwd', async () => {
    const fake = new FakeClis(['gemini']).mode('stdout-only')
    const parent = mkdtempSync(join(tmpdir(), 'paf-comma-'))
    const commaRepo = join(parent, 'proj,etc')
    mkdirSync(commaRepo)
    try {
      await expect(relay({ prompt: 'p', repoPath: commaRepo, backend: 'gemini' })).resolves.toBe('stdout answer')
      expect(fake.args()).toEqual(['--approval-mode', 'plan', '--skip-trust', '--output-format', 'stream-json', '--prompt', ''])
      expect(fake.args().some((arg) => arg.includes(parent))).toBe(false)
      expect(fake.read('cwd').trim()).toBe(commaRepo)
    } finally {
      fake.restore()
      rmSync(parent, { recursive: true, force: true })
    }
  })
})
