// The codex and gemini backends driven through relay()/reviewRelay() against fake CLIs of our
// own: exact command lines, stdin, answers, failures, timeouts, aborts, floods, cleanup.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { _resetRegistry, checkBackends, listSessions, relay, reviewRelay } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { isAlive } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { skipWithoutSubreaper } from './support/platform.js'

let repo: TempRepo
let fake: FakeClis
let tmp: string
let savedTmp: string | undefined

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  fake = new FakeClis()
  savedTmp = process.env.TMPDIR
  tmp = mkdtempSync(join(tmpdir(), 'paf-tmp-'))
  process.env.TMPDIR = tmp
})

afterEach(() => {
  fake.restore()
  repo.remove()
  if (savedTmp === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = savedTmp
  rmSync(tmp, { recursive: true, force: true })
})

const envelope = (request: string): string =>
  'You are helping another coding agent by reviewing or advising on work in a local repository.\n' +
  `Repository path: ${repo.path}\nUse the repository files for context when needed.\n` +
  `Respond with concise, actionable feedback.\n\nRequest:\n${request}`

// Every relay here runs a fake CLI under the supervisor.
const noSubreaper = skipWithoutSubreaper('the codex and gemini relays, sessions, many at once')

describe.skipIf(noSubreaper)('codex', () => {
  it('runs `codex exec … --json -` with the envelope on stdin and answers from the last-message file', async () => {
    fake.mode('answer')
    await expect(relay({ prompt: 'Check it', repoPath: repo.path, model: 'gpt-x' })).resolves.toBe('file answer')
    const answerFile = fake.read('answer-file')
    expect(fake.args()).toEqual([
      'exec', '-C', repo.path, '--skip-git-repo-check', '--sandbox', 'read-only', '--output-last-message', answerFile, '--json', '-m', 'gpt-x', '-',
    ])
    expect(fake.read('stdin')).toBe(envelope('Check it'))
    expect(fake.read('depth')).toBe('1')
    expect(answerFile.startsWith(`${tmp}/phone-a-friend-codex-`)).toBe(true)
    expect(readdirSync(tmp)).toEqual([])
  })

  it('keeps its answer private: folder 0700, answer file 0600, removed afterwards', async () => {
    fake.mode('report-perms')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).resolves.toBe('ok')
    expect(fake.read('perms').split('\n').slice(0, 2)).toEqual(['700', '600'])
    expect(readdirSync(tmp)).toEqual([])
  })

  it('a failed run that says nothing is reported by its exit code, not by a half-written answer', async () => {
    fake.mode('fail-silent-with-answer')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'codex exec exited with code 3',
    })
  })

  it('passes the sandbox mode as given', async () => {
    fake.mode('answer')
    await relay({ prompt: 'p', repoPath: repo.path, sandbox: 'workspace-write' })
    expect(fake.args().slice(4, 6)).toEqual(['--sandbox', 'workspace-write'])
  })

  it('a 300,000-byte prompt goes whole through stdin, never argv', async () => {
    fake.mode('answer')
    const prompt = 'p'.repeat(300_000)
    await relay({ prompt, repoPath: repo.path })
    expect(fake.read('stdin')).toBe(envelope(prompt))
    expect(fake.args().every((arg) => arg.length < 1_000)).toBe(true)
  })

  it('falls back to stdout, then reports no output', async () => {
    fake.mode('stdout-only')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).resolves.toBe('stdout answer')
    fake.mode('empty')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).rejects.toMatchObject({
      code: 'ERR_BACKEND_NO_OUTPUT',
      message: 'codex exec completed without producing feedback',
      backend: 'codex',
    })
  })

  it.each([
    ['fail-stderr', 'boom on stderr'],
    ['fail-stdout', 'stdout detail'],
    ['fail-silent', 'codex exec exited with code 3'],
  ] as const)('a failing exit (%s) is ERR_BACKEND_FAILED with its own words', async (mode, message) => {
    fake.mode(mode)
    const error = await relay({ prompt: 'p', repoPath: repo.path }).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'RelayError', code: 'ERR_BACKEND_FAILED', message, backend: 'codex' })
    expect((error as Error).cause).toMatchObject({ name: 'BackendError', message })
    expect(readdirSync(tmp)).toEqual([])
  })

  it('with --json events on stdout: the answer file is the answer, else the last message; a failure in events is its words', async () => {
    fake.mode('events')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).resolves.toBe('All good 😀')
    // No answer file: the last assistant message, as plain `codex exec` printed it on stdout.
    fake.mode('events-no-file')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).resolves.toBe('All good 😀')
    // codex --json reports a failure on stdout, in events, with stderr empty.
    fake.mode('events-fail')
    await expect(relay({ prompt: 'p', repoPath: repo.path })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'the turn failed',
      backend: 'codex',
    })
    expect(readdirSync(tmp)).toEqual([])
  })

  it('native review: exec options before `review --base`, nothing on stdin', async () => {
    fake.mode('answer')
    repo.git('checkout', '-q', '-b', 'feature')
    await expect(reviewRelay({ repoPath: repo.path })).resolves.toBe('file answer')
    expect(fake.args()).toEqual([
      'exec', '-C', repo.path, '--skip-git-repo-check', '--sandbox', 'read-only', '--output-last-message', fake.read('answer-file'), '--json', 'review', '--base', 'main',
    ])
    expect(fake.read('stdin')).toBe('')
  })

  it('a review with instructions takes the generic path at once, without a warning', async () => {
    fake.mode('answer')
    const warn = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    try {
      repo.git('checkout', '-q', '-b', 'feature')
      repo.write('b.txt', 'new\n').commit('feature')
      await expect(reviewRelay({ repoPath: repo.path, prompt: 'Look at b.txt' })).resolves.toBe('file answer')
      expect(fake.args().at(-1)).toBe('-')
      expect(fake.read('stdin')).toContain('Request:\nLook at b.txt\n\nGit Diff:\ndiff --git a/b.txt b/b.txt')
      expect(warn).not.toHaveBeenCalled()
    } finally {
      warn.mockRestore()
    }
  })

  it('a failing native review warns and falls back to `codex exec -`', async () => {
    fake.mode('fail-stderr')
    const warn = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    try {
      await expect(reviewRelay({ repoPath: repo.path, base: 'HEAD' })).rejects.toMatchObject({ code: 'ERR_BACKEND_FAILED', message: 'boom on stderr' })
      expect(warn).toHaveBeenCalledWith('[phone-a-friend] review() failed, falling back to generic relay: boom on stderr')
      expect(fake.args().at(-1)).toBe('-')
    } finally {
      warn.mockRestore()
    }
  })

  it('a missing CLI is ERR_BACKEND_UNAVAILABLE with the install hint', async () => {
    process.env.PATH = mkdtempSync(join(tmpdir(), 'paf-empty-'))
    await expect(relay({ prompt: 'p', repoPath: repo.path })).rejects.toMatchObject({
      code: 'ERR_BACKEND_UNAVAILABLE',
      message: 'codex CLI not found in PATH. Install it: npm install -g @openai/codex',
      backend: 'codex',
    })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).rejects.toThrow(
      'gemini CLI not found in PATH. Install it: npm install -g @google/gemini-cli',
    )
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'claude' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_UNAVAILABLE',
      message: 'claude CLI not found in PATH. Install it: npm install -g @anthropic-ai/claude-code',
      backend: 'claude',
    })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'opencode' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_UNAVAILABLE',
      message: 'opencode CLI not found in PATH. Install it: npm install -g opencode-ai',
      backend: 'opencode',
    })
  })

  it('a timeout kills the whole process group and leaves no temp folder', async () => {
    fake.mode('hang-with-grandchild')
    const started = Date.now()
    await expect(relay({ prompt: 'p', repoPath: repo.path, timeoutSeconds: 0.5 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'codex exec timed out after 0.5s',
      backend: 'codex',
    })
    expect(Date.now() - started).toBeLessThan(5_000)
    const grandchild = Number(fake.read('grandchild'))
    await vi.waitFor(() => expect(isAlive(grandchild)).toBe(false), { timeout: 3_000 })
    expect(readdirSync(tmp)).toEqual([])
  })

  it('an abort kills the whole process group at once', async () => {
    fake.mode('hang-with-grandchild')
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, signal: controller.signal })
    await vi.waitFor(() => expect(fake.read('grandchild')).toMatch(/^\d+\n$/), { timeout: 5_000 })
    const aborted = Date.now()
    controller.abort(new Error('enough'))
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: new Error('enough') })
    expect(Date.now() - aborted).toBeLessThan(1_000)
    const grandchild = Number(fake.read('grandchild'))
    await vi.waitFor(() => expect(isAlive(grandchild)).toBe(false), { timeout: 3_000 })
    expect(readdirSync(tmp)).toEqual([])
  })
})

describe.skipIf(noSubreaper)('gemini', () => {
  it.each([
    ['read-only', 'plan'],
    ['workspace-write', 'auto_edit'],
    ['danger-full-access', 'yolo'],
  ] as const)('sandbox %s runs --approval-mode %s in the repository, envelope on stdin', async (sandbox, mode) => {
    fake.mode('stdout-only')
    await expect(relay({ prompt: 'Check', repoPath: repo.path, backend: 'gemini', sandbox })).resolves.toBe('stdout answer')
    expect(fake.args()).toEqual(['--approval-mode', mode, '--skip-trust', '--output-format', 'stream-json', '--prompt', ''])
    expect(fake.read('cwd').trim()).toBe(repo.path)
    expect(fake.read('stdin')).toBe(envelope('Check'))
  })

  it('passes a model, and reviews through the generic path', async () => {
    fake.mode('stdout-only')
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'new\n').commit('feature')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'gemini', model: 'gemini-x' })).resolves.toBe('stdout answer')
    expect(fake.args()).toContain('-m')
    expect(fake.args()[fake.args().indexOf('-m') + 1]).toBe('gemini-x')
    expect(fake.read('stdin')).toContain('Request:\nReview the following changes.\n\nGit Diff:\n')
  })

  it('answers the assistant text of its stream-json events, trimmed; a failed result is its words', async () => {
    fake.mode('events')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).resolves.toBe('Hello, wörld 😀!')
    fake.mode('events-fail')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: '[API Error: quota]',
      backend: 'gemini',
    })
    // gemini drops unwritten output when it exits: without its closing event the text may be cut.
    fake.mode('events-no-result')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'gemini exited before writing all its output (no result event)',
    })
  })

  it('reports empty output, failures and timeouts in its own words', async () => {
    fake.mode('empty')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_NO_OUTPUT',
      message: 'gemini completed without producing output',
    })
    fake.mode('fail-silent')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'gemini exited with code 3',
    })
    fake.mode('hang-with-grandchild')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini', timeoutSeconds: 0.3 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'gemini timed out after 0.3s',
    })
  })

  it('200 MB of stdout settles as ERR_TOO_LARGE with its exact size, memory bounded', async () => {
    fake.mode('flood')
    const before = process.memoryUsage().rss
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: 'Backend output is too large (209715200 bytes; max 8388608 bytes)',
      backend: 'gemini',
    })
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024)
  })
})

describe.skipIf(noSubreaper)('a resumed session is the one asked for', () => {
  const answers: Record<string, string> = { codex: 'All good 😀', gemini: 'Hello, wörld 😀!', claude: 'All good 😀', opencode: 'All good 😀' }
  let home: string
  let savedHome: string | undefined

  beforeEach(() => {
    fake.restore()
    fake = new FakeClis(['codex', 'gemini', 'claude', 'opencode']).mode('events')
    savedHome = process.env.PHONE_A_FRIEND_HOME
    home = mkdtempSync(join(tmpdir(), 'paf-home-'))
    process.env.PHONE_A_FRIEND_HOME = home
  })

  afterEach(() => {
    if (savedHome === undefined) delete process.env.PHONE_A_FRIEND_HOME
    else process.env.PHONE_A_FRIEND_HOME = savedHome
    rmSync(home, { recursive: true, force: true })
  })

  it.each(Object.keys(answers))('%s: a CLI that continues another session fails with ERR_SESSION; the session stays as it was', async (backend) => {
    const options = { prompt: 'p', repoPath: repo.path, backend, session: 'talk', onWarning: () => undefined }
    fake.sessionId('first-session')
    await expect(relay(options)).resolves.toBe(answers[backend])
    expect(await listSessions()).toMatchObject([{ label: 'talk', backendSessionId: 'first-session' }])
    await expect(relay(options)).resolves.toBe(answers[backend])
    expect(fake.args()).toContain('first-session')
    // Asked to resume first-session, the CLI reports another one: resumed the wrong
    // conversation, or quietly started a fresh one.
    fake.sessionId('another-session')
    await expect(relay(options)).rejects.toMatchObject({
      code: 'ERR_SESSION',
      message:
        'Session talk continues backend session first-session, but the backend reported session another-session: its answer is not returned and the session is not saved',
    })
    expect(fake.args()).toContain('first-session')
    expect(await listSessions()).toMatchObject([{ label: 'talk', backendSessionId: 'first-session' }])
  })
})

describe.skipIf(noSubreaper)('many at once', () => {
  it('8 relays against a 1 s backend overlap instead of queueing', async () => {
    fake.mode('slow')
    const started = Date.now()
    const answers = await Promise.all(Array.from({ length: 8 }, () => relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })))
    expect(answers).toEqual(Array(8).fill('slow answer'))
    // Serialised they would take 8 s; the benchmark measures the real figure.
    expect(Date.now() - started).toBeLessThan(4_000)
  })
})

describe('checkBackends', () => {
  it('reports which CLIs are on PATH', () => {
    expect(checkBackends()).toMatchObject({ codex: true, gemini: true })
    process.env.PATH = mkdtempSync(join(tmpdir(), 'paf-empty-'))
    expect(checkBackends()).toEqual({ codex: false, gemini: false, ollama: false, claude: false, opencode: false, antigravity: false })
  })
})
