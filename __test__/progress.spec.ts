// What a waiting caller hears (`onProgress`, docs/CONTRACT.md §10a): each change of phase as the
// backend's own events say it, the same status again every second between changes, on every
// road of a call; the CLI's --verbose lines off a terminal. (The real CLIs' phases:
// e2e-claude-opencode.spec.ts; heartbeats are not progress for the watchdog: stall.spec.ts; the
// MCP server's notes: mcp.spec.ts.)
import type { ServerResponse } from 'node:http'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BackendError, _resetRegistry, registerBackend, relay, relayAll, relayDetailed, reviewRelay, type RelayProgress } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo.js'
import { startOllamaStub, type OllamaStub } from './support/ollama-stub.js'
import { runCli } from './support/run-cli.js'

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A JS backend that streams `chunks`, `gapMs` apart. */
function dripping(name: string, chunks: string[], gapMs: number): void {
  registerBackend({
    name,
    allowedSandboxes: ['read-only'],
    run: async () => chunks.join(''),
    async *runStream() {
      for (const chunk of chunks) {
        await sleep(gapMs)
        yield chunk
      }
    },
  })
}

describe('onProgress', () => {
  it('hears the backend start, then its text come, with a heartbeat each second between', async () => {
    dripping('slow', ['one ', 'two'], 1300)
    const heard: RelayProgress[] = []
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'slow', onProgress: (progress) => heard.push(progress) })).resolves.toBe('one two')
    expect(heard[0]).toMatchObject({ backend: 'slow', phase: 'starting', tool: null, answerBytes: 0, message: expect.stringMatching(/^slow: starting \(0s, 0 bytes of the answer so far\)$/) })
    // 1.3 s before the first chunk: at least one heartbeat of the same status.
    const starting = heard.filter((progress) => progress.phase === 'starting')
    expect(starting.length).toBeGreaterThanOrEqual(2)
    const writing = heard.filter((progress) => progress.phase === 'writing')
    expect(writing[0].answerBytes).toBe(4)
    // The second chunk is heard with the next heartbeat, if one came before the end.
    expect(writing.every((progress) => progress.answerBytes === 4 || progress.answerBytes === 7)).toBe(true)
    expect(heard.map((progress) => progress.phase)).toEqual([...starting.map(() => 'starting'), ...writing.map(() => 'writing')])
  })

  it('names the next backend after a fallback, and ignores a throw from the callback', async () => {
    registerBackend({ name: 'spent', allowedSandboxes: ['read-only'], run: async () => Promise.reject(new BackendError('You exceeded your current quota')) })
    dripping('spare', ['from spare'], 10)
    const backends: Array<string | null> = []
    const details = await relayDetailed({
      prompt: 'p',
      repoPath: repo.path,
      backend: 'spent',
      fallback: ['spare'],
      onWarning: () => {},
      onProgress: ({ backend }) => {
        backends.push(backend)
        throw new Error('a careless callback')
      },
    })
    expect(details).toMatchObject({ answer: 'from spare', backend: 'spare' })
    expect(backends.at(-1)).toBe('spare')
    expect(backends.indexOf('spare')).toBeGreaterThanOrEqual(0)
  })

  it('is heard on a review and on a streamed call too', async () => {
    dripping('streams', ['a', 'b'], 5)
    const review: string[] = []
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'two\n').commit('second')
    await reviewRelay({ repoPath: repo.path, backend: 'streams', base: 'main', onProgress: ({ phase }) => review.push(phase) })
    expect(review).toContain('writing')
    const chunks: string[] = []
    const streamed: string[] = []
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'streams', onChunk: (text) => chunks.push(text), onProgress: ({ phase }) => streamed.push(phase) })
    expect(chunks).toEqual(['a', 'b'])
    expect(streamed).toContain('writing')
  })

  it('is a function, and not relayAll()’s', async () => {
    dripping('any', ['x'], 1)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'any', onProgress: 'yes' as unknown as () => void })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('options.onProgress') })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, backends: ['any'], onProgress: (() => {}) as unknown as null })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('options.onProgress') })
  })
})

describe('the CLI', () => {
  let stub: OllamaStub

  afterEach(async () => stub.close())

  it('--verbose off a terminal prints a line for each change of phase, then the summary', async () => {
    stub = await startOllamaStub((res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' })
      res.write(`${JSON.stringify({ model: 'm', message: { role: 'assistant', content: '' }, done: false })}\n`)
      setTimeout(() => {
        res.end(`${JSON.stringify({ model: 'm', message: { role: 'assistant', content: 'answered' }, done: false })}\n${JSON.stringify({ model: 'm', message: { content: '' }, done: true, prompt_eval_count: 3, eval_count: 4 })}\n`)
      }, 300)
    })
    const result = await runCli(['--prompt', 'p', '--to', 'ollama', '--model', 'm', '--verbose'], { cwd: repo.path, env: { ...process.env, OLLAMA_HOST: stub.host } })
    expect(result.stdout).toBe('answered\n')
    const lines = result.stderr.trimEnd().split('\n')
    expect(lines.at(-1)).toMatch(/^\[phone-a-friend\] ollama \(m\) answered in \d+\.\ds; 3 input tokens, 4 output$/)
    const phases = lines.slice(0, -1).map((line) => line.replace(/ \(\d+s, \d+ bytes of the answer so far\)$/, ''))
    // Heard as they come: a phase the CLI was too slow to see is heard as the next.
    expect(phases.at(-1)).toBe('[phone-a-friend] ollama: writing the answer')
    expect(phases.every((line) => /^\[phone-a-friend\] ollama: (starting|thinking|writing the answer)$/.test(line))).toBe(true)
    expect(new Set(phases).size).toBe(phases.length)
    // Without --verbose, nothing but the answer.
    const quiet = await runCli(['--prompt', 'p', '--to', 'ollama', '--model', 'm'], { cwd: repo.path, env: { ...process.env, OLLAMA_HOST: stub.host } })
    expect(quiet).toMatchObject({ code: 0, stdout: 'answered\n', stderr: '' })
  })
})
