// The stall watchdog (`idleTimeoutSeconds`, docs/CONTRACT.md §14): a backend that makes no
// progress for the idle time-out is stopped as a time-out stops it, apart from the wall clock;
// what it produces (a CLI's bytes, a JS backend's chunks) is its progress, and a consumer that
// reads slowly is not taken for a stalled backend.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { _resetRegistry, registerBackend, relay, relayStream, type RelayError } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { TempRepo } from './support/git-repo.js'
import { isAlive } from './support/processes.js'
import { skipWithoutSubreaper } from './support/platform.js'
import { runCli } from './support/run-cli.js'

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a JS backend', () => {
  it('that streams a chunk and falls silent is stalled at the idle time-out, its signal aborted', async () => {
    let aborted: unknown
    registerBackend({
      name: 'falls-silent',
      allowedSandboxes: ['read-only'],
      run: async () => 'not called: watched, a backend streams',
      async *runStream({ signal }) {
        yield 'the start'
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        aborted = signal.reason
      },
    })
    const started = Date.now()
    const error = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'falls-silent', idleTimeoutSeconds: 0.3, timeoutSeconds: 60 }).catch((e: unknown) => e)) as RelayError
    expect(error).toMatchObject({ name: 'RelayError', code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled', backend: 'falls-silent', message: 'Backend falls-silent made no progress for 0.3s (idleTimeoutSeconds)' })
    expect(Date.now() - started).toBeLessThan(10_000)
    await vi.waitFor(() => expect(aborted).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT' }))
  })

  it('is stalled at the idle time-out while onProgress hears its heartbeats: they are not its progress', async () => {
    registerBackend({ name: 'silent', allowedSandboxes: ['read-only'], run: () => new Promise<string>(() => {}) })
    const heard: string[] = []
    const error = await relay({ prompt: 'p', repoPath: repo.path, backend: 'silent', idleTimeoutSeconds: 2.5, timeoutSeconds: 60, onProgress: ({ phase }) => heard.push(phase) }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled' })
    // Started, then the same status each second until the stall.
    expect(heard[0]).toBe('starting')
    expect(heard.length).toBeGreaterThanOrEqual(3)
    expect(new Set(heard)).toEqual(new Set(['starting']))
  })

  it('whose run() never settles is stalled too', async () => {
    registerBackend({ name: 'never', allowedSandboxes: ['read-only'], run: () => new Promise<string>(() => {}) })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'never', idleTimeoutSeconds: 0.2 })).rejects.toMatchObject({ code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled' })
  })

  it('that keeps streaming is never stalled, however long it takes', async () => {
    registerBackend({
      name: 'steady',
      allowedSandboxes: ['read-only'],
      run: async () => 'not called: watched, a backend streams',
      async *runStream() {
        for (let i = 0; i < 8; i++) {
          await sleep(100)
          yield `${i}`
        }
      },
    })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'steady', idleTimeoutSeconds: 0.3 })).resolves.toBe('01234567')
  })

  it('is not stalled by a consumer that reads slowly: waiting for the reader stops the clock', async () => {
    const mib = 'x'.repeat(1024 * 1024)
    registerBackend({
      name: 'big-chunks',
      allowedSandboxes: ['read-only'],
      run: async () => 'not called',
      async *runStream() {
        // Each chunk fills the 1 MiB unread budget: the next waits for the reader.
        for (let i = 0; i < 3; i++) yield mib
      },
    })
    const stream = relayStream({ prompt: 'p', repoPath: repo.path, backend: 'big-chunks', idleTimeoutSeconds: 0.2 })
    let read = 0
    for (;;) {
      const step = await stream.next()
      if (step.done) break
      read += step.value.length
      await sleep(600)
    }
    expect(read).toBe(3 * mib.length)
  })

  it('has no watchdog without idleTimeoutSeconds, and a bad value is refused as a bad timeout', async () => {
    registerBackend({ name: 'slow', allowedSandboxes: ['read-only'], run: async () => (await sleep(500), 'late but fine') })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'slow' })).resolves.toBe('late but fine')
    for (const idleTimeoutSeconds of [0, -1, Number.NaN, '5' as unknown as number]) {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'slow', idleTimeoutSeconds })).rejects.toMatchObject({ code: 'ERR_INVALID_TIMEOUT', message: 'Idle timeout must be greater than zero' })
    }
  })
})

const noSubreaper = skipWithoutSubreaper('CLI backends under the supervisor')

describe.skipIf(noSubreaper)('a CLI backend', () => {
  let fake: FakeClis
  beforeEach(() => {
    fake = new FakeClis(['codex', 'gemini'])
  })
  afterEach(() => fake.restore())

  it('that prints a delta and falls silent is stopped with its tree, and the partial answer kept', async () => {
    fake.mode('events-then-hang')
    const started = Date.now()
    const error = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini', idleTimeoutSeconds: 0.5, timeoutSeconds: 60 }).catch((e: unknown) => e)) as RelayError
    expect(error).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled', backend: 'gemini', partialAnswer: 'first words' })
    expect(error.message).toBe('gemini made no progress for 0.5s (idleTimeoutSeconds)')
    expect(Date.now() - started).toBeLessThan(10_000)
    const grandchild = Number(fake.read('grandchild'))
    await vi.waitFor(() => expect(isAlive(grandchild)).toBe(false), { timeout: 3_000 })
  })

  it('whose events come slower than never but faster than the idle time-out answers', async () => {
    fake.mode('events').gap(0.2)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini', idleTimeoutSeconds: 0.6 })).resolves.toBe('Hello, wörld 😀!')
  })

  it('the CLI sets 300 s by default, takes --idle-timeout, 0 for none, and says why in --json', async () => {
    fake.mode('hang-with-grandchild')
    const stalled = await runCli(['--prompt', 'p', '--to', 'codex', '--idle-timeout', '0.4', '--json'], { cwd: repo.path })
    expect(stalled.code).toBe(1)
    const printed = JSON.parse(stalled.stdout) as { ok: boolean; error: { code: string; message: string; reason: string } }
    expect(printed).toMatchObject({ ok: false, error: { code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled', message: 'codex exec made no progress for 0.4s (idleTimeoutSeconds)' } })
    const grandchild = Number(fake.read('grandchild'))
    await vi.waitFor(() => expect(isAlive(grandchild)).toBe(false), { timeout: 3_000 })
    const dryRun = await runCli(['--prompt', 'p', '--to', 'ollama', '--model', 'm', '--dry-run', '--json'], { cwd: repo.path })
    // Watched, Ollama is asked for its tokens as they come: they are its progress.
    expect((JSON.parse(dryRun.stdout) as { dryRun: { action: { body: { stream: boolean } } } }).dryRun.action.body.stream).toBe(true)
    const off = await runCli(['--prompt', 'p', '--to', 'ollama', '--model', 'm', '--dry-run', '--json', '--idle-timeout', '0'], { cwd: repo.path })
    expect((JSON.parse(off.stdout) as { dryRun: { action: { body: { stream: boolean } } } }).dryRun.action.body.stream).toBe(false)
    const bad = await runCli(['--prompt', 'p', '--idle-timeout', '5m'], { cwd: repo.path })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('invalid --idle-timeout value "5m": expected a number of seconds, like 300, or 0 for none')
  })
})
