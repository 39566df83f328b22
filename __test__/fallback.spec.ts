// `fallback` (docs/CONTRACT.md §8a): a backend that cannot answer now hands the same envelope to
// the next; a crash, an answer or an abort does not. And every failure a backend reported says
// why (`reason`, docs/ERRORS.md).
import { rmSync } from 'node:fs'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BackendError, _resetRegistry, listSessions, registerBackend, relay, relayAll, relayDetailed, type BackendRunOptions, type RelayError } from '@phone-a-friend/relay'
import { TempRepo, tempDir } from './support/git-repo.js'
import { runCli } from './support/run-cli.js'

let repo: TempRepo
const prompts: Record<string, string[]> = {}

/** A JS backend that records its prompts and fails with `words`, or answers `answer`. */
function friend(name: string, outcome: { words?: string; answer?: string }): void {
  prompts[name] = []
  registerBackend({
    name,
    allowedSandboxes: ['read-only'],
    run: async ({ prompt }) => {
      prompts[name].push(prompt)
      if (outcome.words !== undefined) throw new BackendError(outcome.words)
      return outcome.answer ?? ''
    },
  })
}

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

describe('fallback', () => {
  it('asks the next when one is rate-limited and another out of quota, and says who answered', async () => {
    friend('limited', { words: '429 Too Many Requests: retry after 7s' })
    friend('spent', { words: 'You exceeded your current quota, please check your plan and billing details.' })
    friend('spare', { answer: 'from spare' })
    const warnings: string[] = []
    const details = await relayDetailed({ prompt: 'p', repoPath: repo.path, backend: 'limited', fallback: ['spent', 'spare'], onWarning: (w) => warnings.push(w) })
    expect(details).toMatchObject({ answer: 'from spare', backend: 'spare' })
    expect(details.attempts).toEqual([
      { backend: 'limited', reason: 'rate-limit', code: 'ERR_BACKEND_FAILED', message: '429 Too Many Requests: retry after 7s' },
      { backend: 'spent', reason: 'quota', code: 'ERR_BACKEND_FAILED', message: 'You exceeded your current quota, please check your plan and billing details.' },
    ])
    expect(warnings[0]).toBe('[phone-a-friend] fallback: limited cannot answer now (rate-limit): 429 Too Many Requests: retry after 7s; asking spent')
    // The same envelope, each time.
    expect(prompts.spent).toEqual(prompts.limited)
    expect(prompts.spare).toEqual(prompts.limited)
  })

  it('a crash is the call’s failure, with its reason; the last one’s failure when all cannot answer', async () => {
    friend('crashes', { words: 'segfault in the model runner' })
    friend('spare', { answer: 'from spare' })
    const crashed = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'crashes', fallback: ['spare'] }).catch((e: unknown) => e)) as RelayError
    expect(crashed).toMatchObject({ code: 'ERR_BACKEND_FAILED', backend: 'crashes', reason: 'crashed' })
    expect(prompts.spare).toEqual([])
    friend('offline', { words: 'connect ECONNREFUSED 127.0.0.1:9' })
    friend('locked', { words: '401 Unauthorized' })
    const last = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'offline', fallback: ['locked'] }).catch((e: unknown) => e)) as RelayError
    expect(last).toMatchObject({ backend: 'locked', reason: 'auth' })
    const limited = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'offline', fallback: [] }).catch((e: unknown) => e)) as RelayError
    expect(limited).toMatchObject({ backend: 'offline', reason: 'network' })
  })

  it('is checked with the backend, and taken by relay() alone', async () => {
    friend('spare', { answer: 'ok' })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'spare', fallback: ['nobody'] })).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND' })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'spare', fallback: 'codex' as unknown as string[] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'spare', fallback: ['codex'], session: 'x', backendSession: 'id-1' })).rejects.toMatchObject({
      code: 'ERR_SESSION',
      message: 'fallback takes no backendSession: a session belongs to one backend',
    })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, backends: ['spare'], fallback: ['codex'] as unknown as null })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
  })

  it('the CLI takes --fallback and prints the attempts in --json', async () => {
    // No codex on this PATH: not installed, so the next is asked; ollama without a server: network.
    const path = '/usr/bin:/bin'
    const result = await runCli(['--prompt', 'p', '--to', 'codex', '--fallback', 'gemini', '--json', '--idle-timeout', '0'], { cwd: repo.path, env: { ...process.env, PATH: path } })
    expect(result.code).toBe(1)
    const printed = JSON.parse(result.stdout) as { ok: boolean; backend: string; error: { code: string; reason: string } }
    expect(printed).toMatchObject({ ok: false, backend: 'gemini', error: { code: 'ERR_BACKEND_UNAVAILABLE', reason: 'not-installed' } })
    expect(result.stderr).toContain('[phone-a-friend] fallback: codex cannot answer now (not-installed): codex CLI not found in PATH')
    const usage = await runCli(['--prompt', 'p', '--to', 'codex,gemini', '--fallback', 'claude'], { cwd: repo.path })
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('several --to backends take no --fallback')
  })
})

describe('fallback with a session', () => {
  let home: string
  const saved = process.env.PHONE_A_FRIEND_HOME

  beforeEach(() => {
    home = tempDir('paf-home-')
    process.env.PHONE_A_FRIEND_HOME = home
  })

  afterEach(() => {
    if (saved === undefined) delete process.env.PHONE_A_FRIEND_HOME
    else process.env.PHONE_A_FRIEND_HOME = saved
    rmSync(home, { recursive: true, force: true })
  })

  /** A native-session backend that reports `<name>-1` for a new conversation and records what it was asked to continue. */
  function native(name: string, fails: () => boolean): Array<[string | null, boolean]> {
    const calls: Array<[string | null, boolean]> = []
    registerBackend({
      name,
      allowedSandboxes: ['read-only'],
      capabilities: { resumeStrategy: 'native-session' },
      run: async (options: BackendRunOptions) => {
        calls.push([options.sessionId ?? null, options.resumeSession ?? false])
        if (fails()) throw new BackendError('429 Too Many Requests')
        if (!options.resumeSession) options.onSessionCreated?.(`${name}-1`)
        return `from ${name}`
      },
    })
    return calls
  }

  it('moves the label to the backend that answered, which begins its own conversation', async () => {
    let limitedFails = false
    const limited = native('limited', () => limitedFails)
    const spare = native('spare', () => false)
    // The label begins with limited...
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'limited', session: 'work', fallback: ['spare'], onWarning: () => {} })
    expect(await listSessions()).toMatchObject([{ label: 'work', backend: 'limited', backendSessionId: 'limited-1' }])
    // ...which then cannot answer: spare does, in a conversation of its own, and keeps the label.
    limitedFails = true
    const warnings: string[] = []
    const details = await relayDetailed({ prompt: 'q', repoPath: repo.path, backend: 'limited', session: 'work', fallback: ['spare'], onWarning: (w) => warnings.push(w) })
    expect(details).toMatchObject({ answer: 'from spare', backend: 'spare', attempts: [{ backend: 'limited', reason: 'rate-limit' }] })
    expect(limited).toEqual([[null, false], ['limited-1', true]])
    expect(spare).toEqual([[null, false]])
    expect(warnings.at(-1)).toBe('[phone-a-friend] session work moved from limited to spare (fallback): spare did not see its earlier turns')
    expect(await listSessions()).toMatchObject([{ label: 'work', backend: 'spare', backendSessionId: 'spare-1', resumable: true }])
    // The label is spare's now: it continues there.
    await relay({ prompt: 'r', repoPath: repo.path, backend: 'spare', session: 'work' })
    expect(spare.at(-1)).toEqual(['spare-1', true])
  })

  it('is refused when a backend of the fallback cannot keep a session', async () => {
    native('first', () => true)
    friend('plain', { answer: 'plain answer' })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'first', session: 'work', fallback: ['plain'] })).rejects.toMatchObject({
      code: 'ERR_SESSION',
      message: 'Backend plain cannot resume a session (fallback with session)',
    })
  })
})
