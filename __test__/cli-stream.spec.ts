// The CLI streams the answer (docs/CONTRACT.md §9, §10): as it comes by default, also into a pipe;
// at the end only with --no-stream and --json; byte for byte the same stdout either way; a reader
// that leaves, a signal or a failure mid-answer. No built-in backend streams in parts yet, so the
// streaming backend is `drip` (support/drip-backend.cjs), a JS backend preloaded into the CLI
// process.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { AnswerPrinter } from '../lib/cli/answer-printer.js'
import { FakeClis } from './support/fake-cli.js'
import { TempRepo } from './support/git-repo.js'
import { isAlive } from './support/processes.js'
import { CLI, type CliResult } from './support/run-cli.js'

const DRIP = join(__dirname, 'support', 'drip-backend.cjs')

let repo: TempRepo
let fake: FakeClis
let log: string

beforeEach(() => {
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  fake = new FakeClis()
  log = mkdtempSync(join(tmpdir(), 'paf-drip-'))
  for (const key of Object.keys(process.env)) if (key.startsWith('PHONE_A_FRIEND_')) delete process.env[key]
})

afterEach(() => {
  fake.restore()
  repo.remove()
  rmSync(log, { recursive: true, force: true })
})

interface Run extends CliResult {
  /** When the first bytes of stdout arrived (ms since the epoch), and what they were. */
  firstAt?: number
  first?: string
}

interface Drip {
  chunks?: string[]
  gapMs?: number
  fail?: string
  /** Each chunk this many times over (the environment cannot carry megabytes). */
  repeat?: number
}

function dripEnv({ chunks = [], gapMs = 0, fail, repeat = 1 }: Drip): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DRIP_LOG: log,
    DRIP_CHUNKS: JSON.stringify(chunks),
    DRIP_GAP_MS: String(gapMs),
    DRIP_REPEAT: String(repeat),
    ...(fail !== undefined && { DRIP_FAIL: fail }),
  }
}

/** Runs the CLI, `drip` preloaded, with stdout and stderr piped; `onFirst` sees the first stdout bytes. */
function run(args: string[], drip: Drip = {}, onFirst?: (child: ReturnType<typeof spawn>) => void): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--require', DRIP, CLI, '--repo', repo.path, ...args], { env: dripEnv(drip), stdio: ['ignore', 'pipe', 'pipe'] })
    const result: Run = { code: null, signal: null, stdout: '', stderr: '' }
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (result.firstAt === undefined) {
        result.firstAt = Date.now()
        result.first = chunk
        onFirst?.(child)
      }
      result.stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (result.stderr += chunk))
    child.on('error', fail)
    child.on('close', (code, signal) => done({ ...result, code, signal }))
  })
}

/** When drip's stream ended (ms since the epoch), as it recorded. */
const doneAt = (): number => Number(readFileSync(join(log, 'done'), 'utf8'))
const dripPid = (): number => Number(readFileSync(join(log, 'pid'), 'utf8'))

const HELLO: Drip = { chunks: ['Hel', 'lo, ', 'wor', 'ld'], gapMs: 200 }

describe('streaming by default', () => {
  it('prints the first chunk into a pipe well before the backend is done', async () => {
    const result = await run(['-p', 'hi', '--to', 'drip'], HELLO)
    expect(result).toMatchObject({ code: 0, stdout: 'Hello, world\n', stderr: '', first: 'Hel' })
    // The first chunk was on stdout before the backend's stream had ended (three more chunks came).
    expect(result.firstAt).toBeLessThan(doneAt())
  })

  it('streams a review too (through onChunk)', async () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'new\n').commit('feature')
    const result = await run(['--review', '--prompt', 'Naming only', '--to', 'drip'], HELLO)
    expect(result).toMatchObject({ code: 0, stdout: 'Hello, world\n', stderr: '', first: 'Hel' })
    expect(result.firstAt).toBeLessThan(doneAt())
  })

  it('--no-stream prints only once the backend is done, and the same bytes', async () => {
    const streamed = await run(['-p', 'hi', '--to', 'drip'], HELLO)
    const whole = await run(['-p', 'hi', '--to', 'drip', '--no-stream'], HELLO)
    expect(whole).toMatchObject({ code: 0, stdout: 'Hello, world\n', stderr: '', first: 'Hello, world\n' })
    expect(whole.firstAt).toBeGreaterThanOrEqual(doneAt())
    expect(whole.stdout).toBe(streamed.stdout)
  })

  it('--json never streams: one JSON document, once the backend is done', async () => {
    const result = await run(['-p', 'hi', '--to', 'drip', '--json'], HELLO)
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout.endsWith('}\n') && result.stdout.indexOf('\n') === result.stdout.length - 1).toBe(true)
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, output: 'Hello, world', backend: 'drip', coverage: null })
    expect(result.firstAt).toBeGreaterThanOrEqual(doneAt())
    const failed = await run(['-p', 'hi', '--to', 'drip', '--json'], { chunks: ['half'], fail: 'gone' })
    expect(failed).toMatchObject({ code: 1, stderr: '', stdout: `${JSON.stringify({ ok: false, backend: 'drip', error: { code: 'ERR_BACKEND_FAILED', message: 'gone', reason: 'crashed' } })}\n` })
  })

  it('a reader that does not keep up holds the backend back: the answer is not buffered whole', async () => {
    // 4 MiB: well past the 1 MiB held natively, Node's stdout buffer and the pipes between.
    const chunks = Array.from({ length: 64 }, (_, i) => String(i % 10))
    const env = dripEnv({ chunks, repeat: 65_536 })
    const child = spawn(process.execPath, ['--require', DRIP, CLI, '--repo', repo.path, '-p', 'hi', '--to', 'drip'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    const closed = new Promise<number | null>((done) => child.on('close', done))
    // Nothing read from stdout yet: once the pipe is full, the CLI must stop taking text.
    await vi.waitFor(() => expect(existsSync(join(log, 'pid'))).toBe(true), { timeout: 5_000, interval: 20 })
    await new Promise((done) => setTimeout(done, 1_000))
    expect(existsSync(join(log, 'done'))).toBe(false)
    expect(isAlive(dripPid())).toBe(true)
    let bytes = 0
    child.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length))
    expect(await closed).toBe(0)
    expect(bytes).toBe(64 * 65_536 + 1)
  })

  const SAME: Array<[string, string[], Drip, string]> = [
    ['drip, whitespace inside the answer', ['-p', 'hi', '--to', 'drip'], { chunks: ['Hel', 'lo,  ', '\n', '\n', ' wor', 'ld'], gapMs: 20 }, 'Hello,  \n\n world\n'],
    ['codex, its answer file', ['-p', 'hi'], {}, 'file answer\n'],
    ['gemini, its stdout', ['-p', 'hi', '--to', 'gemini'], {}, 'stdout answer\n'],
    ['codex, its native review', ['--review', '--base', 'HEAD'], {}, 'file answer\n'],
  ]

  it.each(SAME)('stdout is the same streamed or not: %s', async (_name, args, drip, expected) => {
    // The fake CLIs answer with whitespace around: "  file answer\n", "  stdout answer \n".
    fake.mode(args.includes('gemini') ? 'stdout-only' : 'answer')
    const streamed = await run(args, drip)
    const whole = await run([...args, '--no-stream'], drip)
    expect(streamed).toMatchObject({ code: 0, stderr: '', stdout: expected })
    expect(whole).toMatchObject({ code: 0, stderr: '', stdout: expected })
  })
})

describe('streaming interrupted', () => {
  const LONG: Drip = { chunks: Array.from({ length: 200 }, (_, i) => `c${i} `), gapMs: 20 }

  it('a reader that closes stdout mid-answer (| head -c 5) stops the backend; exit 141, quietly', async () => {
    const started = Date.now()
    const result = await run(['-p', 'hi', '--to', 'drip'], LONG, (child) => child.stdout?.destroy())
    expect(result).toMatchObject({ code: 141, signal: null, stderr: '', first: 'c0' })
    // 200 chunks 20 ms apart take 4 s; the run ended long before.
    expect(Date.now() - started).toBeLessThan(3_500)
    expect(existsSync(join(log, 'aborted'))).toBe(true)
    await vi.waitFor(() => expect(isAlive(dripPid())).toBe(false), { timeout: 2_000, interval: 20 })
  })

  it.each([
    ['SIGINT', 130, 'Interrupted.'],
    ['SIGTERM', 143, 'Terminated.'],
    ['SIGHUP', 129, 'Hangup.'],
  ] as const)('%s mid-answer stops the backend and exits %i; the partial answer ends its line', async (signal, code, note) => {
    const result = await run(['-p', 'hi', '--to', 'drip'], LONG, (child) => child.kill(signal))
    expect(result).toMatchObject({ code, signal: null, stderr: `${note}\n` })
    // Each chunk's trailing space waits for the next chunk; the line is ended instead.
    expect(result.stdout).toMatch(/^c0( c\d+)*\n$/)
    expect(existsSync(join(log, 'aborted'))).toBe(true)
    await vi.waitFor(() => expect(isAlive(dripPid())).toBe(false), { timeout: 2_000, interval: 20 })
  })

  it('an error after part of the answer: that part on stdout, the error on stderr, exit 1', async () => {
    const result = await run(['-p', 'hi', '--to', 'drip'], { chunks: ['partial ', 'answer'], gapMs: 20, fail: 'the model went away' })
    expect(result).toMatchObject({ code: 1, signal: null, stdout: 'partial answer\n', stderr: 'Error [ERR_BACKEND_FAILED] (drip): the model went away\n' })
  })
})

describe('the spinner while streaming', () => {
  it('is cleared before the first chunk and not drawn again', () => {
    const command = [process.execPath, '--require', DRIP, CLI, '-p', 'hi', '--to', 'drip', '--repo', repo.path].map((word) => JSON.stringify(word)).join(' ')
    const { CI: _ci, ...env } = dripEnv({ chunks: ['Hel', 'lo'], gapMs: 300 })
    const tty = execFileSync('script', ['-qec', command, '/dev/null'], { env, encoding: 'utf8' })
    const first = tty.indexOf('Hel')
    expect(first).toBeGreaterThan(0)
    const before = tty.slice(0, first)
    expect(before).toMatch(/⠋ asking drip… 0s/)
    expect(before.endsWith('\r\x1b[2K')).toBe(true)
    expect(tty.slice(first)).toMatch(/^Hello\r?\n$/)
  })
})

describe('--no-stream in help and typos', () => {
  it('help names it; a typo of it names it', () => {
    const help = execFileSync(process.execPath, [CLI, 'help', 'relay'], { encoding: 'utf8' })
    expect(help).toContain('[--no-stream]')
    expect(help).toContain('--no-stream          Wait for the whole answer')
    let stderr = ''
    try {
      execFileSync(process.execPath, [CLI, '-p', 'hi', '--no-stram'], { encoding: 'utf8', stdio: 'pipe' })
    } catch (error) {
      stderr = (error as { stderr: string }).stderr
    }
    expect(stderr.split('\n')[0]).toBe("phone-a-friend: Unknown option '--no-stram'. Did you mean --no-stream?")
  })
})

describe('AnswerPrinter', () => {
  /** Feeds `chunks`, then the final answer; returns what was written, write by write, and when the first-write hook ran. */
  function print(chunks: string[], answer: string): string[] {
    const events: string[] = []
    const printer = new AnswerPrinter({ write: (text) => events.push(text) > 0, destroyed: false }, () => events.push('<first>'), 1_000)
    for (const chunk of chunks) printer.write(chunk)
    printer.finish(answer)
    return events
  }

  it('holds back leading whitespace until text comes, trailing whitespace until more text comes', () => {
    expect(print(['\n answer \n'], 'answer')).toEqual(['<first>', 'answer', '\n'])
    expect(print(['\n', '  ', ' an', 'swer', ' ', '\n', ' \n'], 'answer')).toEqual(['<first>', 'an', 'swer', '\n'])
    expect(print(['one', '  ', '\n\n', 'two', ' '], 'one  \n\ntwo')).toEqual(['<first>', 'one', '  \n\ntwo', '\n'])
  })

  it('ends with what --no-stream prints: the answer and a newline', () => {
    const cases: Array<[string[], string]> = [
      [[], 'whole answer'],
      [['whole answer'], 'whole answer'],
      [['  whole', ' answer  '], 'whole answer'],
      [['whole'], 'whole answer'],
      [[' \n '], 'late answer'],
    ]
    for (const [chunks, answer] of cases) expect(print(chunks, answer).filter((e) => e !== '<first>').join('')).toBe(`${answer}\n`)
  })

  it('a run of several messages keeps them all; an answer missing from the stream follows it', () => {
    expect(print(['first message', '\n\n', 'the answer'], 'the answer').join('')).toBe('<first>first message\n\nthe answer\n')
    expect(print(['progress'], 'the answer').join('')).toBe('<first>progress\n\nthe answer\n')
  })

  it('says to wait when the output does; abandon() ends a partial line unless the output is gone', () => {
    const written: string[] = []
    const out = { write: (text: string) => written.push(text) < 2, destroyed: false }
    const printer = new AnswerPrinter(out, () => undefined, 1_000)
    expect(printer.write('  ')).toBe(true)
    expect(printer.write('a')).toBe(true)
    expect(printer.write('b')).toBe(false)
    printer.abandon()
    expect(written).toEqual(['a', 'b', '\n'])
    out.destroyed = true
    printer.abandon()
    expect(written).toHaveLength(3)
    const unused = new AnswerPrinter(out, () => undefined, 1_000)
    out.destroyed = false
    unused.write(' \n')
    unused.abandon()
    expect(written).toHaveLength(3)
  })
})
