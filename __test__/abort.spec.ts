import { getEventListeners } from 'node:events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, registerBackend, relay, reviewRelay, type BackendRunOptions } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

/** A backend that never settles on its own, and records the options it got. */
function hangingBackend(name = 'hang'): MockBackend {
  const mock = new MockBackend(name, () => new Promise<string>(() => undefined))
  registerBackend(mock)
  return mock
}

describe('AbortSignal', () => {
  it('an already-aborted signal rejects with an AbortError before anything runs', async () => {
    const mock = hangingBackend()
    const reason = new Error('user gave up')
    const error = await relay({ prompt: 'p', repoPath: repo.path, backend: 'hang', signal: AbortSignal.abort(reason) }).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', message: 'The operation was aborted' })
    expect((error as Error).cause).toBe(reason)
    expect(mock.runs).toHaveLength(0)
  })

  it('an abort mid-flight rejects at once, and the backend sees the signal', async () => {
    const mock = hangingBackend()
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, backend: 'hang', signal: controller.signal })
    await expect.poll(() => mock.runs.length).toBe(1)
    const runOptions: BackendRunOptions = mock.runs[0]
    // Its own signal (it also aborts on timeout), aborted with the caller's reason.
    expect(runOptions.signal).toBeInstanceOf(AbortSignal)
    expect(runOptions.signal.aborted).toBe(false)
    controller.abort('stop')
    const error = await pending.catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: 'stop' })
    await expect.poll(() => runOptions.signal.aborted).toBe(true)
    expect(runOptions.signal.reason).toBe('stop')
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('an abort during a native review rejects too', async () => {
    const mock = new MockBackend('native', undefined, { review: () => new Promise<string>(() => undefined) })
    registerBackend(mock)
    const controller = new AbortController()
    const pending = reviewRelay({ repoPath: repo.path, backend: 'native', base: 'HEAD', signal: controller.signal })
    await expect.poll(() => mock.reviews.length).toBe(1)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    expect(mock.runs).toHaveLength(0)
  })

  it('a signal that never fires changes nothing and leaves no listener behind', async () => {
    registerBackend(new MockBackend('quick'))
    const controller = new AbortController()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'quick', signal: controller.signal })).resolves.toBe('mock answer')
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    controller.abort()
  })

  it('one signal shared by 20 relays in flight trips no MaxListenersExceededWarning, aborts them all and keeps no listener', async () => {
    const warnings: Error[] = []
    const onWarning = (warning: Error): void => void warnings.push(warning)
    process.on('warning', onWarning)
    try {
      // On the JS thread (no diff) and through the native core (a diff to read): each path listens.
      for (const includeDiff of [false, true]) {
        const mock = hangingBackend(`hang-${includeDiff}`)
        const controller = new AbortController()
        const pending = Array.from({ length: 20 }, () => relay({ prompt: 'p', repoPath: repo.path, backend: mock.name, includeDiff, signal: controller.signal }).catch((e: unknown) => e))
        await expect.poll(() => mock.runs.length).toBe(20)
        expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1)
        controller.abort('stop')
        for (const error of await Promise.all(pending)) expect(error).toMatchObject({ name: 'AbortError', cause: 'stop' })
        expect(mock.runs.every((options) => options.signal.aborted)).toBe(true)
      }
      const settling = new AbortController()
      registerBackend(new MockBackend('quick'))
      await Promise.all(Array.from({ length: 20 }, (_, i) => relay({ prompt: 'p', repoPath: repo.path, backend: 'quick', includeDiff: i % 2 === 0, signal: settling.signal })))
      expect(getEventListeners(settling.signal, 'abort')).toHaveLength(0)
      // A warning is emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings.map(({ name, message }) => `${name}: ${message}`)).toEqual([])
  })

  it('something that is not an AbortSignal is a TypeError', async () => {
    await expect(relay({ prompt: 'p', repoPath: repo.path, signal: {} as AbortSignal })).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    })
  })
})

describe('a JS backend that never settles', () => {
  it('is given up one second after its timeout with ERR_BACKEND_TIMEOUT', async () => {
    hangingBackend()
    const started = Date.now()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'hang', timeoutSeconds: 0.2 })).rejects.toMatchObject({
      name: 'RelayError',
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'hang timed out after 0.2s',
      backend: 'hang',
    })
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_150)
  })
})
