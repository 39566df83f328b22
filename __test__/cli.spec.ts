// The CLI driven as a real process: flags, environment defaults, output shapes, exit codes.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { FakeClis } from './support/fake-cli.js'
import { isAlive } from './support/processes.js'
import { TempRepo, tempDir } from './support/git-repo.js'
import { CLI, runCli } from './support/run-cli.js'

let repo: TempRepo
let fake: FakeClis

beforeEach(() => {
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  fake = new FakeClis()
  for (const key of Object.keys(process.env)) if (key.startsWith('PHONE_A_FRIEND_')) delete process.env[key]
})

afterEach(() => {
  fake.restore()
  repo.remove()
})

const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ ...process.env, ...extra })

describe('phone-a-friend relay', () => {
  it('prints the answer alone on stdout and nothing on a piped stderr', async () => {
    fake.mode('answer')
    const result = await runCli(['--prompt', 'Check it', '--repo', repo.path], { env: env() })
    expect(result).toEqual({ code: 0, signal: null, stdout: 'file answer\n', stderr: '' })
    expect(fake.args().slice(0, 3)).toEqual(['exec', '-C', repo.path])
    expect(fake.read('stdin')).toMatch(/Request:\nCheck it$/)
  })

  it('accepts the explicit relay command, short flags, and the repo default of the cwd', async () => {
    fake.mode('stdout-only')
    const result = await runCli(['relay', '-p', 'Hi', '-t', 'gemini', '-m', 'gm'], { env: env(), cwd: repo.path })
    expect(result.stdout).toBe('stdout answer\n')
    expect(fake.args()).toEqual(expect.arrayContaining(['-m', 'gm']))
    expect(fake.read('cwd').trim()).toBe(repo.path)
  })

  it('passes every relay flag on', async () => {
    fake.mode('answer')
    repo.write('a.txt', 'two\n')
    const result = await runCli(
      ['--prompt', 'P', '--repo', repo.path, '--context-text', 'CTX', '--include-diff', '--timeout', '30', '--sandbox', 'workspace-write'],
      { env: env() },
    )
    expect(result.code).toBe(0)
    expect(fake.args()).toEqual(expect.arrayContaining(['--sandbox', 'workspace-write']))
    expect(fake.read('stdin')).toMatch(/Request:\nP\n\nAdditional Context:\nCTX\n\nGit Diff:\ndiff --git/)
  })

  it('reads the prompt from stdin with --prompt -', async () => {
    fake.mode('answer')
    const result = await runCli(['--prompt', '-', '--repo', repo.path], { env: env(), input: 'from stdin\n' })
    expect(result.code).toBe(0)
    expect(fake.read('stdin')).toMatch(/Request:\nfrom stdin$/)
  })

  it('takes defaults from PHONE_A_FRIEND_* variables; flags win', async () => {
    fake.mode('stdout-only')
    const defaults = {
      PHONE_A_FRIEND_BACKEND: 'gemini',
      PHONE_A_FRIEND_SANDBOX: 'danger-full-access',
      PHONE_A_FRIEND_INCLUDE_DIFF: '1',
      PHONE_A_FRIEND_TIMEOUT: '45',
    }
    repo.write('a.txt', 'changed\n')
    expect((await runCli(['--prompt', 'P', '--repo', repo.path], { env: env(defaults) })).code).toBe(0)
    expect(fake.args().slice(0, 2)).toEqual(['--approval-mode', 'yolo'])
    expect(fake.read('stdin')).toContain('Git Diff:')
    fake.mode('answer')
    expect((await runCli(['--prompt', 'P', '--repo', repo.path, '--to', 'codex', '--sandbox', 'read-only'], { env: env(defaults) })).code).toBe(0)
    expect(fake.args()).toEqual(expect.arrayContaining(['exec', '--sandbox', 'read-only']))
    const badTimeout = await runCli(['--prompt', 'P', '--repo', repo.path], { env: env({ PHONE_A_FRIEND_TIMEOUT: 'soon' }) })
    expect(badTimeout).toMatchObject({ code: 2 })
    expect(badTimeout.stderr).toMatch(/^phone-a-friend: invalid PHONE_A_FRIEND_TIMEOUT value "soon"/)
    expect((await runCli(['--prompt', 'P', '--repo', repo.path], { env: env({ PHONE_A_FRIEND_INCLUDE_DIFF: 'yes' }) })).code).toBe(0)
    expect(fake.read('stdin')).not.toContain('Git Diff:')
  })

  it('errors go to stderr as "Error [<code>] (<backend>): <message>" with exit code 1', async () => {
    fake.mode('fail-stderr')
    const result = await runCli(['--prompt', 'P', '--repo', repo.path], { env: env() })
    // A backend's failure names it, as `--to a,b` does for each.
    expect(result).toEqual({ code: 1, signal: null, stdout: '', stderr: 'Error [ERR_BACKEND_FAILED] (codex): boom on stderr\n' })
    const blank = await runCli(['--prompt', '  ', '--repo', repo.path], { env: env() })
    expect(blank).toMatchObject({ code: 1, stderr: 'Error [ERR_PROMPT_REQUIRED]: Prompt is required\n' })
  })

  it('--json prints { ok, output } or { ok, error: { code, message } }', async () => {
    fake.mode('answer')
    const ok = await runCli(['--prompt', 'P', '--repo', repo.path, '--json'], { env: env() })
    expect(ok.code).toBe(0)
    const printed = JSON.parse(ok.stdout) as { durationMs: number }
    expect(printed).toEqual({ ok: true, answer: 'file answer', output: 'file answer', backend: 'codex', model: null, usage: null, coverage: null, attempts: [], durationMs: printed.durationMs })
    expect(Number.isInteger(printed.durationMs) && printed.durationMs >= 0).toBe(true)
    const failed = await runCli(['--prompt', 'P', '--repo', join(repo.path, 'nope'), '--json'], { env: env() })
    expect(failed.code).toBe(1)
    expect(JSON.parse(failed.stdout)).toEqual({
      ok: false,
      error: { code: 'ERR_INVALID_REPO', message: `Repository path does not exist or is not a directory: ${join(repo.path, 'nope')}` },
    })
    expect(failed.stderr).toBe('')
  })

  it.each([
    [['relay'], 'missing --prompt'],
    [['--prompt'], "Option '-p, --prompt <value>' argument missing"],
    [['--prompt', 'x', '--bogus'], "Unknown option '--bogus'"],
    [['launch', '--prompt', 'x'], 'unknown command: launch'],
    [['relay', 'extra', '--prompt', 'x'], 'unexpected argument: extra'],
    [['--prompt', 'x', '--review', '--include-diff=1'], "Option '--include-diff' does not take an argument"],
  ])('usage error %j exits 2 with a usage line', async (args, message) => {
    const result = await runCli(args, { env: env(), cwd: repo.path })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    const [first, second] = result.stderr.split('\n')
    expect(first).toContain(message)
    expect(second).toMatch(/^Usage: phone-a-friend \[relay\] --prompt/)
  })
})

describe('review mode', () => {
  beforeEach(() => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'new\n').commit('feature')
  })

  it('--review uses the native codex review against the detected base', async () => {
    fake.mode('answer')
    const result = await runCli(['--review', '--repo', repo.path], { env: env() })
    expect(result.stdout).toBe('file answer\n')
    expect(fake.args().slice(-3)).toEqual(['review', '--base', 'main'])
  })

  it('--base implies --review; PHONE_A_FRIEND_REVIEW_BASE is its default', async () => {
    fake.mode('answer')
    await runCli(['--base', 'HEAD~1', '--repo', repo.path], { env: env() })
    expect(fake.args().slice(-3)).toEqual(['review', '--base', 'HEAD~1'])
    await runCli(['--review', '--repo', repo.path], { env: env({ PHONE_A_FRIEND_REVIEW_BASE: 'HEAD~1' }) })
    expect(fake.args().slice(-1)).toEqual(['HEAD~1'])
  })

  it('a review with a prompt takes the generic path', async () => {
    fake.mode('stdout-only')
    const result = await runCli(['--review', '--prompt', 'Naming only', '--to', 'gemini', '--repo', repo.path], { env: env() })
    expect(result.code).toBe(0)
    expect(fake.read('stdin')).toContain('Request:\nNaming only\n\nGit Diff:\ndiff --git a/b.txt b/b.txt')
  })
})

describe('doctor, --version, --help', () => {
  it('doctor lists the backends found, their versions, and how to install the rest', async () => {
    const result = await runCli(['doctor'], { env: env({ OLLAMA_HOST: '127.0.0.1:9', GEMINI_API_KEY: 'fake', HOME: tempDir() }) })
    expect(result.code).toBe(0)
    // The fakes' version is outside every verified range: doctor says so under each.
    const drift = (name: string, verified: string) =>
      `              ${name} 1.2.3-fake is outside the versions this relay was verified with (${verified}, ${verified.replace(/\.\d+$/, '.x')}): its flags may have changed\n`
    expect(result.stdout).toContain(`✓ codex       1.2.3-fake, signed in (API key configured - fake)\n${drift('codex', '0.169.0')}`)
    expect(result.stdout).toContain(`✓ gemini      1.2.3-fake, signed in (gemini-api-key (GEMINI_API_KEY))\n${drift('gemini', '0.61.0')}`)
    expect(result.stdout).toContain(
      '✗ ollama      server not reachable at http://127.0.0.1:9: install Ollama (https://ollama.com/download) and run `ollama serve`, or set OLLAMA_HOST to point elsewhere',
    )
    const json = await runCli(['doctor', '--json'], { env: env({ PATH: tempDir(), OLLAMA_HOST: '127.0.0.1:9' }) })
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout).backends).toEqual([
      { name: 'codex', ready: false, found: false, verifiedVersion: '0.169.0', install: 'npm install -g @openai/codex' },
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
      { name: 'ollama', ready: false, found: false, install: 'https://ollama.com/download', host: 'http://127.0.0.1:9' },
    ])
  })

  it('--version prints the package version; --help the usage', async () => {
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
    expect(await runCli(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' })
    const help = await runCli(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('phone-a-friend doctor')
    expect(help.stdout).toContain('PHONE_A_FRIEND_BACKEND')
  })
})

describe('Ctrl-C and the spinner', () => {
  it('SIGINT aborts the relay, kills the backend and exits 130', async () => {
    fake.mode('hang-with-grandchild')
    const result = await runCli(['--prompt', 'P', '--repo', repo.path], {
      env: env(),
      onSpawn: (child) => {
        void vi.waitFor(() => expect(readFileSync(join(fake.log, 'grandchild'), 'utf8')).toMatch(/^\d+\n$/), { timeout: 10_000 }).then(() => child.kill('SIGINT'))
      },
    })
    expect(result).toMatchObject({ code: 130, stdout: '', stderr: 'Interrupted.\n' })
    const grandchild = Number(fake.read('grandchild'))
    await vi.waitFor(() => expect(isAlive(grandchild)).toBe(false), { timeout: 3_000 })
  })

  it('shows a spinner with the elapsed time on a TTY, and none under CI', async () => {
    fake.mode('slow')
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} --prompt P --repo ${JSON.stringify(repo.path)}`
    const { CI: _ci, ...withoutCi } = process.env
    const tty = execFileSync('script', ['-qec', command, '/dev/null'], { env: { ...withoutCi, FAKE_SLEEP: '1.2' }, encoding: 'utf8' })
    expect(tty).toMatch(/⠋ asking codex… 0s/)
    expect(tty).toMatch(/asking codex… 1s/)
    expect(tty).toContain('slow answer')
    const underCi = execFileSync('script', ['-qec', command, '/dev/null'], { env: { ...withoutCi, CI: 'true', FAKE_SLEEP: '0' }, encoding: 'utf8' })
    expect(underCi).not.toContain('asking codex')
    expect(underCi).toContain('slow answer')
  })
})
