// A relay to a JS backend whose preparation waits on nothing (no context file, diff, session or
// schema) never leaves the JS thread. It must behave exactly as the asynchronous path, which
// the same relay takes with `includeDiff: true`: the same answers, the same errors (the very
// same thrown values), the same timeout, grace and abort behaviour.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BackendError, RelayError, _resetRegistry, registerBackend, relay, type BackendRunOptions, type RelayOptions } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo.js'

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

/** The two paths: on the JS thread, and (the diff makes preparation run git) off it. */
const PATHS = [
  { path: 'on the JS thread', extra: {} },
  { path: 'through the runtime', extra: { includeDiff: true } },
] as const

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown }

async function settle(pending: Promise<unknown>): Promise<Settled> {
  return pending.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  )
}

function relayTo(backend: string, options: Partial<RelayOptions> = {}, extra: Partial<RelayOptions> = {}): Promise<string> {
  return relay({ prompt: 'p', repoPath: repo.path, backend, ...options, ...extra })
}

/** What the caller can observe of an error. */
function shape(error: unknown): unknown {
  if (!(error instanceof Error)) return { value: error }
  const { name, message } = error
  const { code, backend, cause } = error as RelayError
  return { name, message, code, backend, causeName: (cause as Error | undefined)?.name, causeMessage: (cause as Error | undefined)?.message }
}

describe('a relay to a JS backend that waits on nothing stays on the JS thread', () => {
  it('settles before the event loop turns (no thread hop); with a diff to read it does not', async () => {
    registerBackend({ name: 'instant', allowedSandboxes: ['read-only'], run: async () => 'answer' })
    for (const { extra, turns } of [
      { extra: {}, turns: false },
      { extra: { includeDiff: true }, turns: true },
    ]) {
      let turned = false
      const immediate = setImmediate(() => {
        turned = true
      })
      await expect(relayTo('instant', {}, extra)).resolves.toBe('answer')
      clearImmediate(immediate)
      expect(turned).toBe(turns)
    }
  })

  it('hands the backend the same options either way (envelope aside)', async () => {
    const seen: BackendRunOptions[] = []
    registerBackend({ name: 'records', allowedSandboxes: ['read-only', 'workspace-write'], run: async (options) => (seen.push(options), 'ok') })
    for (const { extra } of PATHS) await relayTo('records', { model: 'm', sandbox: 'workspace-write', timeoutSeconds: 42 }, extra)
    const [direct, runtime] = seen.map(({ prompt, signal, env, ...rest }) => ({ ...rest, depth: env.PHONE_A_FRIEND_DEPTH, path: env.PATH, prompt: prompt.slice(0, 40), signal: signal instanceof AbortSignal }))
    expect(direct).toEqual({ ...runtime, prompt: direct.prompt })
    expect(direct).toMatchObject({ repoPath: repo.path, model: 'm', sandbox: 'workspace-write', timeoutSeconds: 42, depth: '1', path: process.env.PATH, signal: true })
    expect('schema' in direct).toBe(false)
  })
})

describe('relays on the JS thread take turns with the event loop', () => {
  it('a loop of relays to a backend that answers at once still lets timers run', async () => {
    registerBackend({ name: 'instant', allowedSandboxes: ['read-only'], run: async () => 'ok' })
    let relays = 0
    // How many relays were done each time a 1 ms interval ran.
    const ticks: number[] = []
    const timer = setInterval(() => ticks.push(relays), 1)
    const until = performance.now() + 300
    // Never leaves the microtask queue by itself: without turns, no timer would run for 300 ms.
    while (performance.now() < until) {
      await relayTo('instant')
      relays++
    }
    clearInterval(timer)
    expect(relays).toBeGreaterThan(100)
    // The timer ran between relays, again and again through the loop, not only before or after it.
    const during = new Set(ticks.filter((done) => done > 0 && done < relays))
    expect(during.size).toBeGreaterThanOrEqual(10)
  })

  it('2000 relays started at once run in order, over several turns of the loop', async () => {
    const order: string[] = []
    registerBackend({
      name: 'later',
      allowedSandboxes: ['read-only'],
      run: async ({ prompt }) => {
        order.push(/request (\d+)/.exec(prompt)?.[1] ?? '?')
        return new Promise((resolve) => setTimeout(() => resolve('ok'), 50))
      },
    })
    const pending = Array.from({ length: 2000 }, (_, i) => relayTo('later', { prompt: `request ${i}` }))
    let calledWhenLoopTurned = -1
    setImmediate(() => {
      calledWhenLoopTurned = order.length
    })
    const answers = await Promise.all(pending)
    expect(answers).toHaveLength(2000)
    expect(new Set(answers)).toEqual(new Set(['ok']))
    expect(order).toEqual(Array.from({ length: 2000 }, (_, i) => String(i)))
    // Some ran before the loop turned, the rest after: starting them did not run them all.
    expect(calledWhenLoopTurned).toBeGreaterThan(0)
    expect(calledWhenLoopTurned).toBeLessThan(2000)
  })
})

describe('both paths settle the same way', () => {
  const outcomes: Array<[string, (options: BackendRunOptions) => Promise<string>]> = [
    ['an answer', async () => 'the answer'],
    ['an answer with a NUL and lone surrogates (they become U+FFFD)', async () => 'a\0b\uD800c\uDC00d \uD83D\uDE00'],
    ['a BackendError', async () => Promise.reject(new BackendError('model overloaded'))],
    ['a RelayError the backend throws', async () => Promise.reject(new RelayError('custom', 'ERR_BACKEND_FAILED'))],
    ['a TypeError thrown synchronously', () => {
      throw new TypeError('bad backend')
    }],
    ['a string thrown', async () => Promise.reject('plain string')],
    ['an answer that is not a string', async () => 42 as unknown as string],
  ]

  for (const [what, run] of outcomes) {
    it(what, async () => {
      const thrown: unknown[] = []
      registerBackend({
        name: 'b',
        allowedSandboxes: ['read-only'],
        run: async (options) => {
          try {
            return await run(options)
          } catch (error) {
            thrown.push(error)
            throw error
          }
        },
      })
      const [direct, runtime] = [await settle(relayTo('b')), await settle(relayTo('b', {}, { includeDiff: true }))]
      expect(direct.ok).toBe(runtime.ok)
      if (direct.ok && runtime.ok) {
        expect(direct.value).toBe(runtime.value)
        expect(String(direct.value).isWellFormed()).toBe(true)
        return
      }
      if (direct.ok || runtime.ok) return
      expect(shape(direct.error)).toEqual(shape(runtime.error))
      // A value the backend threw comes back as that very value; a BackendError as the cause.
      if (thrown.length === 2 && !(thrown[0] instanceof BackendError)) {
        expect(direct.error).toBe(thrown[0])
        expect(runtime.error).toBe(thrown[1])
      }
      if (thrown[0] instanceof BackendError) {
        expect((direct.error as RelayError).cause).toBe(thrown[0])
        expect(direct.error).toMatchObject({ code: 'ERR_BACKEND_FAILED', backend: 'b', message: 'model overloaded' })
      }
    })
  }

  it('a check that fails: the same error (repository, sandbox, prompt size, blank prompt)', async () => {
    registerBackend({ name: 'b', allowedSandboxes: ['read-only'], run: async () => 'ok' })
    const cases: Array<Partial<RelayOptions>> = [
      { repoPath: `${repo.path}/missing` },
      { sandbox: 'danger-full-access' },
      { prompt: 'x'.repeat(500_001) },
      { prompt: '   ' },
      { timeoutSeconds: -1 },
    ]
    for (const options of cases) {
      const errors = []
      for (const { extra } of PATHS) {
        const settled = await settle(relayTo('b', options, extra))
        expect(settled.ok).toBe(false)
        if (!settled.ok) errors.push(shape(settled.error))
      }
      expect(errors[0]).toEqual(errors[1])
      expect(errors[0]).toMatchObject({ name: 'RelayError' })
    }
  })

  it('a backend that ignores its signal is given up a grace (1 s) after its timeout: ERR_BACKEND_TIMEOUT', async () => {
    const aborted: number[] = []
    registerBackend({
      name: 'deaf',
      allowedSandboxes: ['read-only'],
      run: ({ signal }) => {
        const started = Date.now()
        signal.addEventListener('abort', () => aborted.push(Date.now() - started))
        return new Promise(() => {})
      },
    })
    for (const { extra } of PATHS) {
      const started = Date.now()
      const settled = await settle(relayTo('deaf', { timeoutSeconds: 0.2 }, extra))
      const took = Date.now() - started
      expect(settled.ok).toBe(false)
      if (!settled.ok) expect(shape(settled.error)).toEqual({ name: 'RelayError', message: 'deaf timed out after 0.2s', code: 'ERR_BACKEND_TIMEOUT', backend: 'deaf', causeName: 'BackendError', causeMessage: 'deaf timed out after 0.2s' })
      expect(took).toBeGreaterThanOrEqual(1150)
      // Generous: it is given up on, not waited for.
      expect(took).toBeLessThan(5_000)
    }
    expect(aborted).toHaveLength(2)
    for (const at of aborted) expect(at).toBeGreaterThanOrEqual(150)
    // Told at the timeout, before the grace (1 s) that follows it has passed.
    for (const at of aborted) expect(at).toBeLessThan(1_150)
  })

  it('the caller aborting: an AbortError with its reason at once, and the backend told', async () => {
    const told: unknown[] = []
    registerBackend({
      name: 'slow',
      allowedSandboxes: ['read-only'],
      run: ({ signal }) => new Promise(() => signal.addEventListener('abort', () => told.push(signal.reason))),
    })
    for (const { extra } of PATHS) {
      const controller = new AbortController()
      const reason = new Error('enough')
      const pending = settle(relayTo('slow', { signal: controller.signal }, extra))
      setTimeout(() => controller.abort(reason), 50)
      const started = Date.now()
      const settled = await pending
      // Not a grace (1 s) later: the backend never settles, yet the caller has its answer.
      expect(Date.now() - started).toBeLessThan(1_000)
      expect(settled.ok).toBe(false)
      if (!settled.ok) expect(settled.error).toMatchObject({ name: 'AbortError', cause: reason })
    }
    expect(told).toHaveLength(2)
    for (const reason of told) expect(reason).toMatchObject({ message: 'enough' })
  })

  it('a timeout longer than Node\'s longest timer (24.8 days) does not fire early', async () => {
    const signals: AbortSignal[] = []
    registerBackend({
      name: 'patient',
      allowedSandboxes: ['read-only'],
      run: ({ signal }) => {
        signals.push(signal)
        return new Promise((resolve) => setTimeout(() => resolve('in time'), 100))
      },
    })
    for (const { extra } of PATHS) await expect(relayTo('patient', { timeoutSeconds: 40 * 24 * 3600 }, extra)).resolves.toBe('in time')
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false])
  })
})
