// Failures that say why: a CLI's last words (bounded to 2 KiB) in the message and as
// `backendOutput`, a time-out included; what to do when a CLI is not signed in; the version when
// it is outside the verified range. The real codex against a model server that drops every
// connection (no network needed), the real gemini and claude without sign-in, fake CLIs for the
// bound and for drift.
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, relay, RelayError } from '@phone-a-friend/relay'
import { codexEnv } from './support/fake-model-server.js'
import { restoreEnv, useEnv } from './support/e2e.js'
import { TempRepo, tempDir } from './support/git-repo.js'
import { runCli } from './support/run-cli.js'

const BIN = resolve(__dirname, '..', 'node_modules', '.bin')
/** Every variable a CLI takes credentials from: none of the runner's reaches a test. */
const KEY_VARS = /(_API_KEY|_AUTH_TOKEN|_ACCESS_TOKEN)$|^GOOGLE_(GENAI|CLOUD)_|^GEMINI_|^OPENCODE_CONFIG|^CLAUDE_CODE_USE_/
let repo: TempRepo
let dropper: Server | undefined

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  const cleared: Record<string, string> = {}
  for (const name of Object.keys(process.env)) if (KEY_VARS.test(name)) cleared[name] = ''
  useEnv({ ...cleared, HOME: tempDir('paf-words-home-'), PATH: `${BIN}:${process.env.PATH ?? ''}` })
})

afterEach(async () => {
  restoreEnv()
  repo.remove()
  await new Promise<void>((done) => (dropper ? dropper.close(() => done()) : done()))
  dropper = undefined
})

/** The RelayError a relay rejects with. */
async function failure(options: Parameters<typeof relay>[0]): Promise<RelayError> {
  const error = await relay(options).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(RelayError)
  return error as RelayError
}

/** A model server that accepts each connection and drops it at once; its URL. */
async function droppingServer(): Promise<string> {
  dropper = createServer((socket) => socket.destroy())
  await new Promise<void>((done) => dropper!.listen(0, '127.0.0.1', done))
  const address = dropper.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return `http://127.0.0.1:${address.port}`
}

describe('a time-out says what the CLI said last', () => {
  it('the real codex, its model server dropping every connection: its reconnect words, not only "timed out"', async () => {
    const env = await codexEnv({ url: await droppingServer() })
    // codex's stream retries, which it reports as events (the tests' fake provider turns them off
    // to fail fast; its request retries are silent).
    const config = join(env.CODEX_HOME, 'config.toml')
    writeFileSync(config, readFileSync(config, 'utf8').replace('request_max_retries = 1', 'request_max_retries = 0').replace('stream_max_retries = 0', 'stream_max_retries = 50'))
    useEnv(env)
    const error = await failure({ prompt: 'Say hi', repoPath: repo.path, backend: 'codex', timeoutSeconds: 8 })
    expect([error.code, error.message]).toEqual(['ERR_BACKEND_TIMEOUT', expect.any(String)])
    expect(error.backendOutput).toMatch(/^Reconnecting\.\.\. \d+\/50 \(stream disconnected before completion: error sending request\)$/)
    expect(error.message).toBe(`codex exec timed out after 8s. Its last words: ${error.backendOutput}`)
  }, 30_000)

  it('a CLI that says 10 KiB on stderr then hangs: the last 2 KiB of it', async () => {
    const bin = tempDir('paf-words-bin-')
    // 10 KiB of numbered lines, the last one marked, then silence until it is stopped.
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\ni=0; while [ $i -lt 200 ]; do echo "retry $i: the server did not answer, waiting" >&2; i=$((i+1)); done\necho "LAST: giving up soon" >&2\nexec sleep 60\n')
    chmodSync(join(bin, 'claude'), 0o755)
    useEnv({ PATH: `${bin}:/usr/bin:/bin` })
    const error = await failure({ prompt: 'p', repoPath: repo.path, backend: 'claude', timeoutSeconds: 2 })
    expect(error.code).toBe('ERR_BACKEND_TIMEOUT')
    const output = error.backendOutput ?? ''
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(2048)
    expect(Buffer.byteLength(output)).toBeGreaterThan(1900)
    expect(output.startsWith('…')).toBe(true)
    expect(output.endsWith('LAST: giving up soon')).toBe(true)
    expect(error.message).toBe(`claude timed out after 2s. Its last words: ${output}`)
  }, 30_000)
})

describe('a CLI that is not signed in says what to do', () => {
  it('gemini with no auth at all: its words, then how to sign in', async () => {
    const error = await failure({ prompt: 'p', repoPath: repo.path, backend: 'gemini', timeoutSeconds: 60 })
    expect(error.code).toBe('ERR_BACKEND_FAILED')
    expect(error.message).toMatch(/^Please set an Auth method in your .*settings\.json/)
    expect(error.message).toContain('. gemini is not signed in: export GEMINI_API_KEY=…')
    expect(error.backendOutput).toMatch(/^Please set an Auth method/)
  }, 90_000)

  it('gemini with only a base URL: "Invalid auth method selected." gets what to do', async () => {
    useEnv({ GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9' })
    const error = await failure({ prompt: 'p', repoPath: repo.path, backend: 'gemini', timeoutSeconds: 60 })
    expect(error.message).toMatch(/^Invalid auth method selected\. gemini is not signed in: export GEMINI_API_KEY=…/)
    expect(error.backendOutput).toBe('Invalid auth method selected.')
  }, 90_000)

  it('claude with no key: "Not logged in" gets what to do', async () => {
    const error = await failure({ prompt: 'p', repoPath: repo.path, backend: 'claude', timeoutSeconds: 60 })
    expect(error.message).toBe('Not logged in · Please run /login. claude is not signed in: export ANTHROPIC_API_KEY=…, or run `claude` and sign in with /login')
    expect(error.backendOutput).toBe('Not logged in · Please run /login')
    // The CLI's --json carries it too.
    const cli = await runCli(['--prompt', 'p', '--to', 'claude', '--repo', repo.path, '--json'])
    expect(JSON.parse(cli.stdout)).toEqual({ ok: false, backend: 'claude', error: { code: 'ERR_BACKEND_FAILED', message: error.message, backendOutput: error.backendOutput, reason: 'auth' } })
  }, 90_000)
})

describe('a failed relay says when the CLI is outside the verified versions', () => {
  /** A CLI installed from npm (its package.json beside it) at `version`, failing with `words`. */
  function installed(name: string, npmPackage: string, version: string, words: string): string {
    const root = tempDir('paf-words-npm-')
    const pkg = join(root, 'lib', 'node_modules', ...npmPackage.split('/'))
    mkdirSync(join(pkg, 'bin'), { recursive: true })
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: npmPackage, version }))
    writeFileSync(join(pkg, 'bin', `${name}.js`), `#!/bin/sh\necho "${words}" >&2\nexit 2\n`)
    chmodSync(join(pkg, 'bin', `${name}.js`), 0o755)
    const bin = join(root, 'bin')
    mkdirSync(bin)
    symlinkSync(join(pkg, 'bin', `${name}.js`), join(bin, name))
    return bin
  }

  it('codex 0.180.0 failing on a flag: its words, then its version and the verified one', async () => {
    const bin = installed('codex', '@openai/codex', '0.180.0', "error: unexpected argument '--skip-git-repo-check' found")
    useEnv({ PATH: `${bin}:/usr/bin:/bin` })
    const error = await failure({ prompt: 'p', repoPath: repo.path, backend: 'codex' })
    expect(error.message).toBe(
      "error: unexpected argument '--skip-git-repo-check' found. codex 0.180.0 is outside the versions this relay was verified with (0.169.0, 0.169.x): its flags may have changed",
    )
    expect(error.backendOutput).toBe("error: unexpected argument '--skip-git-repo-check' found")
  })

  it('a version inside the range adds nothing', async () => {
    const bin = installed('codex', '@openai/codex', '0.169.3', 'error: something else')
    useEnv({ PATH: `${bin}:/usr/bin:/bin` })
    expect((await failure({ prompt: 'p', repoPath: repo.path, backend: 'codex' })).message).toBe('error: something else')
  })
})
