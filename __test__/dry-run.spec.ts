// `dryRun`: the same checks, context, diff and envelope as a real call, then a description of
// what would run, with nothing spawned and no request made. Each description is compared with
// what a real call then did: the fake CLIs log their argv and stdin, the HTTP server its bodies.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  MAX_PROMPT_BYTES,
  _resetRegistry,
  registerBackend,
  relay,
  relayAll,
  relayStream,
  reviewRelay,
  type BackendRunOptions,
  type DryRun,
  type RelayOptions,
} from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli'
import { TempRepo, tempDir } from './support/git-repo'
import { chatLine, startOllamaStub, type OllamaStub } from './support/ollama-stub'
import { runCli } from './support/run-cli'

const saved = { OLLAMA_HOST: process.env.OLLAMA_HOST, OLLAMA_MODEL: process.env.OLLAMA_MODEL, PATH: process.env.PATH }
let repo: TempRepo
let clis: FakeClis

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first').write('a.txt', 'one\ntwo\n')
  clis = new FakeClis(['codex', 'gemini']).mode('answer')
})

afterEach(() => {
  clis.restore()
  repo.remove()
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

/** Whether any fake CLI ran: each logs its argv, cwd and stdin as it starts. */
function fakeCliRan(): boolean {
  return readdirSync(clis.log).length > 0
}

function command(dryRun: DryRun) {
  if (dryRun.action.kind !== 'command') throw new Error(`expected a command, got ${dryRun.action.kind}`)
  return dryRun.action
}

describe('a CLI backend', () => {
  it('codex: describes the argv, stdin and environment of the run, and starts nothing', async () => {
    const options: RelayOptions = { prompt: 'Review this', repoPath: repo.path, backend: 'codex', includeDiff: true, model: 'gpt-x', contextText: 'ctx' }
    const dryRun = await relay({ ...options, dryRun: true })
    expect(fakeCliRan()).toBe(false)
    const action = command(dryRun)
    expect(action).toMatchObject({ name: 'codex', program: join(clis.bin, 'codex'), cwd: repo.path, stdin: 'envelope' })
    expect(dryRun).toMatchObject({ dryRun: true, backend: 'codex', repoPath: repo.path, sandbox: 'read-only', model: 'gpt-x', timeoutSeconds: 600 })
    expect(dryRun.env).toEqual({ set: { PHONE_A_FRIEND_DEPTH: '1' }, removed: [] })
    expect(dryRun.envelopeBytes).toBe(Buffer.byteLength(dryRun.envelope ?? '', 'utf8'))
    expect(dryRun.maxPromptBytes).toBe(MAX_PROMPT_BYTES)
    expect(dryRun.envelope).toContain('+two')

    // The real run got exactly that (the answer folder is made only for a real run).
    await expect(relay(options)).resolves.toBe('file answer')
    expect(fakeCliRan()).toBe(true)
    expect(clis.read('stdin')).toBe(dryRun.envelope)
    const real = clis.args()
    const answerAt = real.indexOf('--output-last-message') + 1
    expect(action.args[answerAt]).toMatch(/\/phone-a-friend-codex-XXXXXX\/last-message\.md$/)
    expect(action.args.filter((_, i) => i !== answerAt)).toEqual(real.filter((_, i) => i !== answerAt))
    expect(action.commandLine).toBe(`${join(clis.bin, 'codex')} ${action.args.join(' ')}`)
  })

  it('gemini: the argv is exactly what runs', async () => {
    const options: RelayOptions = { prompt: 'Why?', repoPath: repo.path, backend: 'gemini', sandbox: 'workspace-write' }
    const dryRun = await relay({ ...options, dryRun: true })
    expect(fakeCliRan()).toBe(false)
    await relay(options)
    expect(command(dryRun).args).toEqual(clis.args())
    expect(clis.read('stdin')).toBe(dryRun.envelope)
    expect(command(dryRun).commandLine).toBe(`${join(clis.bin, 'gemini')} --approval-mode auto_edit --skip-trust --output-format stream-json --prompt ''`)
  })

  it('a CLI that is not installed is described, with its install hint, instead of failing', async () => {
    process.env.PATH = tempDir('paf-empty-path-')
    const dryRun = await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'gemini', dryRun: true })
    expect(command(dryRun)).toMatchObject({ name: 'gemini', program: null, installHint: 'npm install -g @google/gemini-cli' })
    expect(command(dryRun).commandLine).toMatch(/^gemini --approval-mode plan /)
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'gemini' })).rejects.toMatchObject({ code: 'ERR_BACKEND_UNAVAILABLE' })
  })

  it("codex's native review: the review command, no envelope, nothing on stdin", async () => {
    const dryRun = await reviewRelay({ repoPath: repo.path, backend: 'codex', base: 'HEAD', dryRun: true })
    expect(fakeCliRan()).toBe(false)
    expect(dryRun).toMatchObject({ base: 'HEAD', envelope: null, envelopeBytes: 0 })
    expect(command(dryRun).stdin).toBe('empty')
    expect(command(dryRun).args.slice(-3)).toEqual(['review', '--base', 'HEAD'])
    await reviewRelay({ repoPath: repo.path, backend: 'codex', base: 'HEAD' })
    expect(clis.args().slice(-3)).toEqual(['review', '--base', 'HEAD'])
    expect(clis.args().length).toBe(command(dryRun).args.length)
  })

  it('a review against a base that does not exist fails as the real review does (ERR_GIT_DIFF), native or not', async () => {
    const trunk = new TempRepo('trunk').write('a.txt', 'one\n').commit('first')
    try {
      // The generic path's real failure: the one a native review that fails falls back to.
      const real = await reviewRelay({ repoPath: trunk.path, backend: 'gemini', base: 'main' }).then(
        () => undefined,
        (error: { code?: string; message?: string }) => ({ code: error.code, message: error.message }),
      )
      expect(real).toMatchObject({ code: 'ERR_GIT_DIFF', message: expect.stringMatching(/^Failed to collect git diff against main: fatal: /) })
      for (const backend of ['codex', 'gemini']) {
        await expect(reviewRelay({ repoPath: trunk.path, backend, base: 'main', dryRun: true }), backend).rejects.toMatchObject(real as object)
      }
      const cli = await runCli(['--review', '--base', 'main', '--dry-run'], { cwd: trunk.path })
      expect(cli).toMatchObject({ code: 1, stdout: '', stderr: `Error [ERR_GIT_DIFF]: ${real?.message}\n` })
      expect(fakeCliRan()).toBe(false)
    } finally {
      trunk.remove()
    }
  })

  it('a codex review with a verdict is described as the generic path the real review takes', async () => {
    const dryRun = await reviewRelay({ repoPath: repo.path, backend: 'codex', base: 'HEAD', verdict: true, dryRun: true })
    expect(fakeCliRan()).toBe(false)
    expect(dryRun.envelope).toContain('Review request:')
    expect(command(dryRun).args).not.toContain('review')
    expect(command(dryRun).args).toContain('--output-schema')
  })

  it("gemini's review takes the generic path: the envelope holds the diff against the base", async () => {
    repo.commit('second')
    const dryRun = await reviewRelay({ repoPath: repo.path, backend: 'gemini', base: 'HEAD~1', dryRun: true })
    expect(fakeCliRan()).toBe(false)
    expect(dryRun.base).toBe('HEAD~1')
    expect(dryRun.envelope).toContain('Review the following changes.')
    expect(dryRun.envelope).toContain('+two')
    await reviewRelay({ repoPath: repo.path, backend: 'gemini', base: 'HEAD~1' })
    expect(clis.read('stdin')).toBe(dryRun.envelope)
  })
})

describe('includeDiff says which diff the envelope holds, and why', () => {
  it('uncommitted changes: said by the dry run, no warning', async () => {
    const warnings: string[] = []
    const dryRun = await relay({ prompt: 'Hi', repoPath: repo.path, includeDiff: true, dryRun: true, onWarning: (message) => void warnings.push(message) })
    expect(dryRun.diff).toEqual({ source: 'uncommitted', description: 'the uncommitted changes (git diff HEAD)' })
    expect(warnings).toEqual([])
    expect((await relay({ prompt: 'Hi', repoPath: repo.path, dryRun: true })).diff).toBeNull()
  })

  it('only untracked files: the last commit, said by the dry run and by a warning of the real relay', async () => {
    repo.commit('second').write('untracked.txt', 'new\n')
    const warnings: string[] = []
    const onWarning = (message: string): void => void warnings.push(message)
    const dryRun = await relay({ prompt: 'Hi', repoPath: repo.path, includeDiff: true, dryRun: true, onWarning })
    expect(dryRun.diff?.source).toBe('last-commit')
    expect(dryRun.diff?.description).toBe(
      "the last commit's diff (git diff HEAD~1 HEAD): no tracked file has uncommitted changes (untracked files are never included)",
    )
    expect(dryRun.envelope).toContain('+two')
    expect(dryRun.envelope).not.toContain('untracked.txt')
    const warning = `[phone-a-friend] includeDiff: the envelope holds ${dryRun.diff?.description}`
    expect(warnings).toEqual([warning])
    await relay({ prompt: 'Hi', repoPath: repo.path, includeDiff: true, backend: 'codex', onWarning })
    expect(warnings).toEqual([warning, warning])
    expect(clis.read('stdin')).toBe(dryRun.envelope)
    // relayAll() prepares once: one warning for all its backends.
    await relayAll({ prompt: 'Hi', repoPath: repo.path, includeDiff: true, backends: ['codex', 'gemini'], onWarning })
    expect(warnings).toEqual([warning, warning, warning])
  })

  it('outside a git repository: none, said by the dry run, a warning and the CLI', async () => {
    const folder = tempDir('paf-not-a-repo-')
    const warnings: string[] = []
    const dryRun = await relay({ prompt: 'Hi', repoPath: folder, includeDiff: true, dryRun: true, onWarning: (message) => void warnings.push(message) })
    const description = 'no diff: git diff HEAD failed (not a git repository, no commit yet, or no git)'
    expect(dryRun.diff).toEqual({ source: 'none', description })
    expect(warnings).toEqual([`[phone-a-friend] includeDiff: the envelope holds ${description}`])
    const cli = await runCli(['--prompt', 'Hi', '--include-diff', '--dry-run', '--to', 'gemini'], { cwd: folder })
    expect(cli).toMatchObject({ code: 0, stderr: `[phone-a-friend] includeDiff: the envelope holds ${description}\n` })
    expect(cli.stdout).toContain(`\ndiff:     ${description}\n`)
  })

  it('a repository whose one commit is all there is, beside untracked files: none, and why', async () => {
    const single = new TempRepo().write('a.txt', 'one\n').commit('first').write('untracked.txt', 'new\n')
    try {
      const dryRun = await relay({ prompt: 'Hi', repoPath: single.path, includeDiff: true, dryRun: true, onWarning: () => undefined })
      expect(dryRun.diff).toEqual({
        source: 'none',
        description: 'no diff: no tracked file has uncommitted changes (untracked files are never included) and there is no last commit to show',
      })
    } finally {
      single.remove()
    }
  })
})

describe('ollama', () => {
  let stub: OllamaStub

  beforeEach(async () => {
    stub = await startOllamaStub((res, count) => res.writeHead(200).end(chatLine('hi')))
    process.env.OLLAMA_HOST = stub.host
    process.env.OLLAMA_MODEL = 'llama-env'
  })

  afterEach(() => stub.close())

  it('describes the URL and body, and sends nothing', async () => {
    const options: RelayOptions = { prompt: 'Hi', repoPath: repo.path, backend: 'ollama' }
    const dryRun = await relay({ ...options, dryRun: true })
    expect(stub.bodies).toHaveLength(0)
    expect(dryRun.action).toMatchObject({ kind: 'http', method: 'POST', url: `http://${process.env.OLLAMA_HOST}/api/chat` })
    expect(dryRun.env).toEqual({ set: {}, removed: [] })
    await relay(options)
    expect(stub.bodies).toHaveLength(1)
    expect(dryRun.action.kind === 'http' && dryRun.action.body).toEqual(stub.bodies[0])
    expect(stub.bodies[0]).toMatchObject({ model: 'llama-env', messages: [{ role: 'user', content: dryRun.envelope }] })
  })

  it('says that Ollama would refuse a chat without a model (library and CLI); not when one is set', async () => {
    delete process.env.OLLAMA_MODEL
    const warnings: string[] = []
    const dryRun = await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama', dryRun: true, onWarning: (message) => void warnings.push(message) })
    expect(dryRun.action.kind === 'http' && dryRun.action.body).not.toHaveProperty('model')
    expect(warnings).toEqual([expect.stringContaining('no model set: ollama refuses a chat without one, so a real relay would fail')])
    const cli = await runCli(['--prompt', 'Hi', '--to', 'ollama', '--dry-run'], { cwd: repo.path })
    expect(cli.code).toBe(0)
    expect(cli.stderr).toContain('no model set: ollama refuses a chat without one')
    expect(cli.stderr).toContain('pass --model <name> (the model option) or set OLLAMA_MODEL')
    const withModel: string[] = []
    await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama', model: 'm', dryRun: true, onWarning: (message) => void withModel.push(message) })
    process.env.OLLAMA_MODEL = 'llama-env'
    await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama', dryRun: true, onWarning: (message) => void withModel.push(message) })
    expect(withModel).toEqual([])
    expect(stub.bodies).toHaveLength(0)
  })

  it('never shows the user and password of OLLAMA_HOST; host, port and path stay (library and CLI)', async () => {
    // The user and password are kept apart from the host (the Ollama CLI would mangle them into it).
    process.env.OLLAMA_HOST = 'https://admin:secret@ollama.example:8443/proxy'
    const url = 'https://********@ollama.example:8443/proxy/api/chat'
    const dryRun = await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama', dryRun: true })
    expect(dryRun.action).toMatchObject({ kind: 'http', url })
    expect(JSON.stringify(dryRun)).not.toContain('secret')
    for (const args of [['--dry-run'], ['--dry-run', '--json']]) {
      const result = await runCli(['--prompt', 'Hi', '--to', 'ollama', ...args], { cwd: repo.path })
      expect(result).toMatchObject({ code: 0, stderr: '' })
      expect(result.stdout).toContain(args.length === 1 ? `request:  POST ${url}\n` : `"url":"${url}"`)
      expect(result.stdout).not.toContain('secret')
    }
    expect(stub.bodies).toHaveLength(0)
  })
})

describe('a JavaScript backend', () => {
  it('is not called; the envelope is what run() would get', async () => {
    const prompts: string[] = []
    registerBackend({
      name: 'js',
      allowedSandboxes: new Set(['read-only'] as const),
      run: async (options: BackendRunOptions) => {
        prompts.push(options.prompt)
        return 'ok'
      },
      review: async () => 'reviewed',
    })
    const dryRun = await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'js', contextText: 'more', dryRun: true })
    expect(prompts).toEqual([])
    expect(dryRun.action).toEqual({ kind: 'run' })
    expect(dryRun.env.set).toEqual({ PHONE_A_FRIEND_DEPTH: '1' })
    await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'js', contextText: 'more' })
    expect(prompts).toEqual([dryRun.envelope])
    const review = await reviewRelay({ repoPath: repo.path, backend: 'js', base: 'HEAD', dryRun: true })
    expect(review).toMatchObject({ action: { kind: 'review' }, envelope: null, base: 'HEAD' })
  })
})

describe('errors', () => {
  it('are those of a real relay, code and message', async () => {
    registerBackend({ name: 'narrow', allowedSandboxes: new Set(['read-only'] as const), run: async () => 'ok' })
    const bad: RelayOptions[] = [
      { prompt: ' ', repoPath: repo.path },
      { prompt: 'p', repoPath: repo.path, timeoutSeconds: 0 },
      { prompt: 'p', repoPath: join(repo.path, 'missing') },
      { prompt: 'p', repoPath: repo.path, backend: 'nope' },
      { prompt: 'p', repoPath: repo.path, backend: 'narrow', sandbox: 'danger-full-access' },
      { prompt: 'p', repoPath: repo.path, contextFile: 'x', contextText: 'y' },
      { prompt: 'p', repoPath: repo.path, contextFile: join(repo.path, 'missing.txt') },
      { prompt: 'p', repoPath: repo.path, contextText: 'x'.repeat(200_001) },
      { prompt: 'x'.repeat(500_001), repoPath: repo.path },
    ]
    for (const options of bad) {
      const real = await relay(options).then(
        () => undefined,
        (error: { code?: string; message?: string }) => ({ code: error.code, message: error.message }),
      )
      expect(real, JSON.stringify(options).slice(0, 120)).toBeDefined()
      await expect(relay({ ...options, dryRun: true }), JSON.stringify(options).slice(0, 120)).rejects.toMatchObject(real as object)
    }
    expect(fakeCliRan()).toBe(false)
  })

  it('an aborted dry run rejects with an AbortError', async () => {
    await expect(relay({ prompt: 'p', repoPath: repo.path, dryRun: true, signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' })
  })

  it('relayStream() has nothing to stream for a dry run', async () => {
    const options = { prompt: 'p', repoPath: repo.path, dryRun: true } as unknown as RelayOptions
    await expect(relayStream(options).next()).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
  })
})

describe('the CLI', () => {
  it('--dry-run prints what would run, summary first; --show-envelope adds the envelope after it', async () => {
    const result = await runCli(['--prompt', 'Review my changes', '--include-diff', '--dry-run', '--to', 'gemini'], { cwd: repo.path })
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(fakeCliRan()).toBe(false)
    const summary = result.stdout
    expect(summary).toMatch(/^--- dry run: nothing was sent ---\nbackend:  gemini \(sandbox read-only, timeout 600s\)\n/)
    expect(summary).not.toContain('You are helping another coding agent')
    expect(summary).toContain(`command:  ${join(clis.bin, 'gemini')} --approval-mode plan`)
    expect(summary).toContain('env:      PHONE_A_FRIEND_DEPTH=1')

    const shown = await runCli(['--prompt', 'Review my changes', '--include-diff', '--dry-run', '--show-envelope', '--to', 'gemini'], { cwd: repo.path })
    expect(shown).toMatchObject({ code: 0, stderr: '' })
    const [head, envelope] = shown.stdout.split('\n--- envelope ---\n')
    expect(envelope).toMatch(/^You are helping another coding agent/)
    expect(envelope).toContain('+two')
    const size = `envelope: ${Buffer.byteLength(envelope.slice(0, -1)).toLocaleString('en-US')} bytes (at most 500,000)`
    expect(head).toContain(`${size}, below`)
    expect(summary).toContain(`${size}; --show-envelope prints it`)
    expect(head.replace(', below', '; --show-envelope prints it')).toBe(summary.slice(0, -1))
  })

  it('--show-envelope without --dry-run is a usage error', async () => {
    const result = await runCli(['--prompt', 'Hi', '--show-envelope'], { cwd: repo.path })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--show-envelope is for --dry-run')
    expect(fakeCliRan()).toBe(false)
  })

  it('--dry-run --json prints the DryRun object', async () => {
    const result = await runCli(['--prompt', 'Hi', '--dry-run', '--json'], { cwd: repo.path })
    expect(result.code).toBe(0)
    const printed = JSON.parse(result.stdout) as { ok: boolean; dryRun: DryRun }
    expect(printed.ok).toBe(true)
    expect(printed.dryRun).toEqual(await relay({ prompt: 'Hi', repoPath: repo.path, dryRun: true }))
    expect(fakeCliRan()).toBe(false)
  })

  it('--to codex,gemini --dry-run describes each backend under its header; --json prints an array', async () => {
    const result = await runCli(['--prompt', 'Hi', '--include-diff', '--dry-run', '--to', 'codex,gemini'], { cwd: repo.path })
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(fakeCliRan()).toBe(false)
    const [before, codex, gemini] = result.stdout.split(/^=== (?:codex|gemini) ===\n/m)
    expect(before).toBe('')
    expect(codex).toContain('backend:  codex (sandbox read-only, timeout 600s)')
    expect(codex).toContain(`command:  ${join(clis.bin, 'codex')} `)
    expect(gemini).toContain('backend:  gemini (sandbox read-only, timeout 600s)')
    expect(gemini).toContain(`command:  ${join(clis.bin, 'gemini')} --approval-mode plan`)
    for (const part of [codex, gemini]) expect(part).toContain('diff:     the uncommitted changes (git diff HEAD)')

    const json = await runCli(['--prompt', 'Hi', '--dry-run', '--json', '--to', 'codex,gemini'], { cwd: repo.path })
    expect(json.code).toBe(0)
    const printed = JSON.parse(json.stdout) as Array<{ backend: string; ok: boolean; dryRun: DryRun }>
    expect(printed).toEqual([
      { backend: 'codex', ok: true, dryRun: await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'codex', dryRun: true }) },
      { backend: 'gemini', ok: true, dryRun: await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'gemini', dryRun: true }) },
    ])
  })

  it('--to with several backends: one the relay does not know fails alone, any other failure fails the whole dry run', async () => {
    const result = await runCli(['--prompt', 'Hi', '--dry-run', '--to', 'gemni,codex'], { cwd: repo.path })
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(/^=== codex ===\n/)
    expect(result.stdout).not.toContain('=== gemni ===')
    expect(result.stderr).toMatch(/^Error \[ERR_UNSUPPORTED_BACKEND\] \(gemni\): Unsupported relay backend: gemni\. [^\n]*\nHint: Did you mean gemini\?\n$/)
    const json = await runCli(['--prompt', 'Hi', '--dry-run', '--json', '--to', 'gemni,codex'], { cwd: repo.path })
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout)).toMatchObject([
      { backend: 'gemni', ok: false, error: { code: 'ERR_UNSUPPORTED_BACKEND' } },
      { backend: 'codex', ok: true, dryRun: { backend: 'codex' } },
    ])
    const whole = await runCli(['--prompt', 'Hi', '--dry-run', '--to', 'codex,gemini', '--context-file', 'missing.txt'], { cwd: repo.path })
    expect(whole).toMatchObject({ code: 1, stdout: '', stderr: `Error [ERR_CONTEXT_FILE]: Context file does not exist: ${join(repo.path, 'missing.txt')}\n` })
    const session = await runCli(['--prompt', 'Hi', '--dry-run', '--to', 'codex,gemini', '--session', 's'], { cwd: repo.path })
    const real = await runCli(['--prompt', 'Hi', '--to', 'codex,gemini', '--session', 's'], { cwd: repo.path })
    expect(session).toMatchObject({ code: 1, stdout: '', stderr: real.stderr })
    expect(real.stderr).toMatch(/^Error \[ERR_SESSION\]/)
    expect(fakeCliRan()).toBe(false)
  })

  it('a warning of several dry runs is printed once', async () => {
    repo.commit('second')
    const result = await runCli(['--prompt', 'Hi', '--include-diff', '--dry-run', '--to', 'codex,gemini'], { cwd: repo.path })
    expect(result.code).toBe(0)
    expect(result.stderr).toBe(`[phone-a-friend] includeDiff: the envelope holds the last commit's diff (git diff HEAD~1 HEAD): no tracked file has uncommitted changes (untracked files are never included)\n`)
  })

  it('a failing check fails the dry run as it fails a relay', async () => {
    const result = await runCli(['--prompt', 'Hi', '--dry-run', '--context-file', 'missing.txt'], { cwd: repo.path })
    expect(result).toMatchObject({ code: 1, stderr: `Error [ERR_CONTEXT_FILE]: Context file does not exist: ${join(repo.path, 'missing.txt')}\n` })
  })
})
