// The CLI at its edges: a reader that goes away, signals, bad numbers, typos, help, and doctor's
// Ollama probe. Each case runs the real bin as a process against fake CLIs of its own.
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { TempRepo } from './support/git-repo.js'
import { isAlive, processesWithEnv } from './support/processes.js'
import { once } from 'node:events'
import { closedHost, startOllamaStub, type OllamaStub } from './support/ollama-stub.js'
import { CLI, runCli, type CliResult } from './support/run-cli.js'
import { closest, editDistance } from '../lib/cli/suggest.js'

let repo: TempRepo
let bin: string
let log: string
let tmp: string
/** In every process a test starts (the CLI, its supervisor, the fake CLI and its children). */
let mark: string

beforeEach(() => {
  mark = `hard-${process.pid}-${Date.now()}-${Math.random()}`
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  bin = mkdtempSync(join(tmpdir(), 'paf-hard-bin-'))
  log = mkdtempSync(join(tmpdir(), 'paf-hard-log-'))
  tmp = mkdtempSync(join(tmpdir(), 'paf-hard-tmp-'))
  // Never the real codex of node_modules/.bin: a test that needs an answer installs its own.
  fakeCodex('echo "fake codex: not expected to run" >&2; exit 9')
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
  return { ...base, PATH: `${bin}:${process.env.PATH ?? ''}`, LOG: log, TMPDIR: tmp, PAF_HARD_MARK: mark, ...extra }
}

/** Starts the CLI with its stdin left open, for tests that drive it while it runs. */
function start(args: string[], extra: Record<string, string> = {}): { child: ChildProcessWithoutNullStreams; result: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: env(extra), cwd: repo.path, stdio: 'pipe' })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const result = new Promise<CliResult>((done, fail) => {
    child.on('error', fail)
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }))
  })
  return { child, result }
}

/**
 * Resolves once the CLI has opened its stdin for reading: Node then puts the pipe in non-blocking
 * mode (O_NONBLOCK, 04000 in /proc/<pid>/fdinfo/0), which it never does before.
 */
async function readingStdin(pid: number): Promise<void> {
  await vi.waitFor(
    () => {
      const flags = /flags:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/fdinfo/0`, 'utf8'))?.[1]
      expect(Number.parseInt(flags ?? '0', 8) & 0o4000).not.toBe(0)
    },
    { timeout: 5_000, interval: 10 },
  )
}

/** Resolves with the result, or with `undefined` if the run is not over within `ms`. */
function within(result: Promise<CliResult>, ms: number): Promise<CliResult | undefined> {
  return Promise.race([result, new Promise<undefined>((done) => setTimeout(() => done(undefined), ms))])
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
    // The relay was stopped with the reader: nothing of it runs on, no temp folder stays.
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 2_000, interval: 20 })
    expect(readdirSync(tmp)).toEqual([])
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

describe('signals', () => {
  it('a single Ctrl-C while --prompt - waits on an open pipe stops reading and exits 130', async () => {
    fakeCodex('printf "never asked\\n"')
    const { child, result } = start(['--prompt', '-'])
    child.stdin.write('half a prompt') // and the pipe stays open
    await readingStdin(child.pid as number)
    child.kill('SIGINT')
    const ended = await within(result, 3_000)
    if (!ended) child.kill('SIGKILL')
    expect(ended).toEqual({ code: 130, signal: null, stdout: '', stderr: 'Interrupted.\n' })
  })

  it('with --json the interruption is a JSON error on stdout', async () => {
    const { child, result } = start(['--prompt', '-', '--json'])
    await readingStdin(child.pid as number)
    child.kill('SIGINT')
    const ended = await within(result, 3_000)
    if (!ended) child.kill('SIGKILL')
    expect(ended?.code).toBe(130)
    expect(JSON.parse(ended?.stdout ?? '')).toEqual({ ok: false, error: { code: 'ABORT_ERR', message: 'Interrupted (SIGINT)' } })
  })

  it('on a terminal, --prompt - says on stderr that it reads stdin; Ctrl-D ends the prompt, Ctrl-C cancels', async () => {
    // `script` (util-linux) gives the CLI a pseudo-terminal; stderr goes to a file to be told apart.
    expect(existsSync('/usr/bin/script') || existsSync('/bin/script'), 'util-linux `script` is needed for a pseudo-terminal').toBe(true)
    fakeCodex('printf "tty answer\\n"')
    const note = 'phone-a-friend: reading the prompt from stdin (end it with Ctrl-D, cancel with Ctrl-C)\n'
    const errFile = join(log, 'stderr')
    const onTty = (keys: string): Promise<{ code: number | null; output: string; stderr: string }> => {
      rmSync(errFile, { force: true })
      const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} --prompt - 2>${JSON.stringify(errFile)}`
      const child = spawn('script', ['-qec', command, '/dev/null'], { env: env(), cwd: repo.path, stdio: 'pipe' })
      let output = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
      const closed = new Promise<number | null>((done) => child.on('close', done))
      return vi
        .waitFor(() => expect(existsSync(errFile) && readFileSync(errFile, 'utf8')).toBe(note), { timeout: 5_000, interval: 10 })
        .then(() => child.stdin.write(keys))
        .then(() => closed)
        .then((code) => ({ code, output, stderr: readFileSync(errFile, 'utf8') }))
    }
    const answered = await onTty('hello tty\n\x04')
    expect(answered).toMatchObject({ code: 0, stderr: note })
    expect(answered.output).toContain('tty answer')
    const cancelled = await onTty('\x03')
    expect(cancelled).toMatchObject({ code: 130, stderr: `${note}Interrupted.\n` })
  })

  it.each([
    ['SIGTERM', 143, 'Terminated.\n'],
    ['SIGHUP', 129, 'Hangup.\n'],
  ] as const)('%s aborts the relay: the backend is killed, its temp folder removed, exit %i', async (name, code, note) => {
    fakeCodex('echo $$ > "$LOG/pid"; exec sleep 30')
    const { child, result } = start(['--prompt', 'P', '--to', 'codex'])
    await vi.waitFor(() => expect(readFileSync(join(log, 'pid'), 'utf8')).toMatch(/^\d+\n$/), { timeout: 5_000, interval: 10 })
    const backend = Number(readFileSync(join(log, 'pid'), 'utf8'))
    expect(readdirSync(tmp)).toEqual([expect.stringMatching(/^phone-a-friend-codex-/)])
    child.kill(name)
    const ended = await within(result, 3_000)
    if (!ended) child.kill('SIGKILL')
    expect(ended).toEqual({ code, signal: null, stdout: '', stderr: note })
    await vi.waitFor(() => expect(isAlive(backend)).toBe(false), { timeout: 2_000, interval: 20 })
    // Nor the supervisor, nor anything else the relay started.
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 2_000, interval: 20 })
    expect(readdirSync(tmp)).toEqual([])
  })

  it('piped stdin gets no note', async () => {
    fakeCodex('printf "piped answer\\n"')
    const { child, result } = start(['--prompt', '-'])
    child.stdin.end('hello')
    expect(await result).toEqual({ code: 0, signal: null, stdout: 'piped answer\n', stderr: '' })
  })
})

describe('--timeout', () => {
  it.each([
    [['--timeout', 'abc'], {}, '--timeout value "abc"'],
    [['--timeout', '5m'], {}, '--timeout value "5m"'],
    [['--timeout', '0x10'], {}, '--timeout value "0x10"'],
    [['--timeout', 'Infinity'], {}, '--timeout value "Infinity"'],
    [['--timeout', ''], {}, '--timeout value ""'],
    [[], { PHONE_A_FRIEND_TIMEOUT: 'abc' }, 'PHONE_A_FRIEND_TIMEOUT value "abc"'],
  ])('%j %j is a usage error naming the value', async (args, extra, named) => {
    const result = await runCli(['--prompt', 'P', ...args], { env: env(extra), cwd: repo.path })
    expect(result.code).toBe(2)
    expect(result.stderr.split('\n')[0]).toBe(`phone-a-friend: invalid ${named}: expected a number of seconds, like 30 or 2.5`)
    expect(result.stderr).not.toContain('ERR_INVALID_TIMEOUT')
  })

  it('a bad value is reported before --prompt - waits on stdin', async () => {
    const { result } = start(['--prompt', '-', '--timeout', 'soon']) // stdin left open
    const ended = await within(result, 3_000)
    expect(ended?.code).toBe(2)
  })

  it('a number out of range stays the relay\'s ERR_INVALID_TIMEOUT (exit 1)', async () => {
    for (const args of [['--timeout', '0'], ['--timeout=-1'], ['--timeout', '1e999']]) {
      const result = await runCli(['--prompt', 'P', ...args], { env: env(), cwd: repo.path })
      expect(result).toMatchObject({ code: 1, stderr: "Error [ERR_INVALID_TIMEOUT]: Timeout must be greater than zero\nHint: timeoutSeconds (the CLI's --timeout) takes a number of seconds greater than zero, such as 30 or 2.5; a string such as '30', NaN or Infinity is not one\n" })
    }
  })

  it('decimal numbers are accepted; the flag wins over a bad PHONE_A_FRIEND_TIMEOUT', async () => {
    fakeCodex('printf "in time\\n"')
    for (const value of ['30', '2.5', '.5', '1e3']) {
      const result = await runCli(['--prompt', 'P', '--timeout', value], { env: env({ PHONE_A_FRIEND_TIMEOUT: 'abc' }), cwd: repo.path })
      expect(result).toEqual({ code: 0, signal: null, stdout: 'in time\n', stderr: '' })
    }
  })
})

describe('--json and usage errors', () => {
  it.each([
    [['--json'], 'missing --prompt'],
    [['--json', '--prompt', 'P', '--timeout', 'soon'], 'invalid --timeout value "soon": expected a number of seconds, like 30 or 2.5'],
    [['--prompt', 'P', '--bogus', '--json'], "Unknown option '--bogus'"],
    [['launch', '--json'], 'unknown command: launch'],
  ])('%j prints { ok: false, error: { code: ERR_USAGE } } on stdout and exits 2', async (args, message) => {
    const result = await runCli(args, { env: env(), cwd: repo.path })
    expect(result).toMatchObject({ code: 2, stderr: '' })
    const printed = JSON.parse(result.stdout) as { ok: boolean; error: { code: string; message: string } }
    expect(printed).toEqual({ ok: false, error: { code: 'ERR_USAGE', message: expect.any(String) } })
    expect(printed.error.message.startsWith(message)).toBe(true)
  })

  it('a --json after -- is a positional, not the option', async () => {
    const result = await runCli(['--prompt', 'P', '--', '--json'], { env: env(), cwd: repo.path })
    expect(result).toMatchObject({ code: 2, stdout: '' })
    expect(result.stderr).toMatch(/^phone-a-friend: unknown command: --json/)
  })
})

describe('bounded inputs', () => {
  /** The result, or after `ms` the result of a SIGTERM, or else of a SIGKILL (`undefined` then). */
  async function endedOrStopped(child: ChildProcessWithoutNullStreams, result: Promise<CliResult>, ms: number): Promise<CliResult | undefined> {
    const ended = (await within(result, ms)) ?? (child.kill('SIGTERM'), await within(result, 2_000))
    if (!ended) child.kill('SIGKILL')
    return ended
  }

  it('--prompt - stops reading one read past the prompt limit: ERR_TOO_LARGE, the rest never read', async () => {
    const { child, result } = start(['--prompt', '-'])
    child.stdin.on('error', () => undefined) // EPIPE once the CLI has gone
    let over = false
    void result.then(() => (over = true))
    // A producer of 64 MiB that writes only as fast as the CLI reads, counting what it gave.
    const chunk = Buffer.alloc(64 * 1024, 'a')
    let written = 0
    while (!over && written < 64 * 1024 * 1024) {
      written += chunk.length
      // (An EPIPE, once the CLI has gone, rejects the wait for 'drain': the loop then ends.)
      if (!child.stdin.write(chunk)) await Promise.race([once(child.stdin, 'drain').catch(() => undefined), result])
    }
    child.stdin.end()
    expect(await result).toEqual({
      code: 1,
      signal: null,
      stdout: '',
      stderr: 'Error [ERR_TOO_LARGE]: Prompt on stdin is too large (over the limit of 500000 bytes)\nHint: Shorten it: name the files in the prompt for the backend to read in the repository, and send only what it cannot read there\n',
    })
    // The limit, plus what a pipe and one read hold.
    expect(written).toBeLessThan(4 * 1024 * 1024)
  })

  it('--schema /dev/zero is a usage error at once: only a regular file is read, and at most 1 MiB of it', async () => {
    const { child, result } = start(['--prompt', 'P', '--schema', '/dev/zero'])
    const ended = await endedOrStopped(child, result, 5_000)
    expect(ended).toMatchObject({ code: 2, stdout: '' })
    expect(ended?.stderr.split('\n')[0]).toBe('phone-a-friend: --schema /dev/zero: not a regular file')
    const big = join(log, 'big.json')
    writeFileSync(big, `{"description":"${'x'.repeat(1024 * 1024)}"}`)
    const tooBig = await runCli(['--prompt', 'P', '--schema', big], { env: env(), cwd: repo.path })
    expect(tooBig).toMatchObject({ code: 2, stdout: '' })
    expect(tooBig.stderr.split('\n')[0]).toBe(`phone-a-friend: --schema file ${big} is too large (over the limit of 1048576 bytes)`)
  })

  it('--schema <fifo> is refused at once, never waiting for a writer (nor past a SIGTERM)', async () => {
    const fifo = join(log, 'fifo')
    execFileSync('mkfifo', [fifo])
    const { child, result } = start(['--prompt', 'P', '--schema', fifo])
    const ended = await endedOrStopped(child, result, 5_000)
    expect(ended).toMatchObject({ code: 2, signal: null, stdout: '' })
    expect(ended?.stderr).toMatch(/^phone-a-friend: --schema \S+: not a regular file\n/)
  })
})

describe('flags a command would not use', () => {
  it.each([
    [['--prompt', 'P', '--backend-session', 'abc'], '--backend-session needs --session: the label to keep it under'],
    [['--review', '--session', 'talk'], 'a review (--review, --base, --verdict) takes no --session'],
    [['--base', 'HEAD', '--session', 'talk', '--backend-session', 'abc'], 'a review (--review, --base, --verdict) takes no --session'],
    [['--prompt', 'P', '--older-than', '3'], '--older-than is for sessions prune'],
  ])('%j is a usage error, not a flag silently dropped', async (args, message) => {
    const result = await runCli(args, { env: env(), cwd: repo.path })
    expect(result).toMatchObject({ code: 2, stdout: '' })
    expect(result.stderr.split('\n')[0]).toBe(`phone-a-friend: ${message}`)
    const json = await runCli([...args, '--json'], { env: env(), cwd: repo.path })
    expect(json).toMatchObject({ code: 2, stderr: '' })
    expect(JSON.parse(json.stdout)).toEqual({ ok: false, error: { code: 'ERR_USAGE', message } })
  })
})

describe('the session store, printed', () => {
  /** Any character a terminal would act on or hide, but a tab or a line break. */
  const UNPRINTABLE = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

  it('labels and ids from a hand-edited store are escaped: sessions list, prune, --json', async () => {
    const home = mkdtempSync(join(log, 'home-'))
    const label = 'x\x1b]0;owned\x07\u202e\u200b\ufeff\u00ad\u2066\x7f\x85y'
    const session = { id: label, backend: 'codex', backendSessionId: 'id\x1b[2J', repoPath: '/r\u202e', history: [], createdAt: '2020-01-01T00:00:00.000Z', lastUsedAt: '2020-01-01T00:00:00.000Z' }
    writeFileSync(join(home, 'sessions.json'), JSON.stringify([session]))
    const cli = (args: string[]): Promise<CliResult> => runCli(args, { env: env({ PHONE_A_FRIEND_HOME: home }), cwd: repo.path })
    const shown = 'x\\u{1b}]0;owned\\u{7}\\u{202e}\\u{200b}\\u{feff}\\u{ad}\\u{2066}\\u{7f}\\u{85}y'
    const listed = await cli(['sessions', 'list'])
    expect(listed).toEqual({ code: 0, signal: null, stderr: '', stdout: `${shown}\tcodex\t/r\\u{202e}\t2020-01-01T00:00:00.000Z\tid\\u{1b}[2J\n` })
    const json = await cli(['sessions', '--json'])
    expect(json.stdout).not.toMatch(UNPRINTABLE)
    expect(JSON.parse(json.stdout)).toMatchObject([{ label, backendSessionId: 'id\x1b[2J', repoPath: '/r\u202e' }])
    const pruned = await cli(['sessions', 'prune', '--older-than', '1'])
    expect(pruned).toEqual({ code: 0, signal: null, stderr: '', stdout: `pruned ${shown}\n` })
    writeFileSync(join(home, 'sessions.json'), JSON.stringify([session]))
    const prunedJson = await cli(['sessions', 'prune', '--older-than', '1', '--json'])
    expect(prunedJson.stdout).not.toMatch(UNPRINTABLE)
    expect(JSON.parse(prunedJson.stdout)).toEqual({ removed: [label] })
  })
})

describe('typos, help', () => {
  it('edit distance counts an insertion, deletion, substitution or swap of neighbours as 1', () => {
    expect(editDistance('', 'abc')).toBe(3)
    expect(editDistance('kitten', 'sitting')).toBe(3)
    expect(editDistance('reveiw', 'review')).toBe(1)
    expect(editDistance('promt', 'prompt')).toBe(1)
    expect(closest('--PROMT', ['--prompt', '--model'])).toBe('--prompt')
    expect(closest('x', ['relay', 'doctor'])).toBeUndefined()
    expect(closest('r'.repeat(1_000), ['relay'])).toBeUndefined()
  })

  const firstLine = async (args: string[]): Promise<[number | null, string]> => {
    const result = await runCli(args, { env: env(), cwd: repo.path })
    expect(result.stdout).toBe('')
    return [result.code, result.stderr.split('\n')[0]]
  }

  it('an unknown option is one short line naming the option meant', async () => {
    expect(await firstLine(['--promt', 'hi'])).toEqual([2, "phone-a-friend: Unknown option '--promt'. Did you mean --prompt?"])
    expect(await firstLine(['--prompt', 'hi', '--jsno'])).toEqual([2, "phone-a-friend: Unknown option '--jsno'. Did you mean --json?"])
    expect(await firstLine(['--prompt', 'hi', '--inlcude-diff'])).toEqual([2, "phone-a-friend: Unknown option '--inlcude-diff'. Did you mean --include-diff?"])
    // Nothing close: no guess, and none of Node's advice about '--'.
    expect(await firstLine(['--prompt', 'hi', '--bogus'])).toEqual([2, "phone-a-friend: Unknown option '--bogus'"])
  })

  it('an unknown command names the command meant, or the option', async () => {
    expect(await firstLine(['docter'])).toEqual([2, 'phone-a-friend: unknown command: docter. Did you mean doctor?'])
    expect(await firstLine(['relya', '-p', 'x'])).toEqual([2, 'phone-a-friend: unknown command: relya. Did you mean relay?'])
    expect(await firstLine(['reveiw'])).toEqual([2, 'phone-a-friend: unknown command: reveiw. Did you mean --review?'])
    expect(await firstLine(['launch'])).toEqual([2, 'phone-a-friend: unknown command: launch'])
    const prompt = 'why does the test in a.txt fail every other run on CI'
    expect(await firstLine([prompt])).toEqual([2, `phone-a-friend: unknown command: ${prompt.slice(0, 40)}…. To ask something, pass it with --prompt`])
  })

  it('bare phone-a-friend prints the help and exits 0, as --help does', async () => {
    const help = await runCli(['--help'], { env: env(), cwd: repo.path })
    expect(help).toMatchObject({ code: 0, stderr: '' })
    expect(await runCli([], { env: env(), cwd: repo.path })).toEqual(help)
    // The defaults it states are the library's own.
    const { DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_TIMEOUT_SECONDS } = await import('@phone-a-friend/relay')
    expect(help.stdout).toContain(`(env PHONE_A_FRIEND_TIMEOUT, default ${DEFAULT_TIMEOUT_SECONDS})`)
    expect(help.stdout).toContain(`(env PHONE_A_FRIEND_IDLE_TIMEOUT, default ${DEFAULT_IDLE_TIMEOUT_SECONDS})`)
  })

  it('a usage error of a command is followed by that command\'s usage, not the relay\'s', async () => {
    const usage = async (args: string[]): Promise<string[]> => {
      const result = await runCli(args, { env: env(), cwd: repo.path })
      expect(result).toMatchObject({ code: 2, stdout: '' })
      expect(result.stderr).not.toContain('--prompt')
      return result.stderr.split('\n')
    }
    const sessions = ['Usage: phone-a-friend sessions [list] [--json]', '       phone-a-friend sessions delete <label> [--json]', '       phone-a-friend sessions prune --older-than <days> [--json]', '']
    expect(await usage(['sessions', 'delete'])).toEqual(['phone-a-friend: sessions delete takes one label', ...sessions])
    expect(await usage(['sessions', 'prune'])).toEqual(['phone-a-friend: sessions prune needs --older-than <days>, a number like 30 or 0.5', ...sessions])
    expect(await usage(['sessions', 'lst'])).toEqual(['phone-a-friend: unknown sessions action: lst (list, delete or prune). Did you mean list?', ...sessions])
    expect(await usage(['sessions', 'delte', 'x'])).toEqual(['phone-a-friend: unknown sessions action: delte (list, delete or prune). Did you mean delete?', ...sessions])
    expect(await usage(['sessions', 'launch'])).toEqual(['phone-a-friend: unknown sessions action: launch (list, delete or prune)', ...sessions])
    const doctor = ['Usage: phone-a-friend doctor [--model <m>] [--json]', '']
    expect(await usage(['doctor', '--jsn'])).toEqual(["phone-a-friend: Unknown option '--jsn'. Did you mean --json?", ...doctor])
    expect(await usage(['doctor', 'now'])).toEqual(['phone-a-friend: unexpected argument: now', ...doctor])
    expect(await usage(['--model', 'm', 'doctor', '--bogus'])).toEqual(["phone-a-friend: Unknown option '--bogus'", ...doctor])
  })

  it('an unknown backend or sandbox mode names the one meant, in its hint', async () => {
    const supported = 'Supported: antigravity, claude, codex, gemini, ollama, opencode'
    const one = await runCli(['--prompt', 'x', '--to', 'gemni'], { env: env(), cwd: repo.path })
    expect(one).toEqual({ code: 1, signal: null, stdout: '', stderr: `Error [ERR_UNSUPPORTED_BACKEND]: Unsupported relay backend: gemni. ${supported}\nHint: Did you mean gemini?\n` })
    const json = await runCli(['--prompt', 'x', '--to', 'opencdoe', '--json'], { env: env(), cwd: repo.path })
    expect(JSON.parse(json.stdout)).toEqual({ ok: false, error: { code: 'ERR_UNSUPPORTED_BACKEND', message: `Unsupported relay backend: opencdoe. ${supported}`, hint: 'Did you mean opencode?' } })
    const none = await runCli(['--prompt', 'x', '--to', 'zzz'], { env: env(), cwd: repo.path })
    expect(none.stderr).toBe(`Error [ERR_UNSUPPORTED_BACKEND]: Unsupported relay backend: zzz. ${supported}\n`)
    const several = await runCli(['--prompt', 'x', '--to', 'codex,claud'], { env: env(), cwd: repo.path })
    expect(several.code).toBe(1)
    expect(several.stderr).toContain(`Error [ERR_UNSUPPORTED_BACKEND] (claud): Unsupported relay backend: claud. ${supported}\nHint: Did you mean claude?\n`)
    const sandbox = await runCli(['--prompt', 'x', '--to', 'codex', '--sandbox', 'readonly'], { env: env(), cwd: repo.path })
    expect(sandbox.stderr).toMatch(/^Error \[ERR_INVALID_SANDBOX\]: Invalid sandbox mode: readonly\. Allowed values: .*\nHint: Did you mean read-only\?\n$/)
  })

  it('the help keeps each option\'s description in its column', async () => {
    const help = (await runCli(['--help'], { env: env(), cwd: repo.path })).stdout.split('\n')
    const to = help.findIndex((line) => line.startsWith('  -t, --to <backend>'))
    // The description of --to runs on at the description column until the next option.
    const rest = help.slice(to + 1, help.findIndex((line, i) => i > to && /^ {2}\S/.test(line)))
    expect(rest.length).toBeGreaterThan(0)
    for (const line of rest) expect(line).toMatch(/^ {27}\S/)
    expect([help[to], ...rest].join(' ')).toContain('(env PHONE_A_FRIEND_BACKEND, default codex)')
  })

  it('help [command] and <command> --help print that command\'s help', async () => {
    const help = async (args: string[]): Promise<string> => {
      const result = await runCli(args, { env: env(), cwd: repo.path })
      expect(result).toMatchObject({ code: 0, stderr: '' })
      return result.stdout
    }
    const general = await help(['--help'])
    expect(general).toMatch(/^phone-a-friend: ask another coding agent/)
    expect(await help(['help'])).toBe(general)
    const doctor = await help(['doctor', '--help'])
    expect(doctor).toMatch(/^phone-a-friend doctor: /)
    expect(doctor).toContain('Usage: phone-a-friend doctor')
    expect(doctor).not.toContain('--prompt')
    expect(await help(['help', 'doctor'])).toBe(doctor)
    const relay = await help(['relay', '--help'])
    expect(relay).toMatch(/^phone-a-friend relay: /)
    expect(relay).toContain('--prompt <text>')
    expect(await help(['help', 'relay'])).toBe(relay)
    expect(await help(['help', 'help'])).toMatch(/^phone-a-friend help: /)
    expect(await firstLine(['help', 'docter'])).toEqual([2, 'phone-a-friend: unknown command: docter. Did you mean doctor?'])
    expect(await firstLine(['help', 'constructor'])).toEqual([2, 'phone-a-friend: unknown command: constructor'])
    expect(await firstLine(['help', 'doctor', 'relay'])).toEqual([2, 'phone-a-friend: unexpected argument: relay'])
  })

  it('help, --help and --version never load the addon, nor do usage errors', async () => {
    // A preload that makes loading any native addon fail, and leaves a mark in a file when one is tried
    // (what the CLI prints of the failure is its own business: the mark is not).
    const preload = join(log, 'no-addon.cjs')
    const loaded = join(log, 'addon-loaded')
    writeFileSync(
      preload,
      `process.dlopen = () => { require('node:fs').appendFileSync(${JSON.stringify(loaded)}, 'dlopen\\n'); throw new Error('the addon was loaded') }\n`,
    )
    const run = (args: string[]): Promise<CliResult> =>
      new Promise((done) => {
        const child = spawn(process.execPath, ['--require', preload, CLI, ...args], { env: env(), cwd: repo.path, stdio: ['ignore', 'pipe', 'pipe'] })
        let stdout = ''
        let stderr = ''
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
        child.on('close', (code, signal) => done({ code, signal, stdout, stderr }))
      })
    for (const args of [['--help'], ['help'], ['help', 'doctor'], ['doctor', '--help'], ['relay', '--help'], ['--version']]) {
      expect(await run(args)).toMatchObject({ code: 0, stderr: '' })
    }
    for (const args of [['--promt', 'x'], ['docter'], ['--prompt', 'x', '--timeout', 'soon']]) {
      const result = await run(args)
      expect(result.code).toBe(2)
      expect(result.stderr).not.toContain('Cannot find native binding')
    }
    expect(existsSync(loaded)).toBe(false)
    // The preload does bite: a relay needs the addon, tries to load it (the mark), and says it cannot
    // (binding.js's words). Both commands that need it say so in one line, without a stack trace.
    for (const args of [['--prompt', 'x'], ['doctor']]) {
      expect(await run(args)).toMatchObject({ code: 1, stderr: expect.stringMatching(/^Error \[ERR_UNEXPECTED\]: Cannot find native binding[^\n]*\n$/) })
      expect(existsSync(loaded)).toBe(true)
      rmSync(loaded)
    }
  })
})

describe('doctor and Ollama', () => {
  let stub: OllamaStub | undefined

  afterEach(async () => {
    await stub?.close()
    stub = undefined
  })

  /** An Ollama stand-in that lists `models` and answers nothing else; resolves with its OLLAMA_HOST. */
  async function ollamaServer(models: string[]): Promise<string> {
    stub = await startOllamaStub((res) => res.writeHead(404).end(), models)
    return stub.host
  }

  /** PATH is a folder of our own: `cat` for the fakes, and the fake CLIs named. */
  function path(clis: string[]): string {
    const dir = mkdtempSync(join(log, 'path-'))
    symlinkSync('/bin/cat', join(dir, 'cat'))
    for (const name of clis) {
      writeFileSync(join(dir, name), '#!/bin/sh\necho "9.9.9"\n')
      chmodSync(join(dir, name), 0o755)
    }
    return dir
  }

  const doctor = (args: string[], extra: Record<string, string>): Promise<CliResult> => {
    const { OLLAMA_MODEL: _model, ...rest } = env(extra)
    // Signed in by their variables, in a HOME of no settings: ready when found.
    const keys = { CODEX_API_KEY: 'k', GEMINI_API_KEY: 'k', HOME: mkdtempSync(join(log, 'home-')) }
    return runCli(['doctor', ...args], { env: { ...rest, ...keys, ...extra }, cwd: repo.path })
  }

  it('ollama is ready when its server answers, with no ollama binary: one ✓ line, exit 0', async () => {
    const host = await ollamaServer(['llama3:latest', 'qwen2.5-coder:7b'])
    const result = await doctor([], { OLLAMA_HOST: host, PATH: path([]) })
    expect(stub?.asked).toEqual(['GET /api/tags'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(
      // One column for every name, as wide as the longest (antigravity).
      '✗ codex       not found. Install it: npm install -g @openai/codex\n' +
        '✗ gemini      not found. Install it: npm install -g @google/gemini-cli\n' +
        '✗ claude      not found. Install it: npm install -g @anthropic-ai/claude-code\n' +
        '✗ opencode    not found. Install it: npm install -g opencode-ai\n' +
        '✗ antigravity not found. Install it: https://antigravity.google/docs/cli/install\n' +
        "              not verified against a real agy: checked against the documentation of agy 1.1.23 and upstream phone-a-friend's code (docs/BACKENDS.md)\n" +
        `✓ ollama      server answers at http://${host} (set OLLAMA_HOST to point elsewhere)\n` +
        '              no model set: Ollama refuses a chat without one; pass --model <name> or set OLLAMA_MODEL (this server has llama3:latest, qwen2.5-coder:7b)\n',
    )
    const json = await doctor(['--json'], { OLLAMA_HOST: host, PATH: path([]) })
    expect(json.code).toBe(0)
    expect((JSON.parse(json.stdout) as { backends: unknown[] }).backends[5]).toEqual({
      name: 'ollama',
      ready: true,
      found: false,
      host: `http://${host}`,
      models: ['llama3:latest', 'qwen2.5-coder:7b'],
    })
  })

  it('names the model in use (OLLAMA_MODEL, or --model), and one the server lacks', async () => {
    const host = await ollamaServer(['llama3:latest'])
    const fromEnv = await doctor([], { OLLAMA_HOST: host, OLLAMA_MODEL: 'llama3', PATH: path(['codex', 'gemini']) })
    expect(fromEnv.code).toBe(0)
    expect(fromEnv.stdout).toContain(`✓ ollama      server answers at http://${host} (set OLLAMA_HOST to point elsewhere)\n              model llama3\n`)
    const drift = (name: string, verified: string) =>
      `              ${name} 9.9.9 is outside the versions this relay was verified with (${verified}, ${verified.replace(/\.\d+$/, '.x')}): its flags may have changed\n`
    expect(fromEnv.stdout).toContain(
      `✓ codex       9.9.9, signed in (CODEX_API_KEY)\n${drift('codex', '0.169.0')}✓ gemini      9.9.9, signed in (gemini-api-key (GEMINI_API_KEY))\n${drift('gemini', '0.61.0')}`,
    )
    const fromFlag = await doctor(['--model', 'mistral'], { OLLAMA_HOST: host, OLLAMA_MODEL: 'llama3', PATH: path([]) })
    expect(fromFlag.stdout).toContain('              model mistral is not on this server: `ollama pull mistral` (it has llama3:latest)\n')
  })

  it('no server: one ✗ line naming the host probed and OLLAMA_HOST; exit 1 when nothing else is ready', async () => {
    const host = await closedHost()
    const installed = await doctor([], { OLLAMA_HOST: host, PATH: path(['ollama']) })
    expect(installed.code).toBe(1)
    expect(installed.stdout.split('\n').filter((line) => line.includes('ollama'))).toEqual([
      `✗ ollama      server not reachable at http://${host}: start it with \`ollama serve\`, or set OLLAMA_HOST to point elsewhere`,
    ])
    const missing = await doctor(['--json'], { OLLAMA_HOST: host, PATH: path(['codex']) })
    expect(missing.code).toBe(0) // codex is ready
    expect((JSON.parse(missing.stdout) as { backends: unknown[] }).backends).toEqual([
      {
        name: 'codex',
        ready: true,
        found: true,
        path: expect.stringMatching(/\/codex$/),
        version: '9.9.9',
        verifiedVersion: '0.169.0',
        drift: 'codex 9.9.9 is outside the versions this relay was verified with (0.169.0, 0.169.x): its flags may have changed',
        signIn: { state: 'signedIn', how: 'CODEX_API_KEY' },
      },
      { name: 'gemini', ready: false, found: false, verifiedVersion: '0.61.0', install: 'npm install -g @google/gemini-cli' },
      { name: 'claude', ready: false, found: false, verifiedVersion: '2.1.330', install: 'npm install -g @anthropic-ai/claude-code' },
      { name: 'opencode', ready: false, found: false, verifiedVersion: '1.18.33', install: 'npm install -g opencode-ai' },
      {
        name: 'antigravity',
        ready: false,
        found: false,
        documented: "not verified against a real agy: checked against the documentation of agy 1.1.23 and upstream phone-a-friend's code (docs/BACKENDS.md)",
        install: 'https://antigravity.google/docs/cli/install',
      },
      { name: 'ollama', ready: false, found: false, install: 'https://ollama.com/download', host: `http://${host}` },
    ])
  })
})
