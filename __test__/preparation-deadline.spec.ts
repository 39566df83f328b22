// One deadline per call bounds preparation too: the context file's reads and every git run end
// at `timeoutSeconds` (ERR_TIMEOUT) or at the caller's abort, leaving no reader and no git behind;
// the synchronous git helpers are bounded as well; a repository's own config runs no program;
// git that cannot start for want of file descriptors waits for them within the call's time, then is
// an error, not "no diff".
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  RelayError,
  _resetRegistry,
  detectDefaultBranch,
  gitDiffBase,
  registerBackend,
  relay,
  reviewRelay,
  type RelayOptions,
} from '@phone-a-friend/relay'
import { MockBackend } from './support/mock-backend.js'
import { TempRepo } from './support/git-repo.js'

let mock: MockBackend
const repos: TempRepo[] = []
const dirs: string[] = []

/** A temp folder, removed after each test. */
function tempDir(prefix = 'paf-deadline-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(dir)
  return dir
}

beforeEach(() => {
  _resetRegistry()
  mock = new MockBackend('mock')
  registerBackend(mock)
})

afterEach(() => {
  for (const repo of repos.splice(0)) repo.remove()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

afterAll(() => _resetRegistry())

function repoWithCommit(): TempRepo {
  const repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  repos.push(repo)
  return repo
}

/** A repository whose `.git/HEAD` is a FIFO nobody writes: every git command in it blocks. */
function fifoHeadRepo(): TempRepo {
  const repo = repoWithCommit()
  const head = join(repo.path, '.git', 'HEAD')
  rmSync(head)
  execFileSync('mkfifo', [head])
  return repo
}

/** A 64 GiB sparse file (`truncate -s 64G`): read to its end, it would take minutes. */
function sparseFile(): string {
  const file = join(tempDir('paf-sparse-'), 'huge.txt')
  execFileSync('truncate', ['-s', '64G', file])
  return file
}

/** Files this process has open at `path`. */
function openFdsTo(path: string): string[] {
  const open: string[] = []
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) open.push(fd)
    } catch {
      // closed meanwhile
    }
  }
  return open
}

/** Live processes whose command line names `needle` (git is run with `-C <repo>`). */
function processesNaming(needle: string): string[] {
  const found: string[] = []
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0]
      if (cmdline.includes(needle) && state !== 'Z') found.push(`${pid}: ${cmdline}`)
    } catch {
      // gone meanwhile
    }
  }
  return found
}

async function rejectionOf(pending: Promise<unknown>): Promise<unknown> {
  return pending.then(
    (value) => expect.fail(`expected a rejection, got ${JSON.stringify(value)}`),
    (error: unknown) => error,
  )
}

async function timedRejection(pending: Promise<unknown>): Promise<{ error: unknown; seconds: number }> {
  const started = performance.now()
  const error = await rejectionOf(pending)
  return { error, seconds: (performance.now() - started) / 1000 }
}

function relayOptions(repo: string, more: Partial<RelayOptions>): RelayOptions {
  return { prompt: 'Check this', repoPath: repo, backend: 'mock', ...more }
}

describe('the context file is read within the deadline', () => {
  it('a 64 GiB sparse file ends in ERR_TIMEOUT, and the file is closed', async () => {
    const file = sparseFile()
    const { error, seconds } = await timedRejection(relay(relayOptions(tempDir(), { contextFile: file, timeoutSeconds: 0.5 })))
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'ERR_TIMEOUT', message: 'Relay timed out after 0.5s while reading the context file' })
    expect(seconds).toBeLessThan(5)
    expect(openFdsTo(file)).toEqual([])
    expect(mock.runs).toEqual([])
  })

  it('a /proc file that goes on for hundreds of GiB ends in ERR_TIMEOUT', async () => {
    const { error } = await timedRejection(
      relay(relayOptions(tempDir(), { contextFile: '/proc/self/pagemap', timeoutSeconds: 0.5 })),
    )
    expect(error).toMatchObject({ code: 'ERR_TIMEOUT', message: 'Relay timed out after 0.5s while reading the context file' })
  })

  it('an abort stops the reading at once: the call is aborted and nothing reads on', async () => {
    const file = sparseFile()
    const controller = new AbortController()
    const pending = relay(relayOptions(tempDir(), { contextFile: file, signal: controller.signal }))
    setTimeout(() => controller.abort(), 150)
    const { error, seconds } = await timedRejection(pending)
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    expect(seconds).toBeLessThan(3)
    // Reading needs the file open: it was closed when the call settled.
    expect(openFdsTo(file)).toEqual([])
    expect(mock.runs).toEqual([])
  })

  it('a FIFO is refused without waiting for a writer', async () => {
    const fifo = join(tempDir(), 'ctx.fifo')
    execFileSync('mkfifo', [fifo])
    const { error, seconds } = await timedRejection(relay(relayOptions(tempDir(), { contextFile: fifo, timeoutSeconds: 30 })))
    expect(error).toMatchObject({ code: 'ERR_CONTEXT_FILE', message: `Context path is not a file: ${fifo}` })
    expect(seconds).toBeLessThan(3)
  })
})

describe('git runs within the deadline', () => {
  it('relay({ includeDiff }) in a repository whose HEAD is a FIFO: ERR_TIMEOUT, git killed', async () => {
    const repo = fifoHeadRepo()
    const { error, seconds } = await timedRejection(relay(relayOptions(repo.path, { includeDiff: true, timeoutSeconds: 0.5 })))
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'ERR_TIMEOUT', message: 'Relay timed out after 0.5s while running git diff' })
    expect(seconds).toBeLessThan(5)
    expect(processesNaming(repo.path)).toEqual([])
    expect(mock.runs).toEqual([])
  })

  it('reviewRelay: detecting the base and diffing against it are bounded too', async () => {
    const repo = fifoHeadRepo()
    const detect = await rejectionOf(reviewRelay({ repoPath: repo.path, backend: 'mock', timeoutSeconds: 0.5 }))
    expect(detect).toMatchObject({ code: 'ERR_TIMEOUT', message: 'Relay timed out after 0.5s while running git rev-parse' })
    const diff = await rejectionOf(reviewRelay({ repoPath: repo.path, backend: 'mock', base: 'main', timeoutSeconds: 0.5 }))
    expect(diff).toMatchObject({ code: 'ERR_TIMEOUT', message: 'Relay timed out after 0.5s while running git diff' })
    expect(processesNaming(repo.path)).toEqual([])
    expect(mock.runs).toEqual([])
  })

  it('an abort while git runs aborts the call and kills git', async () => {
    const repo = fifoHeadRepo()
    const controller = new AbortController()
    const pending = relay(relayOptions(repo.path, { includeDiff: true, signal: controller.signal }))
    setTimeout(() => controller.abort(), 150)
    const { error, seconds } = await timedRejection(pending)
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    expect(seconds).toBeLessThan(3)
    expect(processesNaming(repo.path)).toEqual([])
  })

  it('the backend is handed the call’s timeout after a preparation that took part of it', async () => {
    const repo = repoWithCommit().write('a.txt', 'two\n')
    await expect(relay(relayOptions(repo.path, { includeDiff: true, timeoutSeconds: 7 }))).resolves.toBe('mock answer')
    expect(mock.runs[0]?.timeoutSeconds).toBe(7)
  })
})

describe('the synchronous git helpers are bounded', () => {
  it('gitDiffBase throws ERR_GIT_DIFF once its limit passes; detectDefaultBranch answers HEAD~1', () => {
    // The branch a FIFO: git waits on it, past the look at the files git reads as it starts.
    const repo = repoWithCommit()
    const branch = join(repo.path, '.git', 'refs', 'heads', 'main')
    rmSync(branch)
    execFileSync('mkfifo', [branch])
    let started = performance.now()
    expect(() => gitDiffBase(repo.path, 'main', { timeoutSeconds: 0.5 })).toThrow(
      expect.objectContaining({
        name: 'RelayError',
        code: 'ERR_GIT_DIFF',
        message: 'Failed to collect git diff against main: git timed out after 0.5s',
      }),
    )
    expect((performance.now() - started) / 1000).toBeLessThan(5)
    started = performance.now()
    expect(detectDefaultBranch(repo.path, { timeoutSeconds: 0.5 })).toBe('HEAD~1')
    expect((performance.now() - started) / 1000).toBeLessThan(5)
    expect(processesNaming(repo.path)).toEqual([])
  })

  it('a repository whose .git/HEAD is a FIFO is refused at once, without the 30 s default bound', () => {
    const repo = fifoHeadRepo()
    const head = join(repo.path, '.git', 'HEAD')
    const started = performance.now()
    expect(() => gitDiffBase(repo.path, 'main')).toThrow(
      expect.objectContaining({ code: 'ERR_GIT_DIFF', message: `Failed to collect git diff against main: ${head} is not a regular file` }),
    )
    expect(detectDefaultBranch(repo.path)).toBe('HEAD~1')
    expect((performance.now() - started) / 1000).toBeLessThan(10)
  })

  it('the limit is checked like the relay’s timeout; without one, they answer as before', () => {
    const repo = repoWithCommit()
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('a.txt', 'two\n').commit('second')
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number]) {
      expect(() => gitDiffBase(repo.path, 'main', { timeoutSeconds: bad })).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_TIMEOUT' }),
      )
      expect(() => detectDefaultBranch(repo.path, { timeoutSeconds: bad })).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_TIMEOUT' }),
      )
    }
    expect(() => gitDiffBase(repo.path, 'main', 5 as never)).toThrow(TypeError)
    expect(() => detectDefaultBranch(repo.path, 'x' as never)).toThrow(/The "options" argument must be of type object/)
    const expected = repo.git('diff', 'main...HEAD', '--').trim()
    expect(gitDiffBase(repo.path, 'main')).toBe(expected)
    expect(gitDiffBase(repo.path, 'main', {})).toBe(expected)
    expect(gitDiffBase(repo.path, 'main', { timeoutSeconds: 10 })).toBe(expected)
    expect(detectDefaultBranch(repo.path, { timeoutSeconds: 10 })).toBe('main')
    expect(detectDefaultBranch(repo.path, null as never)).toBe('main')
  })
})

describe('a repository’s own config runs no program', () => {
  /** Every way its config makes `git diff` run a program; each touches a marker named after it. */
  function hostileRepo(markers: string): TempRepo {
    const repo = repoWithCommit()
    const files = ['a.clean', 'b.proc', 'c.eq', 'd.conv', 'e.cmd']
    repo.write('.gitattributes', '*.clean filter=evil\n*.proc filter=proc\n*.eq filter=a=b\n*.conv diff=conv\n*.cmd diff=cmd\n')
    for (const file of files) repo.write(file, 'one\n')
    repo.commit('files')
    repo.git('checkout', '-q', '-b', 'feature')
    for (const file of files) repo.write(file, 'two\n')
    repo.commit('two')
    const touch = (name: string): string => `touch ${join(markers, name)}`
    const settings: Array<[string, string]> = [
      ['core.fsmonitor', `${touch('fsmonitor')}; true`],
      ['diff.external', touch('external')],
      ['diff.cmd.command', touch('command')],
      ['diff.conv.textconv', `${touch('textconv')}; cat`],
      ['filter.evil.clean', `${touch('clean')}; cat`],
      ['filter.evil.required', 'true'],
      ['filter.proc.process', touch('process')],
      ['filter.proc.required', 'true'],
      ['filter.a=b.clean', `${touch('eq')}; cat`],
    ]
    for (const [key, value] of settings) repo.git('config', key, value)
    for (const file of files) repo.write(file, 'three\n')
    return repo
  }

  it('relay({ includeDiff }), reviewRelay, gitDiffBase and detectDefaultBranch run none of it', async () => {
    const markers = tempDir('paf-markers-')
    const repo = hostileRepo(markers)
    // It is hostile: plain git runs it.
    spawnSync('git', ['-C', repo.path, 'diff', 'HEAD', '--'])
    expect(readdirSync(markers)).toContain('fsmonitor')
    expect(readdirSync(markers)).toContain('process')
    for (const marker of readdirSync(markers)) rmSync(join(markers, marker))

    await expect(relay(relayOptions(repo.path, { includeDiff: true }))).resolves.toBe('mock answer')
    const prompt = mock.runs[0]?.prompt ?? ''
    for (const file of ['a.clean', 'b.proc', 'c.eq', 'd.conv', 'e.cmd']) {
      expect(prompt).toContain(`--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-two\n+three`)
    }
    await expect(reviewRelay({ repoPath: repo.path, backend: 'mock' })).resolves.toBe('mock answer')
    expect(mock.runs[1]?.prompt).toContain('--- a/e.cmd\n+++ b/e.cmd\n@@ -1 +1 @@\n-one\n+two')
    expect(gitDiffBase(repo.path, 'main')).toContain('--- a/d.conv\n+++ b/d.conv\n@@ -1 +1 @@\n-one\n+two')
    expect(detectDefaultBranch(repo.path)).toBe('main')
    expect(readdirSync(markers)).toEqual([])
  })
})

describe('a submodule’s own config runs no program', () => {
  /** A repository with a submodule whose own config (`.git/modules/sub/config`) runs a program
   * in every way git allows while it looks inside the submodule; its files modified, with stale
   * timestamps, so git must re-read them through the filters. */
  function repoWithHostileSubmodule(markers: string): TempRepo {
    const sub = repoWithCommit()
    sub.write('.gitattributes', '*.clean filter=evil\n*.proc filter=proc\n*.conv diff=conv\n*.cmd diff=cmd\n')
    const files = ['a.clean', 'b.proc', 'c.conv', 'd.cmd']
    for (const file of files) sub.write(file, 'one\n')
    sub.commit('files')
    const top = repoWithCommit()
    top.git('-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub.path, 'sub')
    top.commit('submodule')
    const touch = (name: string): string => `touch ${join(markers, name)}`
    const hooks = join(top.path, '.git', 'modules', 'sub', 'evil-hooks')
    execFileSync('mkdir', [hooks])
    writeFileSync(join(hooks, 'post-index-change'), `#!/bin/sh\n${touch('hook')}\n`, { mode: 0o755 })
    const settings: Array<[string, string]> = [
      ['filter.evil.clean', `${touch('clean')}; cat`],
      ['filter.proc.process', touch('process')],
      ['core.fsmonitor', `${touch('fsmonitor')}; true`],
      ['core.hooksPath', hooks],
      ['diff.external', touch('external')],
      ['diff.cmd.command', touch('command')],
      ['diff.conv.textconv', `${touch('textconv')}; cat`],
    ]
    for (const [key, value] of settings) execFileSync('git', ['-C', join(top.path, 'sub'), 'config', key, value])
    top.git('config', 'diff.submodule', 'diff')
    const stale = new Date('2001-09-09T01:46:40Z')
    for (const file of files) {
      writeFileSync(join(top.path, 'sub', file), 'two\n')
      utimesSync(join(top.path, 'sub', file), stale, stale)
    }
    return top
  }

  it('relay({ includeDiff }) with and without dryRun, and reviewRelay, run none of it', async () => {
    const markers = tempDir('paf-markers-')
    const repo = repoWithHostileSubmodule(markers)
    // It is hostile: plain git runs the submodule's filter.
    spawnSync('git', ['-C', repo.path, '-c', 'core.fsmonitor=false', 'diff', '--no-ext-diff', '--no-textconv', 'HEAD', '--'])
    expect(readdirSync(markers)).toContain('clean')
    for (const marker of readdirSync(markers)) rmSync(join(markers, marker))

    const dry = await relay({ ...relayOptions(repo.path, { includeDiff: true }), dryRun: true })
    expect(dry.envelope).toContain('+Subproject commit ')
    await expect(relay(relayOptions(repo.path, { includeDiff: true }))).resolves.toBe('mock answer')
    expect(mock.runs[0]?.prompt).toContain('+Subproject commit ')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'mock', base: 'HEAD~1' })).resolves.toBe('mock answer')
    expect(mock.runs[1]?.prompt).toContain('+Subproject commit ')
    expect(detectDefaultBranch(repo.path)).toBe('main')
    expect(readdirSync(markers)).toEqual([])
  })
})

describe('git that cannot start for want of file descriptors', () => {
  it('waits for descriptors within the call\'s time, then is ERR_GIT_DIFF naming the OS error, not "no diff"', () => {
    const dir = tempDir('paf-emfile-')
    const repo = repoWithCommit().write('a.txt', 'two\n')
    const script = join(dir, 'emfile.cjs')
    writeFileSync(
      script,
      `
const { openSync, closeSync } = require('node:fs')
const relay = require(process.env.PAF_PACKAGE)
relay.registerBackend({ name: 'mock', allowedSandboxes: ['read-only'], run: async () => 'mock answer' })
const options = { prompt: 'p', repoPath: process.env.PAF_REPO, backend: 'mock' }
;(async () => {
  await relay.relay(options) // starts the native runtime while descriptors are free
  const held = []
  try {
    for (;;) held.push(openSync('/dev/null', 'r'))
  } catch {}
  const outcomes = []
  const settle = (pending) => pending.then((answer) => ({ answer }), (error) => ({ code: error.code, message: error.message }))
  // None frees up within the call's time: the OS's words.
  outcomes.push(await settle(relay.relay({ ...options, includeDiff: true, timeoutSeconds: 1 })))
  // Some free up while git waits for them: it runs.
  setTimeout(() => held.splice(0, 16).forEach((fd) => closeSync(fd)), 300)
  outcomes.push(await settle(relay.relay({ ...options, includeDiff: true, timeoutSeconds: 20 })))
  for (const fd of held) closeSync(fd)
  process.stdout.write(JSON.stringify(outcomes))
})()
`,
    )
    const result = spawnSync('sh', ['-c', 'ulimit -n 256 && exec "$0" "$1"', process.execPath, script], {
      encoding: 'utf8',
      env: { ...process.env, PAF_PACKAGE: resolve(__dirname, '..'), PAF_REPO: repo.path },
      timeout: 30_000,
    })
    expect(result.stderr).toBe('')
    expect(JSON.parse(result.stdout)).toEqual([
      { code: 'ERR_GIT_DIFF', message: 'Failed to collect git diff against HEAD: could not run git: Too many open files (os error 24)' },
      { answer: 'mock answer' },
    ])
  })
})
