// The antigravity backend against a fake `agy` that behaves as agy's documentation says
// (docs/BACKENDS.md §5): Go-style flags (an unknown one fails), the prompt only from `--prompt`
// (stdin never read), `--output-format json` printing one result object. No real agy is run:
// none can be installed here.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { _resetRegistry, doctor, registerBackend, relay, relayDetailed, reviewRelay } from '@phone-a-friend/relay'
import { isAlive } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { skipWithoutSubreaper } from './support/platform.js'
import { runCli } from './support/run-cli.js'

/** The fake: its mode from AGY_MODE, what it was given written to AGY_LOG. */
const FAKE_AGY = `#!${process.execPath}
const fs = require('node:fs')
const path = require('node:path')
const log = (name, text) => fs.writeFileSync(path.join(process.env.AGY_LOG, name), text)
const VALUED = new Set(['--add-dir', '--print-timeout', '--mode', '--output-format', '--model', '--prompt', '-p'])
const BOOLEAN = new Set(['--sandbox', '--version'])
const args = process.argv.slice(2)
const flags = {}
for (let i = 0; i < args.length; i++) {
  const arg = args[i]
  if (BOOLEAN.has(arg)) flags[arg] = true
  else if (VALUED.has(arg) && i + 1 < args.length) flags[arg] = args[++i]
  else {
    process.stderr.write('flag provided but not defined: ' + arg + '\\nUsage of agy:\\n')
    process.exit(2)
  }
}
if (flags['--version']) {
  process.stdout.write('1.1.23\\n')
  process.exit(0)
}
log('args.json', JSON.stringify(args))
log('cwd', process.cwd())
log('pid', String(process.pid))
// Never read in print mode (agy 1.1.1); recorded to show the relay sends nothing there.
log('stdin', fs.readFileSync(0, 'utf8'))
const prompt = flags['--prompt'] ?? flags['-p']
if (prompt === undefined) { process.stderr.write('no prompt\\n'); process.exit(2) }
if (!/^\\d+s$/.test(flags['--print-timeout'] ?? '')) { process.stderr.write('bad --print-timeout\\n'); process.exit(2) }
const json = flags['--output-format'] === 'json'
const answer = process.env.AGY_ANSWER ?? 'Looks fine. ' + prompt.length + ' bytes read.'
const usage = { input_tokens: 120, output_tokens: 30, thinking_tokens: 12, cache_read_tokens: 100, total_tokens: 150 }
switch (process.env.AGY_MODE) {
  case 'empty':
    break
  case 'fail':
    process.stderr.write('Error: RESOURCE_EXHAUSTED: quota exceeded for this account\\n')
    process.exit(1)
  case 'status-error':
    process.stdout.write(JSON.stringify({ conversation_id: 'c1', status: 'ERROR', error: 'model overloaded, try again later' }) + '\\n')
    break
  case 'hang': {
    const grandchild = require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    log('grandchild', String(grandchild.pid))
    setInterval(() => {}, 1000)
    break
  }
  default:
    process.stdout.write(json
      ? JSON.stringify({ conversation_id: 'c1', status: 'SUCCESS', response: answer + '\\n', duration_seconds: 1.2, num_turns: 1, usage }) + '\\n'
      : answer + '\\n')
}
`

let repo: TempRepo
let bin: string
let log: string
const saved = { PATH: process.env.PATH, AGY_LOG: process.env.AGY_LOG, AGY_MODE: process.env.AGY_MODE, AGY_ANSWER: process.env.AGY_ANSWER }

function fakeAgy(mode = 'answer', answer?: string): void {
  process.env.AGY_MODE = mode
  if (answer === undefined) delete process.env.AGY_ANSWER
  else process.env.AGY_ANSWER = answer
}

const read = (name: string): string => readFileSync(join(log, name), 'utf8')
const ran = (): boolean => existsSync(join(log, 'args.json'))

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  bin = mkdtempSync(join(tmpdir(), 'paf-agy-bin-'))
  log = mkdtempSync(join(tmpdir(), 'paf-agy-log-'))
  writeFileSync(join(bin, 'agy'), FAKE_AGY)
  chmodSync(join(bin, 'agy'), 0o755)
  process.env.PATH = `${bin}:${saved.PATH ?? ''}`
  process.env.AGY_LOG = log
  fakeAgy()
})

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  repo.remove()
  rmSync(bin, { recursive: true, force: true })
  rmSync(log, { recursive: true, force: true })
})

const noSubreaper = skipWithoutSubreaper('the antigravity relays')

describe.skipIf(noSubreaper)('antigravity (a fake agy, as documented)', () => {
  it('runs upstream\'s invocation with --output-format json, the envelope as the last argument and stdin empty', async () => {
    const answer = await relay({ prompt: 'Check it', repoPath: repo.path, backend: 'antigravity', model: 'gemini-3-flash' })
    const args = JSON.parse(read('args.json')) as string[]
    const envelope = args.at(-1) ?? ''
    expect(answer).toBe(`Looks fine. ${envelope.length} bytes read.`)
    expect(args.slice(0, 2)).toEqual(['--add-dir', repo.path])
    expect(args[2]).toBe('--print-timeout')
    expect(args[3]).toMatch(/^\d+s$/)
    expect(args.slice(4, -1)).toEqual(['--sandbox', '--mode', 'plan', '--output-format', 'json', '--model', 'gemini-3-flash', '--prompt'])
    expect(envelope).toContain(`Repository path: ${repo.path}`)
    expect(envelope.endsWith('Request:\nCheck it')).toBe(true)
    expect(read('stdin')).toBe('')
    expect(read('cwd')).toBe(repo.path)
  })

  it('answers plain stdout as printed when there is no JSON result', async () => {
    // An agy printing text (as `--output-format text` does) still answers.
    writeFileSync(join(bin, 'agy'), FAKE_AGY.replace("flags['--output-format'] === 'json'", 'false'))
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity' })).resolves.toMatch(/^Looks fine\. \d+ bytes read\.$/)
  })

  it('reviews on the generic path, the diff in the envelope', async () => {
    repo.write('a.txt', 'two\n').commit('second')
    await reviewRelay({ repoPath: repo.path, backend: 'antigravity', base: 'HEAD~1' })
    const envelope = (JSON.parse(read('args.json')) as string[]).at(-1) ?? ''
    expect(envelope).toContain('+two')
  })

  it('asks for a schema in the envelope and checks the answer against it', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
    fakeAgy('answer', '{"ok": true}')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity', schema })).resolves.toBe('{"ok": true}')
    expect((JSON.parse(read('args.json')) as string[]).at(-1)).toContain('"required":["ok"]')
    fakeAgy('answer', '{"ok": "yes"}')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity', schema })).rejects.toMatchObject({ code: 'ERR_SCHEMA' })
  })

  it('refuses every sandbox but read-only before agy runs', async () => {
    for (const sandbox of ['workspace-write', 'danger-full-access'] as const) {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity', sandbox })).rejects.toMatchObject({ code: 'ERR_INVALID_SANDBOX' })
    }
    expect(ran()).toBe(false)
  })

  it('refuses an envelope over one argument\'s bound with ERR_TOO_LARGE before agy runs', async () => {
    const call = relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity', contextText: 'x'.repeat(131_000) })
    await expect(call).rejects.toMatchObject({ code: 'ERR_TOO_LARGE', message: expect.stringContaining('max 130000 bytes): agy takes its prompt as one argument') })
    expect(ran()).toBe(false)
  })

  it('with a fallback, that refusal asks the next backend (nothing was spent), and says so', async () => {
    const prompts: string[] = []
    registerBackend({ name: 'roomy', allowedSandboxes: ['read-only'], run: async ({ prompt }) => (prompts.push(prompt), 'from roomy') })
    const warnings: string[] = []
    const details = await relayDetailed({ prompt: 'p', repoPath: repo.path, backend: 'antigravity', fallback: ['roomy'], contextText: 'x'.repeat(131_000), onWarning: (w) => warnings.push(w) })
    expect(details).toMatchObject({ answer: 'from roomy', backend: 'roomy' })
    expect(details.attempts).toEqual([{ backend: 'antigravity', reason: 'output', code: 'ERR_TOO_LARGE', message: expect.stringContaining('agy takes its prompt as one argument') }])
    expect(warnings).toEqual([expect.stringMatching(/^\[phone-a-friend\] fallback: antigravity cannot answer now \(output\): Relay prompt is too large for antigravity .*; asking roomy$/)])
    expect(prompts[0]).toContain('x'.repeat(131_000))
    expect(ran()).toBe(false)
  })

  it('an empty answer names the headless pitfall', async () => {
    fakeAgy('empty')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_NO_OUTPUT',
      message: expect.stringMatching(/^agy completed without producing output\. agy before 1\.1\.8 printed nothing .* stdout was not a terminal .*`agy update`$/),
      reason: 'output',
    })
  })

  it('a failure says agy\'s words and their reason; a failed status too', async () => {
    fakeAgy('fail')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'Error: RESOURCE_EXHAUSTED: quota exceeded for this account',
      reason: 'quota',
    })
    fakeAgy('status-error')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'agy reported status ERROR: model overloaded, try again later',
    })
  })

  it('an abort kills agy and what it started', async () => {
    fakeAgy('hang')
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, backend: 'antigravity', signal: controller.signal })
    await vi.waitFor(() => expect(read('grandchild')).toMatch(/^\d+$/), { timeout: 5_000 })
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    for (const pid of [Number(read('pid')), Number(read('grandchild'))]) {
      await vi.waitFor(() => expect(isAlive(pid)).toBe(false), { timeout: 3_000 })
    }
  })

  it('the CLI relays with --to antigravity', async () => {
    const result = await runCli(['--prompt', 'Check it', '--repo', repo.path, '--to', 'antigravity'], { env: process.env })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Looks fine\. \d+ bytes read\.\n$/)
  })

  it('doctor finds agy, reads its version and says it was checked against documentation, not the binary', async () => {
    // Only the fake on PATH: the other CLIs' checks are not this test's business.
    process.env.PATH = bin
    const documented = "not verified against a real agy: checked against the documentation of agy 1.1.23 and upstream phone-a-friend's code (docs/BACKENDS.md)"
    const found = (await doctor()).backends.find((backend) => backend.name === 'antigravity')
    expect(found).toMatchObject({ found: true, ready: true, version: '1.1.23', documented, signIn: { state: 'unknown' } })
    expect(found?.verifiedVersion).toBeUndefined()
    const text = await runCli(['doctor'], { env: process.env })
    expect(text.stdout).toContain('? antigravity 1.1.23, sign-in not known: run `agy` once in a terminal and sign in with Google')
    expect(text.stdout).toContain(documented)
    rmSync(join(bin, 'agy'))
    const missing = (await doctor()).backends.find((backend) => backend.name === 'antigravity')
    expect(missing).toMatchObject({ found: false, ready: false, install: 'https://antigravity.google/docs/cli/install', documented })
  })
})
