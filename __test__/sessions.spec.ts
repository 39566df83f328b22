// Sessions (docs/CONTRACT.md §12): a label of the caller's continues a conversation with one
// backend in one repository, through the store in PHONE_A_FRIEND_HOME (a temp folder per test
// here).
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
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

  it('one that reports no session id is warned about on the turn, in the listing and on the next turn', async () => {
    const calls = backend('forgetful', 'native-session')
    const first: string[] = []
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'forgetful', session: 'lost', onWarning: (w) => first.push(w) })
    expect(first).toEqual([
      `[phone-a-friend] new session lost (forgetful in ${repo.path})`,
      '[phone-a-friend] forgetful reported no session id: session lost is kept, but its next turn cannot continue this conversation',
    ])
    expect((await listSessions())[0]).toMatchObject({ label: 'lost', backendSessionId: null, turns: 0, resumable: false })
    const second: string[] = []
    await relay({ prompt: 'q', repoPath: repo.path, backend: 'forgetful', session: 'lost', onWarning: (w) => second.push(w) })
    expect(second[0]).toBe('[phone-a-friend] session lost has nothing to continue (forgetful reported no session id of its own when it was saved): this turn starts a new conversation')
    expect(calls.map((c) => c.resumeSession)).toEqual([false, false])
    // The CLI's listing says it too.
    const listed = await runCli(['sessions', 'list'], { env: process.env })
    expect(listed.stdout).toMatch(/^lost\tforgetful\t.*\t\(nothing to continue\)\n$/)
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
    expect(warnings.at(-1)).toBe(
      `[phone-a-friend] the answer is returned, but session s was not saved: session store ${join(home, 'sessions.lock')} is not a regular file`,
    )
  })

  it('labels that do not print as themselves (bidi, zero-width, BOM, soft hyphen, ESC) are refused', async () => {
    backend('replay', 'transcript-replay')
    for (const label of ['a\u202eb', 'a\u200bb', '\ufeffa', 'so\u00adft', '\u2066a', 'a\u001b[31m', 'a\u0007']) {
      const error = await relay({ prompt: 'p', repoPath: repo.path, backend: 'replay', session: label }).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'ERR_SESSION' })
      expect((error as Error).message).toMatch(/^Invalid session label "[ -~]*": expected 1 to 256 printable characters/)
    }
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'replay', session: 'café-レビュー', onWarning: () => undefined })).resolves.toBe('answer 1')
  })

  it('a store holding a FIFO, a dangling link or a held lock makes no call wait past its deadline', async () => {
    backend('replay', 'transcript-replay')
    const options = { prompt: 'p', repoPath: repo.path, backend: 'replay', session: 's', timeoutSeconds: 1 }
    // sessions.json a FIFO: refused when the session is looked up, not waited on.
    execFileSync('mkfifo', [join(home, 'sessions.json')])
    const lookedUp = await relay(options).catch((e: unknown) => e)
    expect(lookedUp).toMatchObject({ code: 'ERR_SESSION', message: `session store ${join(home, 'sessions.json')} is not a regular file` })
    await expect(listSessions()).rejects.toMatchObject({ code: 'ERR_SESSION' })
    await expect(deleteSession('s')).rejects.toMatchObject({ code: 'ERR_SESSION' })
    rmSync(join(home, 'sessions.json'))
    rmSync(join(home, 'sessions.lock'))
    // sessions.lock a FIFO: the answer comes back, the save is refused at once.
    execFileSync('mkfifo', [join(home, 'sessions.lock')])
    const warnings: string[] = []
    await expect(relay({ ...options, onWarning: (w) => warnings.push(w) })).resolves.toBe('answer 1')
    expect(warnings.at(-1)).toMatch(/session s was not saved: session store .*sessions\.lock is not a regular file$/)
    await expect(deleteSession('s')).rejects.toMatchObject({ code: 'ERR_SESSION' })
    // A dangling link as the lock is not followed: its target is never created.
    rmSync(join(home, 'sessions.lock'))
    const target = join(home, 'elsewhere')
    symlinkSync(target, join(home, 'sessions.lock'))
    await expect(relay({ ...options, onWarning: () => undefined })).resolves.toBe('answer 2')
    expect(existsSync(target)).toBe(false)
    rmSync(join(home, 'sessions.lock'))
    // The lock held by another process: the save gives up at the call's deadline.
    writeFileSync(join(home, 'sessions.lock'), '')
    const holder = spawn('flock', [join(home, 'sessions.lock'), 'sleep', '30'], { stdio: 'ignore' })
    try {
      await waitUntil(() => {
        const free = spawnSync('flock', ['-n', join(home, 'sessions.lock'), 'true']).status === 0
        if (free) throw new Error('the lock is not held yet')
      })
      const held: string[] = []
      const events: string[] = []
      const pending = relay({ ...options, onWarning: (w) => held.push(w) }).then((answer) => events.push(`answered ${answer}`))
      const timer = setTimeout(() => events.push('3 s passed'), 3000)
      await pending
      clearTimeout(timer)
      expect(events).toEqual(['answered answer 3'])
      expect(held.at(-1)).toMatch(/session s was not saved: session store .*sessions\.lock: the call's time ran out/)
    } finally {
      holder.kill('SIGKILL')
    }
  })
})

/** Polls `ready` (which throws until it holds) for up to 10 s. */
async function waitUntil(ready: () => unknown): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      ready()
      return
    } catch (error) {
      if (tries > 200) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

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

  it('loses no turn: 4 processes × 10 relays on one label, and 2 overlapping ones in this process, all kept', async () => {
    const script = `
      const { registerBackend, relay } = require(${JSON.stringify(ROOT)})
      registerBackend({ name: 'replay', allowedSandboxes: ['read-only'], capabilities: { resumeStrategy: 'transcript-replay' }, run: async (o) => 'answer to ' + o.prompt.length })
      const worker = process.argv[1]
      Promise.all(Array.from({ length: 10 }, (_, i) =>
        relay({ prompt: 'w' + worker + '-' + i, repoPath: ${JSON.stringify(repo.path)}, backend: 'replay', session: 'shared', onWarning: () => {} })
      )).then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
    `
    const run = promisify(execFile)
    await Promise.all(Array.from({ length: 4 }, (_, worker) => run(process.execPath, ['-e', script, String(worker)], { env: process.env })))
    backend('replay', 'transcript-replay')
    const both = ['here-a', 'here-b'].map((prompt) => relay({ prompt, repoPath: repo.path, backend: 'replay', session: 'shared', onWarning: () => undefined }))
    await Promise.all(both)
    const [info] = await listSessions()
    expect(info).toMatchObject({ label: 'shared', turns: 2 * 42 })
    const stored = JSON.parse(readFileSync(join(home, 'sessions.json'), 'utf8')) as Array<{ history: Array<{ role: string; content: string }> }>
    const asked = stored[0].history.filter((turn) => turn.role === 'user').map((turn) => /Request:\n(\S+)/.exec(turn.content)?.[1])
    const expected = [...Array.from({ length: 4 }, (_, w) => Array.from({ length: 10 }, (_, i) => `w${w}-${i}`)).flat(), 'here-a', 'here-b']
    expect(asked.sort()).toEqual(expected.sort())
  })
})
