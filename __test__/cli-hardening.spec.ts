// The CLI at its edges: a reader that goes away, signals, bad numbers, typos, help, and doctor's
// Ollama probe. Each case runs the real bin as a process against fake CLIs of its own.
import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { TempRepo } from './support/git-repo.js'
import { CLI } from './support/run-cli.js'

let repo: TempRepo
let bin: string
let log: string
let tmp: string

beforeEach(() => {
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  bin = mkdtempSync(join(tmpdir(), 'paf-hard-bin-'))
  log = mkdtempSync(join(tmpdir(), 'paf-hard-log-'))
  tmp = mkdtempSync(join(tmpdir(), 'paf-hard-tmp-'))
})

afterEach(() => {
  repo.remove()
  for (const dir of [bin, log, tmp]) rmSync(dir, { recursive: true, force: true })
})

/** A fake `codex` on PATH running `body` (sh) after it has read its stdin; `$LOG` is a log folder. */
function fakeCodex(body: string): void {
  const file = join(bin, 'codex')
  writeFileSync(file, `#!/bin/sh\ncat > /dev/null\n${body}\n`)
  chmodSync(file, 0o755)
}

/** The environment of a CLI run: the fake first on PATH, a private TMPDIR, no PHONE_A_FRIEND_* defaults. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('PHONE_A_FRIEND_')))
  return { ...base, PATH: `${bin}:${process.env.PATH ?? ''}`, LOG: log, TMPDIR: tmp, ...extra }
}

describe('a reader that closes early', () => {
  it('ends quietly with exit 141 when stdout is closed mid-answer (| head -c 5)', async () => {
    fakeCodex(`head -c 1048576 /dev/zero | tr '\\0' a`)
    const child = spawn(process.execPath, [CLI, '-p', 'hi', '--to', 'codex'], { env: env(), cwd: repo.path, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    // Like `head -c 5`: take the first bytes, then close the read end while the CLI still writes.
    const first = await new Promise<string>((done) => child.stdout.once('data', (chunk: Buffer) => done(chunk.subarray(0, 5).toString())))
    child.stdout.destroy()
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => child.on('close', (c, s) => done([c, s])))
    expect(first).toBe('aaaaa')
    expect({ code, signal, stderr }).toEqual({ code: 141, signal: null, stderr: '' })
  })

  it('ends quietly with exit 141 when stderr is closed before an error is written', async () => {
    const child = spawn(process.execPath, [CLI, '--prompt', '  ', '--repo', repo.path], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] })
    child.stderr.destroy()
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => child.on('close', (c, s) => done([c, s])))
    expect({ code, signal, stdout }).toEqual({ code: 141, signal: null, stdout: '' })
  })
})
