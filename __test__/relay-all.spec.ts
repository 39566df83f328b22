// relayAll() (docs/CONTRACT.md §15): one preparation shared by several backends run at once, each
// settling on its own, one signal aborting all; and the CLI's --to a,b.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BackendError, RelayError, _resetRegistry, registerBackend, relay, relayAll } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { TempRepo, tempDir } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'
import { processesWithEnv } from './support/processes.js'
import { runCli } from './support/run-cli.js'

let repo: TempRepo
let fake: FakeClis

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  fake = new FakeClis()
})

afterEach(() => {
  fake.restore()
  repo.remove()
  delete process.env.FAKE_SLEEP
})

describe('relayAll()', () => {
  it('runs two 1 s backends at once: about 1 s in all, not 2', async () => {
    fake.mode('slow')
    process.env.FAKE_SLEEP = '1'
    const started = performance.now()
    const results = await relayAll({ prompt: 'p', repoPath: repo.path, backends: ['codex', 'gemini'] })
    const elapsed = performance.now() - started
    expect(results).toEqual([
      { backend: 'codex', ok: true, answer: 'slow answer', model: null, usage: null },
      { backend: 'gemini', ok: true, answer: 'slow answer', model: null, usage: null },
    ])
    expect(elapsed).toBeGreaterThanOrEqual(1000)
    // One after the other would take 2 s at least.
    expect(elapsed).toBeLessThan(2000)
  })

  it('each backend settles on its own: a failure, a refusal or a thrown TypeError does not touch the others', async () => {
    const typeError = new TypeError('bug in a backend')
    registerBackend(new MockBackend('fine', async () => 'fine answer'))
    registerBackend(new MockBackend('broken', async () => Promise.reject(new BackendError('it broke'))))
    registerBackend(new MockBackend('buggy', async () => Promise.reject(typeError)))
    registerBackend(new MockBackend('picky', async () => 'never', { allowed: ['read-only'] }))
    const results = await relayAll({ prompt: 'p', repoPath: repo.path, sandbox: 'workspace-write', backends: ['broken', 'fine', 'nope', 'picky', 'buggy'] })
    expect(results.map((result) => [result.backend, result.ok])).toEqual([['broken', false], ['fine', true], ['nope', false], ['picky', false], ['buggy', false]])
    expect(results[1]).toEqual({ backend: 'fine', ok: true, answer: 'fine answer', model: null, usage: null })
    const [broken, , nope, picky, buggy] = results.map((result) => (result.ok ? undefined : result.error))
    expect(broken).toBeInstanceOf(RelayError)
    expect(broken).toMatchObject({ code: 'ERR_BACKEND_FAILED', message: 'it broke', backend: 'broken' })
    expect(nope).toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND', message: expect.stringMatching(/^Unsupported relay backend: nope\. Supported: /) })
    expect(picky).toMatchObject({ code: 'ERR_INVALID_SANDBOX', message: 'Invalid sandbox mode: workspace-write. Allowed values: read-only' })
    // Not a RelayError: wrapped in one, the original as its cause, so the call still resolves.
    expect(buggy).toMatchObject({ code: 'ERR_BACKEND_FAILED', message: 'bug in a backend', backend: 'buggy' })
    expect(buggy?.cause).toBe(typeError)
  })

  it('checks that do not depend on the backend reject the whole call, as relay() would', async () => {
    await expect(relayAll({ prompt: ' ', repoPath: repo.path, backends: ['nope'] })).rejects.toMatchObject({ code: 'ERR_PROMPT_REQUIRED' })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, timeoutSeconds: 0, backends: ['codex'] })).rejects.toMatchObject({ code: 'ERR_INVALID_TIMEOUT' })
    await expect(relayAll({ prompt: 'p', repoPath: '/no/such/repo', backends: ['codex'] })).rejects.toMatchObject({ code: 'ERR_INVALID_REPO' })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, contextFile: join(repo.path, 'missing'), backends: ['nope', 'codex'] })).rejects.toMatchObject({
      name: 'RelayError',
      code: 'ERR_CONTEXT_FILE',
    })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, backends: [] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, backends: ['codex'], backend: 'gemini' } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
  })

  it('a hole in backends is a missing name: a TypeError coded ERR_INVALID_ARG_TYPE, like any other', async () => {
    // eslint-disable-next-line no-sparse-arrays
    for (const backends of [[, 'codex'], ['codex', ,], [undefined, 'codex']] as unknown as string[][]) {
      await expect(relayAll({ prompt: 'p', repoPath: repo.path, backends })).rejects.toMatchObject({
        name: 'TypeError',
        code: 'ERR_INVALID_ARG_TYPE',
        message: expect.stringMatching(/^The "options\.backends" property must be a non-empty array of strings\. Received /),
      })
    }
  })

  it('shares one preparation: git diff runs once for all backends (twice for two relay() calls)', async () => {
    // A git that logs each run, first on PATH.
    const bin = tempDir('paf-git-')
    const log = join(bin, 'log')
    const realGit = process.env.PATH?.split(':').map((dir) => join(dir, 'git')).find((file) => {
      try {
        return readFileSync(file).length > 0
      } catch {
        return false
      }
    })
    writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${realGit}' "$@"\n`)
    chmodSync(join(bin, 'git'), 0o755)
    const savedPath = process.env.PATH
    process.env.PATH = `${bin}:${savedPath}`
    try {
      repo.write('a.txt', 'two\n') // an uncommitted change: one `git diff HEAD` is enough
      const prompts: string[] = []
      const recording = (name: string): MockBackend => new MockBackend(name, (options) => (prompts.push(options.prompt), `${name} ok`))
      registerBackend(recording('one'))
      registerBackend(recording('two'))
      registerBackend(recording('three'))
      const results = await relayAll({ prompt: 'p', repoPath: repo.path, includeDiff: true, contextText: 'ctx', backends: ['one', 'two', 'three'] })
      expect(results.every((result) => result.ok)).toBe(true)
      const diffRuns = (): number => readFileSync(log, 'utf8').split('\n').filter((line) => line.includes(' diff ')).length
      expect(diffRuns()).toBe(1)
      expect(new Set(prompts).size).toBe(1)
      expect(prompts[0]).toContain('+two')
      await relay({ prompt: 'p', repoPath: repo.path, includeDiff: true, backend: 'one' })
      await relay({ prompt: 'p', repoPath: repo.path, includeDiff: true, backend: 'two' })
      expect(diffRuns()).toBe(3)
    } finally {
      process.env.PATH = savedPath
    }
  })

  it('one signal aborts every backend: the call rejects and no process of theirs is left', async () => {
    const mark = `PAF_RELAY_ALL_MARK=${process.pid}-${Date.now()}`
    const [key, value] = mark.split('=')
    process.env[key] = value
    try {
      fake.mode('hang-with-grandchild')
      const controller = new AbortController()
      const pending = relayAll({ prompt: 'p', repoPath: repo.path, backends: ['codex', 'gemini'], signal: controller.signal })
      // Both CLIs and their grandchildren are up.
      await expect.poll(() => processesWithEnv(mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(4)
      const aborted = performance.now()
      controller.abort('enough')
      await expect(pending).rejects.toMatchObject({ name: 'AbortError', cause: 'enough' })
      await expect.poll(() => processesWithEnv(mark), { timeout: 2000 }).toEqual([])
      expect(performance.now() - aborted).toBeLessThan(2000)
    } finally {
      delete process.env[key]
    }
  })
})

describe('CLI --to a,b', () => {
  it('prints each answer under a header; a failure goes to stderr and makes the exit code 1', async () => {
    fake.mode('slow')
    const env = { ...process.env, FAKE_SLEEP: '0' }
    const both = await runCli(['--prompt', 'p', '--repo', repo.path, '--to', 'codex,gemini'], { env })
    expect(both).toMatchObject({ code: 0, stdout: '=== codex ===\nslow answer\n\n=== gemini ===\nslow answer\n', stderr: '' })
    const one = await runCli(['--prompt', 'p', '--repo', repo.path, '--to', 'codex, nope'], { env })
    expect(one.code).toBe(1)
    expect(one.stdout).toBe('=== codex ===\nslow answer\n')
    expect(one.stderr).toMatch(/^Error \[ERR_UNSUPPORTED_BACKEND\] \(nope\): Unsupported relay backend: nope\. Supported: /)
  })

  it('--json prints the array of results', async () => {
    fake.mode('slow')
    const result = await runCli(['--prompt', 'p', '--repo', repo.path, '--to', 'gemini,nope', '--json'], { env: { ...process.env, FAKE_SLEEP: '0' } })
    expect(result.code).toBe(1)
    const parsed = JSON.parse(result.stdout) as unknown[]
    expect(parsed).toEqual([
      { backend: 'gemini', ok: true, answer: 'slow answer', model: null, usage: null },
      { backend: 'nope', ok: false, error: { code: 'ERR_UNSUPPORTED_BACKEND', message: expect.stringContaining('nope') } },
    ])
  })

  it('refuses what takes one backend, and an empty name', async () => {
    for (const args of [['--review'], ['--to', 'codex,']]) {
      const to = args.includes('--to') ? [] : ['--to', 'codex,gemini']
      const result = await runCli(['--prompt', 'p', '--repo', repo.path, ...to, ...args])
      expect(result.code).toBe(2)
    }
  })
})
