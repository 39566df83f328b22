// docs/CONTRACT.md §14: a relay's backend never outlives the host process, however it ends. Each
// case runs a host Node process that starts a relay to a fake codex whose grandchild leads a new
// session (as the claude and opencode CLIs run their tools), then ends the host one way. Within 2 s
// no process carrying this case's mark may be alive, and the codex temp folder must be gone.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeClis } from './support/fake-cli.js'
import { commOf, isAlive, processesWithEnv } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { ADDON, SUPERVISOR, skipWithoutSubreaper } from './support/platform.js'

const ROOT = resolve(__dirname, '..')
const MARK_KEY = 'PAF_HOST_DEATH_MARK'
const SETTLE_MS = 2_000

let fake: FakeClis
let repo: TempRepo
let work: string

beforeAll(() => {
  fake = new FakeClis(['codex'])
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  work = mkdtempSync(join(tmpdir(), 'paf-host-death-'))
})

afterAll(() => {
  fake.restore()
  repo.remove()
  rmSync(work, { recursive: true, force: true })
})

type Ending = 'exit' | 'uncaught' | 'rejection' | 'SIGTERM' | 'SIGHUP' | 'SIGKILL' | 'SIGINT to its group'

/** The host: starts a relay, says `ready` once the backend's grandchild exists, then ends as told. */
const HOST = `
const { readFileSync } = require('node:fs')
// The fake CLI writes the pid and a newline: wait for the whole line, not only the file.
const grandchildKnown = () => { try { return readFileSync(process.env.FAKE_LOG + '/grandchild', 'utf8').endsWith('\\n') } catch { return false } }
const { relay } = require(process.env.PAF_ROOT)
relay({ prompt: 'hi', repoPath: process.env.PAF_REPO, backend: 'codex', timeoutSeconds: 60 }).catch(() => {})
const poll = setInterval(() => {
  if (!grandchildKnown()) return
  clearInterval(poll)
  process.stdout.write('ready\\n')
  setInterval(() => {}, 1000) // until the test says how to end
  process.stdin.once('data', () => {
    switch (process.env.PAF_ENDING) {
      case 'exit': process.exit(0)
      case 'uncaught': setImmediate(() => { throw new Error('boom') }); break
      case 'rejection': Promise.reject(new Error('boom')); break
    }
  })
}, 5)
`

interface Case {
  host: ChildProcess
  mark: string
  log: string
  tmp: string
}

function startHost(ending: Ending, index: number): Case {
  const mark = `${process.pid}-${index}-${Date.now()}`
  const log = join(work, `log-${index}`)
  const tmp = join(work, `tmp-${index}`)
  mkdirSync(log)
  mkdirSync(tmp)
  const env = {
    ...process.env,
    [MARK_KEY]: mark,
    FAKE_LOG: log,
    FAKE_MODE: 'hang-with-new-session',
    TMPDIR: tmp,
    PAF_ROOT: ROOT,
    PAF_REPO: repo.path,
    PAF_ENDING: ending,
  }
  // Its own process group, as a foreground job at a terminal is.
  const host = spawn(process.execPath, ['-e', HOST], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true })
  return { host, mark, log, tmp }
}

function ready(host: ChildProcess): Promise<void> {
  return new Promise((resolveReady, reject) => {
    let out = ''
    host.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('ready')) resolveReady()
    })
    host.once('exit', (code) => reject(new Error(`host exited (${code}) before it was ready`)))
  })
}

function exited(host: ChildProcess): Promise<void> {
  if (host.exitCode !== null || host.signalCode !== null) return Promise.resolve()
  return new Promise((done) => host.once('exit', () => done()))
}

async function settle(check: () => boolean, limitMs: number): Promise<boolean> {
  const until = Date.now() + limitMs
  while (Date.now() < until) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return check()
}

const noSubreaper = skipWithoutSubreaper('a host death with a CLI backend running')
const endings: Ending[] = ['exit', 'uncaught', 'rejection', 'SIGTERM', 'SIGHUP', 'SIGKILL', 'SIGINT to its group']

describe('nothing a relay starts outlives its host', () => {
  endings.forEach((ending, index) => {
    it.skipIf(noSubreaper)(`when the host ends by ${ending}`, async () => {
      const { host, mark, log, tmp } = startHost(ending, index)
      try {
        await ready(host)
        const grandchild = Number(readFileSync(join(log, 'grandchild'), 'utf8'))
        expect(isAlive(grandchild)).toBe(true)
        expect(processesWithEnv(mark).length).toBeGreaterThanOrEqual(3) // supervisor, codex, sleep…
        expect(readdirSync(tmp).filter((name) => name.startsWith('phone-a-friend-codex-'))).toHaveLength(1)
        if (ending === 'SIGINT to its group') process.kill(-(host.pid as number), 'SIGINT')
        else if (ending.startsWith('SIG')) host.kill(ending as NodeJS.Signals)
        else host.stdin?.write('go\n')
        await exited(host)
        const gone = await settle(() => processesWithEnv(mark).length === 0, SETTLE_MS)
        expect(gone ? [] : processesWithEnv(mark)).toEqual([])
        expect(isAlive(grandchild)).toBe(false)
        const folderGone = await settle(() => readdirSync(tmp).length === 0, SETTLE_MS)
        expect(folderGone ? [] : readdirSync(tmp)).toEqual([])
      } finally {
        for (const pid of processesWithEnv(mark)) process.kill(pid, 'SIGKILL')
        if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL')
      }
    })
  })

  it('git that waits on a FIFO while the host is killed (SIGKILL) dies with it', async () => {
    // The repository's HEAD a FIFO nobody writes: `git diff` waits on it until it is killed.
    const stuck = new TempRepo().write('a.txt', 'one\n').commit('first')
    const head = join(stuck.path, '.git', 'HEAD')
    rmSync(head)
    execFileSync('mkfifo', [head])
    const mark = `${process.pid}-git-${Date.now()}`
    const script = `
      const { relay } = require(process.env.PAF_ROOT)
      relay({ prompt: 'hi', repoPath: process.env.PAF_REPO, backend: 'codex', includeDiff: true, timeoutSeconds: 600 }).catch(() => {})
      setInterval(() => {}, 1000)
    `
    const host = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, [MARK_KEY]: mark, PAF_ROOT: ROOT, PAF_REPO: stuck.path },
      stdio: 'ignore',
      detached: true,
    })
    try {
      // git has started (it carries the mark in its environment, as the host does) and waits
      // on the FIFO. Until the supervisor's `--exec` has replaced itself with git, the one
      // process beside the host is still named after the supervisor: wait for the exec.
      const others = (): number[] => processesWithEnv(mark).filter((pid) => pid !== host.pid)
      const names = (): string[] => others().map((pid) => commOf(pid))
      await settle(() => names().join() === 'git', 10_000)
      const git = others()
      expect(git.map((pid) => commOf(pid))).toEqual(['git'])
      host.kill('SIGKILL')
      await exited(host)
      const gone = await settle(() => git.every((pid) => !isAlive(pid)), SETTLE_MS)
      expect(gone ? [] : git.filter((pid) => isAlive(pid))).toEqual([])
    } finally {
      for (const pid of processesWithEnv(mark)) process.kill(pid, 'SIGKILL')
      if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL')
      stuck.remove()
    }
  })

  it('the supervisor ships beside the addon', () => {
    expect(existsSync(SUPERVISOR)).toBe(true)
  })

  it('without its supervisor, a CLI backend is refused with a clear error, never run unsupervised', () => {
    // The addon alone in a folder, as a broken installation would leave it.
    const lonely = mkdtempSync(join(work, 'lonely-'))
    copyFileSync(ADDON, join(lonely, 'relay.node'))
    const script = `
      const native = require(${JSON.stringify(join(lonely, 'relay.node'))})
      const scope = new native.RelayScope(() => {})
      const env = Object.entries(process.env).map(([key, value]) => key + '=' + value + '\\0').join('')
      const caller = { env, cwd: process.cwd(), callTag: 1 }
      const call = scope.relay({ prompt: 'hi', repoPath: ${JSON.stringify(repo.path)} }, caller, { dryRun: false, stream: false })
      call.next().then((step) => console.log(step.kind === 'failure' ? step.failure.message : 'answered'))
    `
    const log = mkdtempSync(join(work, 'lonely-log-'))
    const out = execFileSync(process.execPath, ['-e', script], { env: { ...process.env, FAKE_LOG: log, FAKE_MODE: 'answer' }, encoding: 'utf8' })
    expect(out).toContain('codex exec could not be run: the process supervisor phone-a-friend-supervisor is missing')
    expect(out).toContain('reinstall @phone-a-friend/relay')
    expect(existsSync(join(log, 'args'))).toBe(false) // the fake codex never ran
  })
})
