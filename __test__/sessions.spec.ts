// Sessions (SPEC 12): a label of the caller's continues a conversation with one backend in one
// repository, through the store in PHONE_A_FRIEND_HOME (a temp folder per test here).
import { execFile } from 'node:child_process'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  _resetRegistry,
  deleteSession,
  listSessions,
  pruneSessions,
  registerBackend,
  relay,
  type BackendRunOptions,
} from '@phone-a-friend/relay'
import { TempRepo, tempDir } from './support/git-repo'
import { chatLine, startOllamaStub, type OllamaStub } from './support/ollama-stub'
import { runCli } from './support/run-cli'

const ROOT = resolve(__dirname, '..')
const saved = { PHONE_A_FRIEND_HOME: process.env.PHONE_A_FRIEND_HOME, OLLAMA_HOST: process.env.OLLAMA_HOST }
let repo: TempRepo
let home: string

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  home = tempDir('paf-home-')
  process.env.PHONE_A_FRIEND_HOME = home
})

afterEach(() => {
  repo.remove()
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

/** A JS backend of the given strategy that answers `answer <n>` and records its options. */
function backend(name: string, strategy: 'native-session' | 'transcript-replay' | 'unsupported', onRun?: (o: BackendRunOptions) => void) {
  const calls: BackendRunOptions[] = []
  registerBackend({
    name,
    allowedSandboxes: ['read-only'],
    capabilities: { resumeStrategy: strategy },
    run: async (options) => {
      calls.push({ ...options })
      onRun?.(options)
      return `answer ${calls.length}`
    },
  })
  return calls
}

describe('a transcript-replay backend', () => {
  it('gets the earlier turns; the store keeps the session', async () => {
    const calls = backend('replay', 'transcript-replay')
    const warnings: string[] = []
    await relay({ prompt: 'First question', repoPath: repo.path, backend: 'replay', session: 'talk', onWarning: (w) => warnings.push(w) })
    expect(warnings).toEqual([`[phone-a-friend] new session talk (replay in ${repo.path})`])
    expect(calls[0].sessionHistory).toEqual([])
    await relay({ prompt: 'Second question', repoPath: repo.path, backend: 'replay', session: 'talk', onWarning: (w) => warnings.push(w) })
    expect(warnings).toHaveLength(1)
    expect(calls[1].sessionHistory).toEqual([
      { role: 'user', content: calls[0].prompt },
      { role: 'assistant', content: 'answer 1' },
    ])
    const [info] = await listSessions()
    expect(info).toMatchObject({ label: 'talk', backend: 'replay', repoPath: repo.path, backendSessionId: null, turns: 4 })
    expect(Date.parse(info.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(info.createdAt))
  })

  it('a label belongs to one backend and one repository', async () => {
    backend('replay', 'transcript-replay')
    backend('other', 'transcript-replay')
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'replay', session: 'mine', onWarning: () => undefined })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'other', session: 'mine' })).rejects.toMatchObject({
      code: 'ERR_SESSION',
      message: `Session mine belongs to backend replay in ${repo.path}; it cannot be used with other in ${repo.path}`,
    })
    const elsewhere = new TempRepo('main').commit('x')
    await expect(relay({ prompt: 'p', repoPath: elsewhere.path, backend: 'replay', session: 'mine' })).rejects.toMatchObject({ code: 'ERR_SESSION' })
    elsewhere.remove()
  })
})

describe('Ollama', () => {
  let stub: OllamaStub

  beforeEach(async () => {
    stub = await startOllamaStub((res, count) => res.writeHead(200).end(chatLine(`reply ${count}`)))
    process.env.OLLAMA_HOST = stub.host
  })

  afterEach(() => stub.close())
  const messages = (i: number) => stub.bodies[i].messages as Array<{ role: string; content: string }>

  it('the CLI: --session, then sessions list, delete and prune', async () => {
    const cli = (args: string[]) => runCli(args, { cwd: repo.path, env: { ...process.env } })
    await expect(cli(['--to', 'ollama', '--session', 'cli-talk', '--prompt', 'One'])).resolves.toMatchObject({ code: 0, stdout: 'reply 1\n', stderr: expect.stringContaining('new session cli-talk') })
    await expect(cli(['--to', 'ollama', '--session', 'cli-talk', '--prompt', 'Two'])).resolves.toMatchObject({ code: 0, stdout: 'reply 2\n', stderr: '' })
    expect(messages(1)).toHaveLength(3)
    const listed = await cli(['sessions', '--json'])
    expect(JSON.parse(listed.stdout)).toMatchObject([{ label: 'cli-talk', backend: 'ollama', repoPath: repo.path, turns: 4 }])
    await expect(cli(['sessions', 'prune', '--older-than', '1'])).resolves.toMatchObject({ code: 0, stdout: 'nothing to prune\n' })
    await expect(cli(['sessions', 'delete', 'cli-talk'])).resolves.toMatchObject({ code: 0, stdout: 'deleted cli-talk\n' })
    await expect(cli(['sessions', 'delete', 'cli-talk'])).resolves.toMatchObject({ code: 1 })
    await expect(cli(['--to', 'ollama', '--session=-x', '--prompt', 'Three'])).resolves.toMatchObject({ code: 1, stderr: expect.stringContaining('Error [ERR_SESSION]: Invalid session label') })
  })

  it('replays the stored turns before the new prompt', async () => {
    await relay({ prompt: 'One', repoPath: repo.path, backend: 'ollama', session: 'chat', onWarning: () => undefined })
    await relay({ prompt: 'Two', repoPath: repo.path, backend: 'ollama', session: 'chat' })
    expect(messages(0)).toHaveLength(1)
    expect(messages(1).map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(messages(1)[0].content).toBe(messages(0)[0].content)
    expect(messages(1)[1].content).toBe('reply 1')
    expect(messages(1)[2].content).toContain('Request:\nTwo')
  })
})

describe('a native-session backend', () => {
  it('starts a session, reports its id, and is resumed with it', async () => {
    const calls = backend('native', 'native-session', (o) => {
      if (!o.resumeSession) o.onSessionCreated?.('thread-7')
    })
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'native', session: 'work', onWarning: () => undefined })
    await relay({ prompt: 'q', repoPath: repo.path, backend: 'native', session: 'work' })
    expect(calls.map((c) => [c.sessionId, c.resumeSession])).toEqual([
      [null, false],
      ['thread-7', true],
    ])
    expect((await listSessions())[0]).toMatchObject({ label: 'work', backendSessionId: 'thread-7', turns: 0 })
  })

  it('backendSession attaches to an id directly; a conflicting or malformed one is refused', async () => {
    const calls = backend('native', 'native-session')
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'native', session: 'adopted', backendSession: 'ses_1', onWarning: () => undefined })
    expect(calls[0].sessionId).toBe('ses_1')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'native', session: 'adopted', backendSession: 'ses_2' })).rejects.toMatchObject({
      code: 'ERR_SESSION',
      message: 'Session adopted is already attached to native session ses_1, not ses_2',
    })
    for (const bad of ['--resume', 'a b', '']) {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'native', backendSession: bad }), bad).rejects.toMatchObject({ code: 'ERR_SESSION' })
    }
    expect(calls).toHaveLength(1)
  })
})

describe('refusals and failures', () => {
  it('a backend that cannot resume refuses a session', async () => {
    backend('plain', 'unsupported')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'plain', session: 's' })).rejects.toMatchObject({
      code: 'ERR_SESSION',
      message: 'Backend plain cannot resume a session',
    })
  })

  it('a corrupt store is moved aside with a warning, never silently emptied', async () => {
    backend('replay', 'transcript-replay')
    writeFileSync(join(home, 'sessions.json'), '[{"broken": ')
    const warnings: string[] = []
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'replay', session: 's', onWarning: (w) => warnings.push(w) })).resolves.toBe('answer 1')
    expect(warnings.some((w) => /session store .* could not be read .*; moved it to .*sessions\.json\.corrupt-\d+/.test(w))).toBe(true)
    expect(readdirSync(home).some((name) => name.startsWith('sessions.json.corrupt-'))).toBe(true)
    expect((await listSessions()).map((s) => s.label)).toEqual(['s'])
  })

  it('an answer is returned even when the session cannot be saved', async () => {
    backend('replay', 'transcript-replay')
    // Readable (there is no store yet), but its lock cannot be taken: a folder where the lock file goes.
    mkdirSync(join(home, 'sessions.lock'))
    const warnings: string[] = []
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'replay', session: 's', onWarning: (w) => warnings.push(w) })).resolves.toBe('answer 1')
    expect(warnings.at(-1)).toMatch(/^\[phone-a-friend\] the answer is returned, but session s was not saved: session store .*: /)
  })
})

describe('the store', () => {
  it('deleteSession and pruneSessions', async () => {
    backend('replay', 'transcript-replay')
    for (const label of ['a', 'b']) await relay({ prompt: 'p', repoPath: repo.path, backend: 'replay', session: label, onWarning: () => undefined })
    await expect(deleteSession('a')).resolves.toBe(true)
    await expect(deleteSession('a')).resolves.toBe(false)
    await expect(pruneSessions(1)).resolves.toEqual([])
    await expect(pruneSessions(0)).resolves.toEqual(['b'])
    await expect(listSessions()).resolves.toEqual([])
    await expect(pruneSessions(-1)).rejects.toMatchObject({ code: 'ERR_SESSION' })
  })

  it('loses no update: 8 processes × 25 concurrent relays end with all 200 labels', async () => {
    const script = `
      const { registerBackend, relay } = require(${JSON.stringify(ROOT)})
      registerBackend({ name: 'replay', allowedSandboxes: ['read-only'], capabilities: { resumeStrategy: 'transcript-replay' }, run: async () => 'ok' })
      const worker = process.argv[1]
      Promise.all(Array.from({ length: 25 }, (_, i) =>
        relay({ prompt: 'p', repoPath: ${JSON.stringify(repo.path)}, backend: 'replay', session: 'w' + worker + '-' + i, onWarning: () => {} })
      )).then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
    `
    const run = promisify(execFile)
    await Promise.all(Array.from({ length: 8 }, (_, worker) => run(process.execPath, ['-e', script, String(worker)], { env: process.env })))
    const labels = (await listSessions()).map((s) => s.label)
    expect(labels).toHaveLength(200)
    expect(new Set(labels).size).toBe(200)
  })
})
