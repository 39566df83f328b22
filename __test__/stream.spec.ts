// docs/CONTRACT.md §10 through the public API: relayStream() and onChunk, with JS backends (run,
// runStream) and a CLI backend: chunks as produced, the same checks and answer as relay(),
// cancellation, backpressure, a throwing onChunk.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { RelayError, _resetRegistry, registerBackend, relay, relayStream, reviewRelay, type BackendRunOptions } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { isAlive, processesWithEnv } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => {
  _resetRegistry()
  repo.remove()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A JS backend whose runStream yields `chunks` with `gapMs` between them, and records what happened. */
function streamingBackend(name: string, chunks: string[], gapMs = 0) {
  const seen = { runs: 0, streams: 0, yielded: 0, aborted: false as boolean, finished: false, ended: false as boolean }
  registerBackend({
    name,
    allowedSandboxes: ['read-only'],
    run: async () => {
      seen.runs++
      return chunks.join('')
    },
    async *runStream(options: BackendRunOptions) {
      seen.streams++
      options.signal.addEventListener('abort', () => (seen.aborted = true))
      try {
        for (const chunk of chunks) {
          if (gapMs) await sleep(gapMs)
          if (options.signal.aborted) return
          seen.yielded++
          yield chunk
        }
        seen.finished = true
      } finally {
        // However it stops: done, returned early, or closed by the relay.
        seen.ended = true
      }
    },
  })
  return seen
}

async function collect(stream: AsyncGenerator<string, string, undefined>): Promise<{ chunks: string[]; answer: string }> {
  const chunks: string[] = []
  for (;;) {
    const step = await stream.next()
    if (step.done) return { chunks, answer: step.value }
    chunks.push(step.value)
  }
}

describe('relayStream()', () => {
  it('yields a runStream backend’s chunks as they come and returns what relay() answers', async () => {
    const seen = streamingBackend('chunky', ['Hel', 'lo, ', 'wor', 'ld'], 30)
    const stream = relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'chunky' })
    const first = await stream.next()
    // The first chunk arrives while the backend still has chunks to yield.
    const { yielded, finished } = seen
    const rest = await collect(stream)
    expect(first).toEqual({ done: false, value: 'Hel' })
    expect(rest).toEqual({ chunks: ['lo, ', 'wor', 'ld'], answer: 'Hello, world' })
    expect(yielded).toBeLessThan(4)
    expect(finished).toBe(false)
    await expect(relay({ prompt: 'hi', repoPath: repo.path, backend: 'chunky' })).resolves.toBe('Hello, world')
    expect(seen).toMatchObject({ streams: 1, runs: 1, finished: true })
  })

  it('streams a backend without runStream as one chunk: run()’s answer', async () => {
    registerBackend({ name: 'plain', allowedSandboxes: ['read-only'], run: async () => 'whole answer' })
    expect(await collect(relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'plain' }))).toEqual({ chunks: ['whole answer'], answer: 'whole answer' })
  })

  it('starts nothing before the first next(), and a failed check rejects it with the same code', async () => {
    const seen = streamingBackend('idle', ['x'])
    const waiting = relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'idle' })
    // A stream made after it runs to its end (they start in order): this one has still not started.
    await expect(collect(relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'idle' }))).resolves.toEqual({ chunks: ['x'], answer: 'x' })
    expect(seen.streams).toBe(1)
    await expect(waiting.next()).resolves.toEqual({ done: false, value: 'x' })
    expect(seen.streams).toBe(2)
    await waiting.return('')
    const stream = relayStream({ prompt: '   ', repoPath: repo.path, backend: 'idle' })
    await expect(stream.next()).rejects.toMatchObject({ name: 'RelayError', code: 'ERR_PROMPT_REQUIRED' })
    await expect(stream.next()).resolves.toEqual({ done: true, value: undefined })
    const badType = relayStream({ prompt: 'hi', repoPath: 42 } as never)
    await expect(badType.next()).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
    for (const [options, code] of [
      [{ prompt: 'hi', repoPath: repo.path, timeoutSeconds: 0 }, 'ERR_INVALID_TIMEOUT'],
      [{ prompt: 'hi', repoPath: '/no/such/dir' }, 'ERR_INVALID_REPO'],
      [{ prompt: 'hi', repoPath: repo.path, backend: 'nope' }, 'ERR_UNSUPPORTED_BACKEND'],
    ] as const) {
      const error = await relayStream(options).next().catch((e: unknown) => e)
      const same = await relay(options).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(RelayError)
      expect(error).toMatchObject({ code, message: (same as RelayError).message })
    }
  })

  it('break after the first chunk aborts the backend: its signal fires and it yields no more', async () => {
    const seen = streamingBackend('long', Array.from({ length: 50 }, (_, i) => `c${i} `), 20)
    for await (const chunk of relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'long' })) {
      expect(chunk).toBe('c0 ')
      break
    }
    const until = Date.now() + 1000
    while (!seen.aborted && Date.now() < until) await sleep(10)
    expect(seen.aborted).toBe(true)
    // Once the backend has stopped, not before: what it yielded in all.
    await vi.waitFor(() => expect(seen.ended).toBe(true), { timeout: 2_000, interval: 10 })
    expect(seen.yielded).toBeLessThan(5)
    expect(seen.finished).toBe(false)
  })

  it('the signal aborts a stream with an AbortError and stops the backend', async () => {
    const seen = streamingBackend('slow', Array.from({ length: 50 }, () => 'z'), 20)
    const controller = new AbortController()
    const stream = relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'slow', signal: controller.signal })
    await stream.next()
    controller.abort(new Error('enough'))
    const error = await collect(stream).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    expect((error as Error).cause).toEqual(new Error('enough'))
    // The backend is told through the event loop: it may hear it a moment after the caller.
    await vi.waitFor(() => expect(seen.aborted).toBe(true))
  })

  it('holds at most about 1 MiB unread: a consumer that stops reading pauses the backend', async () => {
    const chunk = 'x'.repeat(64 * 1024)
    // 120 chunks: 7.5 MiB, under the output limit a stream stops at.
    const seen = streamingBackend('flood', Array.from({ length: 120 }, () => chunk))
    const stream = relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'flood' })
    await stream.next()
    // 1 MiB in the native queue, plus the chunks in flight on each side of it.
    await expect.poll(() => seen.yielded).toBeGreaterThanOrEqual(16)
    // Ten whole relays through the addon meanwhile: turns enough for a backend that was not held
    // back to yield the rest.
    registerBackend({ name: 'other', allowedSandboxes: ['read-only'], run: async () => 'other answer' })
    for (let i = 0; i < 10; i++) await relay({ prompt: 'hi', repoPath: repo.path, backend: 'other' })
    expect(seen.yielded).toBeLessThanOrEqual(20)
    const rest = await collect(stream)
    expect(rest.answer.length).toBe(120 * chunk.length)
    expect(seen.yielded).toBe(120)
  })

  it('keeps a 4-byte character whole however the chunks fall', async () => {
    streamingBackend('emoji', ['a😀', '😀b', '😀'])
    const { chunks, answer } = await collect(relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'emoji' }))
    expect(chunks).toEqual(['a😀', '😀b', '😀'])
    expect(answer).toBe('a😀😀b😀')
  })
})

describe('onChunk', () => {
  it('gets the same chunks on relay(); the promise resolves with the whole answer', async () => {
    streamingBackend('chunky', ['one ', 'two ', 'three'], 5)
    const chunks: string[] = []
    await expect(relay({ prompt: 'hi', repoPath: repo.path, backend: 'chunky', onChunk: (text) => chunks.push(text) })).resolves.toBe('one two three')
    expect(chunks).toEqual(['one ', 'two ', 'three'])
  })

  it('a throwing onChunk aborts the run and the relay rejects with what it threw', async () => {
    const seen = streamingBackend('chunky', Array.from({ length: 50 }, () => 'w'), 10)
    const thrown = new Error('consumer broke')
    const error = await relay({ prompt: 'hi', repoPath: repo.path, backend: 'chunky', onChunk: () => { throw thrown } }).catch((e: unknown) => e)
    expect(error).toBe(thrown)
    const until = Date.now() + 1000
    while (!seen.aborted && Date.now() < until) await sleep(10)
    expect(seen.aborted).toBe(true)
  })

  it('refuses an onChunk that is not a function', async () => {
    await expect(relay({ prompt: 'hi', repoPath: repo.path, onChunk: 'no' } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
  })

  it('works on reviewRelay() too', async () => {
    registerBackend({ name: 'reviewer', allowedSandboxes: ['read-only'], run: async () => 'looks fine', review: async () => 'native review' })
    const chunks: string[] = []
    await expect(reviewRelay({ repoPath: repo.path, backend: 'reviewer', base: 'HEAD', onChunk: (t) => chunks.push(t) })).resolves.toBe('native review')
    expect(chunks).toEqual(['native review'])
  })
})

describe('a CLI backend', () => {
  let fake: FakeClis
  let tmp: string
  let savedTmp: string | undefined

  beforeEach(() => {
    fake = new FakeClis()
    savedTmp = process.env.TMPDIR
    tmp = mkdtempSync(join(tmpdir(), 'paf-stream-tmp-'))
    process.env.TMPDIR = tmp
  })

  afterEach(() => {
    fake.restore()
    delete process.env.PAF_STREAM_MARK
    if (savedTmp === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = savedTmp
    rmSync(tmp, { recursive: true, force: true })
  })

  it('streams its answer and returns what relay() answers', async () => {
    fake.mode('answer')
    expect(await collect(relayStream({ prompt: 'hi', repoPath: repo.path }))).toEqual({ chunks: ['file answer'], answer: 'file answer' })
  })

  it('gemini: each assistant delta of its stream-json events is a chunk; returns relay()’s answer', async () => {
    fake.mode('events')
    const streamed = await collect(relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'gemini' }))
    // The stream starts where the answer does: the first delta's leading blanks are skipped.
    expect(streamed).toEqual({ chunks: ['Hel', 'lo, wörld 😀', '!\n'], answer: 'Hello, wörld 😀!' })
    await expect(relay({ prompt: 'hi', repoPath: repo.path, backend: 'gemini' })).resolves.toBe(streamed.answer)
    const chunks: string[] = []
    await relay({ prompt: 'hi', repoPath: repo.path, backend: 'gemini', onChunk: (text) => chunks.push(text) })
    expect(chunks).toEqual(streamed.chunks)
  })

  it('codex: each agent message is a chunk, a blank line apart; returns the last, as relay() does', async () => {
    fake.mode('events')
    const streamed = await collect(relayStream({ prompt: 'hi', repoPath: repo.path }))
    expect(streamed).toEqual({ chunks: ['Looking.', '\n\nAll good 😀'], answer: 'All good 😀' })
    await expect(relay({ prompt: 'hi', repoPath: repo.path })).resolves.toBe(streamed.answer)
    expect(readdirSync(tmp)).toEqual([])
  })

  it('a CLI whose events are not read is paused: its stdout is not read past about 1 MiB unread', async () => {
    fake.mode('event-flood')
    const stream = relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'gemini' })
    const first = await stream.next()
    expect(first.value).toHaveLength(64 * 1024)
    await sleep(500)
    // 4 MiB written would mean nothing held it back.
    expect(() => fake.read('finished')).toThrow()
    const rest = await collect(stream)
    expect(rest.chunks).toHaveLength(63)
    expect(rest.answer).toBe('x'.repeat(64 * 64 * 1024))
    expect(fake.read('finished')).toBe('')
  })

  /** Marks this relay's processes (supervisor, CLI, grandchild) so none can hide afterwards. */
  function marked(): string {
    const mark = `stream-${process.pid}-${Date.now()}-${Math.random()}`
    process.env.PAF_STREAM_MARK = mark
    return mark
  }

  it('the signal kills the CLI and everything it started, and removes its temp folder', async () => {
    fake.mode('hang-with-new-session')
    const mark = marked()
    const controller = new AbortController()
    const stream = relayStream({ prompt: 'hi', repoPath: repo.path, signal: controller.signal })
    const pending = stream.next()
    const grandchild = await vi.waitFor(() => Number(readFileSync(join(fake.log, 'grandchild'), 'utf8')) || Promise.reject(new Error('no pid yet')), { timeout: 5000 })
    expect(processesWithEnv(mark).length).toBeGreaterThanOrEqual(3)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 2000 })
    expect(isAlive(grandchild)).toBe(false)
    expect(readdirSync(tmp)).toEqual([])
  })

  it('break after the first chunk kills the CLI and everything it started', async () => {
    fake.mode('events-then-hang')
    const mark = marked()
    for await (const chunk of relayStream({ prompt: 'hi', repoPath: repo.path, backend: 'gemini' })) {
      expect(chunk).toBe('first words')
      expect(processesWithEnv(mark).length).toBeGreaterThanOrEqual(3)
      break
    }
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 2000 })
    expect(isAlive(Number(fake.read('grandchild')))).toBe(false)
    expect(readdirSync(tmp)).toEqual([])
  })
})
