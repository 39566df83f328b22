// `doctor`: the real CLIs' versions and sign-in states (a throwaway HOME, with and without their
// API-key variables), drift with a fake CLI, `--json`'s shape, the library's `doctor()` and the MCP
// `backends` tool saying the same, and a doctor stopped by its signal leaving no process behind.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { tempDir } from './support/git-repo.js'
import { processesWithEnv } from './support/processes.js'
import { CLI, runCli } from './support/run-cli.js'
import { closedHost } from './support/ollama-stub.js'
import { doctor, checkBackends, type DoctorReport } from '@phone-a-friend/relay'

const ROOT = resolve(__dirname, '..')
const BIN = join(ROOT, 'node_modules', '.bin')
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
const VERIFIED: Record<string, string> = {
  codex: PACKAGE.devDependencies['@openai/codex'],
  gemini: PACKAGE.devDependencies['@google/gemini-cli'],
  claude: PACKAGE.devDependencies['@anthropic-ai/claude-code'],
  opencode: PACKAGE.devDependencies['opencode-ai'],
}
const CLIS = Object.keys(VERIFIED)
/** Every variable a CLI takes credentials from: none of the runner's reaches a test. */
const KEY_VARS = /(_API_KEY|_AUTH_TOKEN|_ACCESS_TOKEN)$|^GOOGLE_(GENAI|CLOUD)_|^OPENCODE_CONFIG|^CLAUDE_CODE_USE_/

let client: Client | undefined
afterEach(async () => {
  await client?.close()
  client = undefined
})

/** A clean environment: a throwaway HOME, PATH = the real CLIs (and node), no key variables. */
async function cleanEnv(extra: Record<string, string> = {}, path = `${BIN}:${dirname(process.execPath)}:/usr/bin:/bin`): Promise<Record<string, string>> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !KEY_VARS.test(name)) env[name] = value
  const home = tempDir('paf-doctor-home-')
  return { ...env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local', 'share'), PATH: path, OLLAMA_HOST: await closedHost(), ...extra }
}

async function doctorJson(env: Record<string, string>): Promise<DoctorReport> {
  const result = await runCli(['doctor', '--json'], { env })
  return JSON.parse(result.stdout) as DoctorReport
}

const byName = (report: DoctorReport, name: string) => report.backends.find((backend) => backend.name === name)

describe('doctor with the real CLIs', () => {
  it('no sign-in: each CLI found with its verified version, "installed, not signed in", not ready', async () => {
    const env = await cleanEnv()
    const result = await runCli(['doctor'], { env })
    const json = await doctorJson(env)
    for (const name of CLIS) {
      const backend = byName(json, name)
      expect(backend).toMatchObject({ name, found: true, version: VERIFIED[name], verifiedVersion: VERIFIED[name] })
      expect(backend?.drift).toBeUndefined()
      expect(backend?.signIn?.hint).toBeTruthy()
      if (name === 'opencode') continue
      expect(backend).toMatchObject({ ready: false, signIn: { state: 'notSignedIn' } })
      expect(result.stdout).toContain(`✗ ${name.padEnd(11)} ${VERIFIED[name]}, installed, not signed in: ${backend?.signIn?.hint}\n`)
    }
    // opencode without credentials runs its own free models (online): it cannot tell.
    const opencode = byName(json, 'opencode')
    expect(opencode).toMatchObject({ ready: true, signIn: { state: 'unknown', hint: expect.stringContaining('free models') } })
    expect(result.stdout).toContain(`? opencode    ${VERIFIED.opencode}, sign-in not known: ${opencode?.signIn?.hint}\n`)
    expect(result.code).toBe(0) // opencode may answer
    expect(byName(json, 'codex')?.signIn?.hint).toContain('codex login')
    expect(byName(json, 'claude')?.signIn?.hint).toContain('ANTHROPIC_API_KEY')
  }, 60_000)

  it('the API-key variables sign each CLI in, as the CLI itself counts them', async () => {
    const env = await cleanEnv({ CODEX_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GEMINI_API_KEY: 'k', OPENAI_API_KEY: 'k' })
    const json = await doctorJson(env)
    for (const name of CLIS) expect(byName(json, name)).toMatchObject({ ready: true, signIn: { state: 'signedIn' } })
    expect(byName(json, 'codex')?.signIn?.how).toBe('CODEX_API_KEY')
    // claude's own `auth status` says where the key came from.
    expect(byName(json, 'claude')?.signIn?.how).toBe('api_key (ANTHROPIC_API_KEY)')
    expect(byName(json, 'gemini')?.signIn?.how).toBe('gemini-api-key (GEMINI_API_KEY)')
    expect(byName(json, 'opencode')?.signIn?.how).toMatch(/provider variable/)
    const text = await runCli(['doctor'], { env })
    expect(text.code).toBe(0)
    expect(text.stdout).toContain(`✓ claude      ${VERIFIED.claude}, signed in (api_key (ANTHROPIC_API_KEY))\n`)
  }, 60_000)

  it('stored logins: `codex login --with-api-key`, gemini settings and its Google credentials file', async () => {
    const env = await cleanEnv()
    execFileSync(join(BIN, 'codex'), ['login', '--with-api-key'], { env, input: 'sk-test\n', stdio: ['pipe', 'ignore', 'ignore'] })
    const gemini = join(env.HOME, '.gemini')
    mkdirSync(gemini, { recursive: true })
    writeFileSync(join(gemini, 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'oauth-personal' } } }))
    let json = await doctorJson(env)
    expect(byName(json, 'codex')).toMatchObject({ ready: true, signIn: { state: 'signedIn', how: 'API key configured - ***' } })
    expect(byName(json, 'gemini')).toMatchObject({ ready: false, signIn: { state: 'notSignedIn', hint: expect.stringContaining('sign in with Google') } })
    writeFileSync(join(gemini, 'oauth_creds.json'), '{}')
    json = await doctorJson(env)
    expect(byName(json, 'gemini')).toMatchObject({ ready: true, signIn: { state: 'signedIn' } })
    // gemini-api-key selected but no key: what gemini itself would refuse.
    writeFileSync(join(gemini, 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }))
    json = await doctorJson(env)
    expect(byName(json, 'gemini')).toMatchObject({ ready: false, signIn: { state: 'notSignedIn', hint: expect.stringContaining('GEMINI_API_KEY') } })
  }, 60_000)

  it('the library and the MCP backends tool say what doctor --json says', async () => {
    const env = await cleanEnv({ ANTHROPIC_API_KEY: 'k' })
    // The CLI adds the MCP hosts (docs/CLI.md, "doctor"); the backends' report is the one the library and the tool make.
    const { hosts, ...cli } = (await doctorJson(env)) as DoctorReport & { hosts?: unknown }
    expect(Array.isArray(hosts)).toBe(true)
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: ROOT, env, stderr: 'pipe' })
    client = new Client({ name: 'doctor-tests', version: '0.0.0' })
    await client.connect(transport)
    const tool = await client.callTool({ name: 'backends', arguments: {} })
    expect(tool.structuredContent).toEqual(cli)
    // The library in a child, in the same environment (its process.env is the one checked).
    const script = `const l = require(${JSON.stringify(ROOT)}); l.doctor().then((r) => console.log(JSON.stringify({ r, c: l.checkBackends() })))`
    const child = JSON.parse(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' })) as { r: DoctorReport; c: Record<string, boolean> }
    expect(child.r).toEqual(cli)
    for (const backend of cli.backends) expect(child.c[backend.name]).toBe(backend.found)
    expect(typeof checkBackends().codex).toBe('boolean')
  }, 90_000)
})

/** A PATH holding fake CLIs that print `version` for `--version` (and `sh`, for their scripts). */
function fakePath(version: string, body = 'exit 1'): string {
  const dir = tempDir('paf-doctor-bin-')
  for (const name of CLIS) {
    writeFileSync(join(dir, name), `#!/bin/sh\nif [ "$1" = --version ]; then echo "${name} ${version}"; exit 0; fi\n${body}\n`)
    chmodSync(join(dir, name), 0o755)
  }
  return `${dir}:/usr/bin:/bin`
}

describe('doctor flags drift and stops when asked', () => {
  it('a version outside the verified minor series is said, in the text and the JSON; one inside is not', async () => {
    const [major, minor] = VERIFIED.codex.split('.').map(Number)
    const newer = `${major}.${minor + 11}.0`
    const env = await cleanEnv({ CODEX_API_KEY: 'k' }, fakePath(newer))
    const json = await doctorJson(env)
    const drift = `codex ${newer} is outside the versions this relay was verified with (${VERIFIED.codex}, ${major}.${minor}.x): its flags may have changed`
    expect(byName(json, 'codex')).toMatchObject({ version: newer, verifiedVersion: VERIFIED.codex, drift, ready: true })
    const text = await runCli(['doctor'], { env })
    expect(text.stdout).toContain(`✓ codex       ${newer}, signed in (CODEX_API_KEY)\n              ${drift}\n`)
    const same = await doctorJson(await cleanEnv({ CODEX_API_KEY: 'k' }, fakePath(`${major}.${minor}.99`)))
    expect(byName(same, 'codex')?.drift).toBeUndefined()
  }, 60_000)

  it('a CLI whose --version fails is not ready, with its words', async () => {
    const dir = tempDir('paf-doctor-bin-')
    writeFileSync(join(dir, 'codex'), '#!/bin/sh\necho "boom: broken install" >&2\nexit 3\n')
    chmodSync(join(dir, 'codex'), 0o755)
    const json = await doctorJson(await cleanEnv({ CODEX_API_KEY: 'k' }, `${dir}:/usr/bin:/bin`))
    expect(byName(json, 'codex')).toMatchObject({ found: true, ready: false, problem: '`codex --version` failed (exit code 3): boom: broken install' })
    // Killed by a signal, silent: the signal is named; exit 0 with nothing printed says so.
    writeFileSync(join(dir, 'codex'), '#!/bin/sh\nkill -9 $$\n')
    const killed = await doctorJson(await cleanEnv({ CODEX_API_KEY: 'k' }, `${dir}:/usr/bin:/bin`))
    expect(byName(killed, 'codex')?.problem).toBe('`codex --version` failed (killed by signal 9) with no output')
    writeFileSync(join(dir, 'codex'), '#!/bin/sh\nexit 0\n')
    const silent = await doctorJson(await cleanEnv({ CODEX_API_KEY: 'k' }, `${dir}:/usr/bin:/bin`))
    expect(byName(silent, 'codex')?.problem).toBe('`codex --version` printed nothing')
  }, 30_000)

  it('Ctrl-C stops `phone-a-friend doctor`: exit 130, its checks killed', async () => {
    const mark = `PAF_DOCTOR_CLI_MARK=${process.pid}-${Date.now()}`
    const dir = tempDir('paf-doctor-bin-')
    writeFileSync(join(dir, 'claude'), '#!/bin/sh\nexec sleep 60\n')
    chmodSync(join(dir, 'claude'), 0o755)
    const [key, value] = mark.split('=')
    const env = await cleanEnv({ [key]: value }, `${dir}:/usr/bin:/bin`)
    const result = await runCli(['doctor'], {
      env,
      onSpawn: (child) => {
        const poll = setInterval(() => {
          // Both checks of the hanging claude (`--version`, `auth status`) have started.
          if (processesWithEnv(mark).filter((pid) => pid !== child.pid).length >= 2) {
            clearInterval(poll)
            child.kill('SIGINT')
          }
        }, 50)
        child.on('close', () => clearInterval(poll))
      },
    })
    expect(result.code).toBe(130)
    for (let i = 0; i < 60 && processesWithEnv(mark).length > 0; i++) await new Promise((r) => setTimeout(r, 50))
    expect(processesWithEnv(mark)).toEqual([])
  }, 30_000)

  it('an aborted doctor() rejects at once and kills the checks it started', async () => {
    const mark = `PAF_DOCTOR_MARK=${process.pid}-${Date.now()}`
    const dir = tempDir('paf-doctor-bin-')
    writeFileSync(join(dir, 'codex'), '#!/bin/sh\nexec sleep 60\n')
    chmodSync(join(dir, 'codex'), 0o755)
    const [key, value] = mark.split('=')
    const saved = { PATH: process.env.PATH, [key]: process.env[key] }
    process.env.PATH = `${dir}:/usr/bin:/bin`
    process.env[key] = value
    try {
      const controller = new AbortController()
      const started = performance.now()
      const running = doctor({ signal: controller.signal })
      // Both sleeps (`--version` and `login status`) start.
      for (let i = 0; i < 100 && processesWithEnv(mark).length < 2; i++) await new Promise((r) => setTimeout(r, 50))
      expect(processesWithEnv(mark).length).toBeGreaterThanOrEqual(2)
      controller.abort()
      await expect(running).rejects.toMatchObject({ name: 'AbortError' })
      expect(performance.now() - started).toBeLessThan(8_000)
      for (let i = 0; i < 60 && processesWithEnv(mark).length > 0; i++) await new Promise((r) => setTimeout(r, 50))
      expect(processesWithEnv(mark)).toEqual([])
    } finally {
      for (const [name, old] of Object.entries(saved)) if (old === undefined) delete process.env[name]
      else process.env[name] = old
    }
  }, 30_000)
})
