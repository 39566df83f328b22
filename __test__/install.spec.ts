// `phone-a-friend install <host>` and `uninstall <host>` with the real host CLIs (devDependencies)
// in throwaway homes: the host's own `mcp list`/`mcp get` shows the entry install wrote, a second
// install changes nothing, `--dry-run` changes nothing, uninstall removes exactly our entry.
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { parse as parseToml } from 'smol-toml'
import { mcpEntry } from '../lib/cli/mcp-entry.js'
import { processesWithEnv } from './support/processes.js'
import { CLI, runCli } from './support/run-cli.js'

const ROOT = resolve(__dirname, '..')
const BIN = join(ROOT, 'node_modules', '.bin')
const NODE_DIR = dirname(process.execPath)
const homes: string[] = []

afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true })
})

interface Home {
  root: string
  home: string
  project: string
  codexHome: string
  env: NodeJS.ProcessEnv
}

/** A fresh HOME with every host's config home under it; the host CLIs and node on PATH. */
function freshHome(path = `${BIN}${delimiter}${NODE_DIR}${delimiter}/usr/bin${delimiter}/bin`): Home {
  const root = mkdtempSync(join(tmpdir(), 'paf-install-'))
  homes.push(root)
  const home = join(root, 'home')
  const project = join(root, 'project')
  const codexHome = join(home, '.codex')
  for (const dir of [home, project, codexHome, join(root, 'tmp')]) mkdirSync(dir, { recursive: true })
  const { CLAUDE_CONFIG_DIR: _c, GEMINI_CLI_HOME: _g, OPENCODE_CONFIG_CONTENT: _o, NAPI_RS_NATIVE_LIBRARY_PATH: _n, ...rest } = process.env
  const env = {
    ...rest,
    HOME: home,
    CODEX_HOME: codexHome,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: join(root, 'tmp'),
    PATH: path,
    NO_COLOR: '1',
    // opencode installs a plugin at its first run: never from the network in a test.
    npm_config_registry: 'http://127.0.0.1:9/',
    BUN_CONFIG_REGISTRY: 'http://127.0.0.1:9/',
    OLLAMA_HOST: '127.0.0.1:9',
  }
  return { root, home, project, codexHome, env }
}

/** A host CLI's output (stdout and stderr together, colours stripped), bounded: some connect to every server. */
function hostSays(program: string, args: string[], h: Home): Promise<string> {
  return new Promise((done) => {
    const child = execFile(join(BIN, program), args, { cwd: h.project, env: h.env, timeout: 60_000, killSignal: 'SIGKILL', encoding: 'utf8' }, (_error, stdout, stderr) =>
      done(`${stdout}\n${stderr}`.replace(/\u001b\[[0-9;]*m/g, '')),
    )
    child.stdin?.end()
  })
}

const installCli = (args: string[], h: Home) => runCli(args, { env: h.env, cwd: h.project })
const REGISTERED = [process.execPath, CLI, 'mcp']

interface HostCase {
  host: string
  /** The config file install writes (user scope). */
  config: (h: Home) => string
  /** What the file holds before: another server (and comments where the host keeps them). */
  before: string
  /** Our entry, as read back from the config. */
  entry: (text: string) => Record<string, unknown> | undefined
  /** The other server's entry, as read back. */
  others: (text: string) => unknown
  /** Whether uninstall gives back the file byte for byte (the host rewrites it otherwise). */
  byteForByte: boolean
  /** The host's own listing, and what it must show of our entry. */
  list: (h: Home) => Promise<void>
  /** The start of the dry run's `run:` line, when the host's CLI is run. */
  dryRunLine: RegExp
}

const jsonc = (text: string): Record<string, unknown> => JSON.parse(text.replace(/^\s*\/\/.*$/gm, '')) as Record<string, unknown>

const CASES: HostCase[] = [
  {
    host: 'claude',
    config: (h) => join(h.home, '.claude.json'),
    before: `${JSON.stringify({ mcpServers: { other: { type: 'stdio', command: 'other-server', args: [], env: {} } } }, null, 2)}\n`,
    entry: (text) => (jsonc(text).mcpServers as Record<string, Record<string, unknown>>)['phone-a-friend'],
    others: (text) => (jsonc(text).mcpServers as Record<string, unknown>).other,
    byteForByte: false,
    list: async (h) => {
      const said = await hostSays('claude', ['mcp', 'get', 'phone-a-friend'], h)
      expect(said).toContain('Scope: User config')
      expect(said).toContain(`Command: ${process.execPath}`)
      expect(said).toContain(`Args: ${CLI} mcp`)
    },
    dryRunLine: /^run: {3}claude mcp add-json -s user phone-a-friend '\{"type":"stdio",.*"timeout":900000\}'$/m,
  },
  {
    host: 'codex',
    config: (h) => join(h.codexHome, 'config.toml'),
    before: '# my codex settings\nmodel = "o3"  # the one I like\n\n[mcp_servers.other]\ncommand = "other-server"\n',
    entry: (text) => ((parseToml(text).mcp_servers ?? {}) as Record<string, Record<string, unknown>>)['phone-a-friend'],
    others: (text) => ((parseToml(text).mcp_servers ?? {}) as Record<string, unknown>).other,
    byteForByte: true,
    list: async (h) => {
      const got = JSON.parse((await hostSays('codex', ['mcp', 'get', 'phone-a-friend', '--json'], h)).replace(/^[^{]*/, '').replace(/}[^}]*$/, '}')) as Record<string, any>
      expect(got.transport.command).toBe(process.execPath)
      expect(got.transport.args).toEqual([CLI, 'mcp'])
      expect(got.tool_timeout_sec).toBe(900)
      expect(got.transport.env_vars).toContain('OPENAI_API_KEY')
      expect(got.transport.env_vars).toContain('PHONE_A_FRIEND_DEPTH')
    },
    dryRunLine: /^run: {3}codex mcp add phone-a-friend -- \S+ \S+ mcp$/m,
  },
  {
    host: 'gemini',
    config: (h) => join(h.home, '.gemini', 'settings.json'),
    before: '{\n  // my gemini settings\n  "mcpServers": {\n    "other": { "command": "other-server" }\n  }\n}\n',
    entry: (text) => (jsonc(text).mcpServers as Record<string, Record<string, unknown>>)['phone-a-friend'],
    others: (text) => (jsonc(text).mcpServers as Record<string, unknown>).other,
    byteForByte: false,
    list: async (h) => {
      const said = await hostSays('gemini', ['mcp', 'list'], h)
      expect(said).toContain(`phone-a-friend: ${process.execPath} ${CLI} mcp (stdio)`)
    },
    dryRunLine: /^run: {3}gemini mcp add -s user --timeout 900000 -e 'OPENAI_API_KEY=\$OPENAI_API_KEY' .* phone-a-friend \S+ -- \S+ mcp$/m,
  },
  {
    host: 'opencode',
    config: (h) => join(h.home, '.config', 'opencode', 'opencode.jsonc'),
    before: '{\n  // my opencode settings\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {\n    "other": { "type": "local", "command": ["other-server"] } // keep me\n  }\n}\n',
    entry: (text) => (jsonc(text.replace(/\/\/ keep me/, '')).mcp as Record<string, Record<string, unknown>>)['phone-a-friend'],
    others: (text) => (jsonc(text.replace(/\/\/ keep me/, '')).mcp as Record<string, unknown>).other,
    byteForByte: true,
    list: async (h) => {
      const said = await hostSays('opencode', ['mcp', 'list'], h)
      expect(said).toMatch(/phone-a-friend\s+connected/)
    },
    dryRunLine: /^edit: {2}\S+opencode\.jsonc: set mcp\.phone-a-friend = \{"type":"local","command":\[.*\],"timeout":900000\}$/m,
  },
]

/** Our entry as each host should hold it. */
function expectOurEntry(host: string, entry: Record<string, unknown> | undefined): void {
  if (host === 'opencode') return void expect(entry).toEqual({ type: 'local', command: REGISTERED, timeout: 900000 })
  expect(entry).toMatchObject({ command: process.execPath, args: [CLI, 'mcp'] })
  if (host === 'claude') expect(entry?.timeout).toBe(900000)
  if (host === 'gemini') {
    expect(entry?.timeout).toBe(900000)
    // Keys by reference, never a value.
    expect(entry?.env).toMatchObject({ GEMINI_API_KEY: '$GEMINI_API_KEY', OPENAI_API_KEY: '$OPENAI_API_KEY' })
  }
  if (host === 'codex') expect(entry?.tool_timeout_sec).toBe(900)
}

describe.each(CASES)('install $host', (c) => {
  const h = freshHome()
  const path = c.config(h)

  it('--dry-run prints what it would do and changes nothing', async () => {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, c.before)
    const run = await installCli(['install', c.host, '--dry-run'], h)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^--- dry run: nothing was changed ---\nWould install phone-a-friend in /)
    expect(run.stdout).toMatch(c.dryRunLine)
    expect(readFileSync(path, 'utf8')).toBe(c.before)
  })

  it("installs: the host's own listing shows our command, the config its time-out", async () => {
    const run = await installCli(['install', c.host], h)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`Installed phone-a-friend in ${c.host} (`)
    expect(run.stdout).toContain('It starts this installed copy')
    const text = readFileSync(path, 'utf8')
    expectOurEntry(c.host, c.entry(text))
    expect(c.others(text)).toEqual(c.others(c.before))
    await c.list(h)
  }, 90_000)

  it('a second install changes nothing and says so', async () => {
    const before = readFileSync(path, 'utf8')
    const run = await installCli(['install', c.host, '--json'], h)
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, host: c.host, action: 'unchanged', steps: [] })
    const again = await installCli(['install', c.host], h)
    expect(again.stdout).toMatch(new RegExp(`^phone-a-friend is already installed in ${c.host} \\(\\w+ scope, .*\\): nothing changed\\n$`))
    expect(readFileSync(path, 'utf8')).toBe(before)
  })

  it('uninstall removes exactly our entry, and says when there is nothing to remove', async () => {
    const dry = await installCli(['uninstall', c.host, '--dry-run'], h)
    expect(dry.stdout).toMatch(/^--- dry run: nothing was changed ---\nWould remove phone-a-friend from /)
    expect(c.entry(readFileSync(path, 'utf8'))).toBeDefined()
    const run = await installCli(['uninstall', c.host], h)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(new RegExp(`^Removed phone-a-friend from ${c.host} \\(`))
    const text = readFileSync(path, 'utf8')
    expect(c.entry(text)).toBeUndefined()
    expect(c.others(text)).toEqual(c.others(c.before))
    if (c.byteForByte) expect(text).toBe(c.before)
    const again = await installCli(['uninstall', c.host], h)
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(new RegExp(`^phone-a-friend is not installed in ${c.host} \\(.*\\): nothing to remove\\n$`))
    expect(readFileSync(path, 'utf8')).toBe(text)
  }, 60_000)
})

describe('scopes, hosts and failures', () => {
  it('claude --scope project writes .mcp.json in the current directory', async () => {
    const h = freshHome()
    const run = await installCli(['install', 'claude', '--scope', 'project'], h)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const written = JSON.parse(readFileSync(join(h.project, '.mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> }
    expect(written.mcpServers['phone-a-friend']).toMatchObject({ command: process.execPath, args: [CLI, 'mcp'], timeout: 900000 })
    expect(existsSync(join(h.home, '.claude.json')) ? JSON.stringify(JSON.parse(readFileSync(join(h.home, '.claude.json'), 'utf8')).mcpServers ?? {}) : '{}').not.toContain('phone-a-friend')
    const removed = await installCli(['uninstall', 'claude', '--scope', 'project'], h)
    expect(removed.code).toBe(0)
    expect((JSON.parse(readFileSync(join(h.project, '.mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers).toEqual({})
  }, 60_000)

  it('codex --scope project is refused, saying why', async () => {
    const h = freshHome()
    const run = await installCli(['install', 'codex', '--scope', 'project'], h)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("phone-a-friend: codex has no project scope here: codex's CLI writes only the user's config")
    expect(run.stderr).toContain('Usage: phone-a-friend install <claude|codex|gemini|opencode>')
    expect(existsSync(join(h.codexHome, 'config.toml'))).toBe(false)
  })

  it('a mistyped host or scope is a usage error naming the one meant', async () => {
    const h = freshHome()
    const host = await installCli(['install', 'claud', '--json'], h)
    expect(host.code).toBe(2)
    expect(JSON.parse(host.stdout)).toEqual({ ok: false, error: { code: 'ERR_USAGE', message: 'unknown host: claud (claude, codex, gemini, opencode). Did you mean claude?' } })
    const scope = await installCli(['install', 'gemini', '--scope', 'projet'], h)
    expect(scope.code).toBe(2)
    expect(scope.stderr).toContain('gemini has no scope projet: its scopes are user, project. Did you mean project?')
    const none = await installCli(['uninstall'], h)
    expect(none.stderr).toContain('uninstall needs a host: claude, codex, gemini, opencode')
    const flag = await installCli(['install', 'codex', '--to', 'gemini'], h)
    expect(flag.stderr).toContain('--to is not an option of install')
  })

  it('a host CLI not on PATH: a coded error saying how to install it', async () => {
    const h = freshHome(NODE_DIR)
    const run = await installCli(['install', 'claude'], h)
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('Error [ERR_HOST_NOT_FOUND]: claude (claude) is not on PATH\nHint: Install it: npm install -g @anthropic-ai/claude-code\n')
    // opencode's config is edited: its CLI is not needed.
    const opencode = await installCli(['install', 'opencode', '--json'], h)
    expect(JSON.parse(opencode.stdout)).toMatchObject({ ok: true, action: 'installed' })
  })

  it('a host CLI that fails: its words, printable, exit 1', async () => {
    const h = freshHome()
    // codex refuses a CODEX_HOME that does not exist (docs/HOSTS.md).
    h.env.CODEX_HOME = join(h.root, 'missing\u001b[31m')
    const run = await installCli(['install', 'codex', '--json'], h)
    expect(run.code).toBe(1)
    const { error } = JSON.parse(run.stdout) as { error: { code: string; message: string } }
    expect(error.code).toBe('ERR_HOST_FAILED')
    expect(error.message).toMatch(/^codex failed \(exit 1\): /)
    expect(run.stdout).not.toContain('\u001b')
  })

  it('a config that is not valid JSON is reported, not overwritten', async () => {
    const h = freshHome()
    const path = join(h.home, '.config', 'opencode', 'opencode.json')
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, '{ "mcp": ')
    const run = await installCli(['install', 'opencode'], h)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/^Error \[ERR_HOST_CONFIG\]: \S+opencode\.json is not valid JSON: /)
    expect(readFileSync(path, 'utf8')).toBe('{ "mcp": ')
  })

  it('run from npx’s cache, the entry is npx pinned to this version', () => {
    expect(mcpEntry({ binPath: '/home/me/.npm/_npx/1a2b/node_modules/@phone-a-friend/relay/bin/phone-a-friend.js', nodePath: '/usr/bin/node', version: '1.2.3' })).toEqual({
      command: 'npx',
      args: ['-y', '@phone-a-friend/relay@1.2.3', 'mcp'],
      via: 'npx',
    })
    expect(mcpEntry({ binPath: '/usr/lib/node_modules/@phone-a-friend/relay/bin/phone-a-friend.js', nodePath: '/usr/bin/node', version: '1.2.3' })).toEqual({
      command: '/usr/bin/node',
      args: ['/usr/lib/node_modules/@phone-a-friend/relay/bin/phone-a-friend.js', 'mcp'],
      via: 'installed',
    })
  })
})

describe('doctor: the MCP hosts', () => {
  /** A copy of the CLI elsewhere, to install from and then take away (a moved global install). */
  function copyOfCli(h: Home): string {
    const copy = join(h.root, 'moved-package')
    mkdirSync(copy)
    cpSync(join(ROOT, 'bin'), join(copy, 'bin'), { recursive: true })
    cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true })
    cpSync(join(ROOT, 'package.json'), join(copy, 'package.json'))
    // The addon beside it, as an installed package has it: install looks the hosts' CLIs up with it.
    for (const file of readdirSync(ROOT).filter((name) => name === 'binding.js' || name === 'phone-a-friend-supervisor' || /^relay\..*\.node$/.test(name))) {
      cpSync(join(ROOT, file), join(copy, file))
    }
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
    return join(copy, 'bin', 'phone-a-friend.js')
  }

  /** doctor with no host CLI on PATH: its backend checks are then quick, and its hosts part reads files only. */
  const doctorHosts = async (h: Home) => {
    const env = { ...h.env, PATH: NODE_DIR }
    const run = await runCli(['doctor', '--json'], { env, cwd: h.project })
    return { text: (await runCli(['doctor'], { env, cwd: h.project })).stdout, hosts: (JSON.parse(run.stdout) as { hosts: unknown[]; backends: unknown[] }).hosts }
  }

  it('says, per host, installed or not, and whether the command still resolves', async () => {
    const h = freshHome()
    // Nothing installed: no host says so (doctor's own `claude --version` may have made ~/.claude.json).
    expect((await doctorHosts(h)).hosts).toEqual(expect.not.arrayContaining([expect.objectContaining({ installs: [expect.anything()] })]))
    for (const host of ['claude', 'opencode']) expect((await installCli(['install', host], h)).code).toBe(0)
    const moved = copyOfCli(h)
    const codexRun = await new Promise<number | null>((done) => execFile(process.execPath, [moved, 'install', 'codex'], { env: h.env, cwd: h.project, timeout: 60_000 }, (error) => done(error ? 1 : 0)))
    expect(codexRun).toBe(0)
    mkdirSync(join(h.home, '.gemini'), { recursive: true })
    writeFileSync(join(h.home, '.gemini', 'settings.json'), '{}\n')
    unlinkSync(moved)
    const { hosts, text } = await doctorHosts(h)
    expect(hosts).toEqual([
      { name: 'claude', installs: [{ scope: 'user', config: join(h.home, '.claude.json'), command: REGISTERED, resolves: true }] },
      { name: 'codex', installs: [{ scope: 'user', config: join(h.codexHome, 'config.toml'), command: [process.execPath, moved, 'mcp'], resolves: false, problem: `${moved} does not exist (moved or uninstalled?)` }] },
      { name: 'gemini', installs: [] },
      { name: 'opencode', installs: [{ scope: 'global', config: join(h.home, '.config', 'opencode', 'opencode.jsonc'), command: REGISTERED, resolves: true }] },
    ])
    expect(text).toContain(`MCP hosts:\n✓ claude   phone-a-friend installed (user scope): ${process.execPath} ${CLI} mcp\n`)
    expect(text).toContain(`✗ codex    phone-a-friend installed (user scope), but ${moved} does not exist (moved or uninstalled?): run \`phone-a-friend install codex\` again\n`)
    expect(text).toContain('- gemini   phone-a-friend not installed: `phone-a-friend install gemini`\n')
    // Installed again from here: the moved entry is replaced, and says what it was.
    const again = await installCli(['install', 'codex'], h)
    expect(again.stdout).toContain(`Replaced phone-a-friend in codex (user scope, ${join(h.codexHome, 'config.toml')}): it ran ${process.execPath} ${moved} mcp, now ${process.execPath} ${CLI} mcp\n`)
    expect((await doctorHosts(h)).hosts[1]).toMatchObject({ name: 'codex', installs: [{ resolves: true }] })
  }, 120_000)
})

describe("a host's CLI that does not finish", () => {
  it('is stopped at its time-out with ERR_HOST_TIMEOUT, and nothing it started is left running', async () => {
    // The built module: it reaches the addon through dist/internal/core.js, as the CLI does.
    const { runHost } = createRequire(import.meta.url)('../dist/cli/host-process.js') as typeof import('../lib/cli/host-process.js')
    const dir = mkdtempSync(join(tmpdir(), 'paf-host-hang-'))
    const mark = `PAF_HOST_HANG=${process.pid}-${Date.now()}`
    try {
      // The CLI starts a process of its own, which says it runs by writing its pid, and both hang.
      const started = join(dir, 'grandchild.pid')
      const grandchild = `require('node:fs').writeFileSync(${JSON.stringify(started)}, String(process.pid)); setInterval(() => {}, 1000)`
      const script = join(dir, 'hang.js')
      writeFileSync(script, `require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(grandchild)}], { stdio: 'ignore' })\nsetInterval(() => {}, 1000)\n`)
      const [key, value] = mark.split('=')
      const run = runHost({ command: [process.execPath, script], args: ['mcp', 'add'], cwd: dir, env: { ...process.env, [key]: value }, host: 'claude' }, 3000)
      await expect(run).rejects.toMatchObject({ code: 'ERR_HOST_TIMEOUT', message: 'claude did not finish within 3 s; it was stopped' })
      expect(Number(readFileSync(started, 'utf8'))).toBeGreaterThan(0)
      await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 3_000, interval: 20 })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('what doctor shows of a host entry', () => {
  it('masks a secret a hand-edited entry carries in its arguments', async () => {
    const h = freshHome(`${NODE_DIR}${delimiter}/usr/bin${delimiter}/bin`)
    const token = 'sk-proj-abcdefghijklmnopqrstuvwxyz123456'
    mkdirSync(join(h.home, '.config', 'opencode'), { recursive: true })
    writeFileSync(join(h.home, '.config', 'opencode', 'opencode.json'), JSON.stringify({ mcp: { 'phone-a-friend': { type: 'local', command: [process.execPath, CLI, 'mcp', `--token=${token}`] } } }))
    const json = await runCli(['doctor', '--json'], { env: h.env, cwd: h.project })
    const text = await runCli(['doctor'], { env: h.env, cwd: h.project })
    const hosts = (JSON.parse(json.stdout) as { hosts: Array<{ name: string; installs: Array<{ command: string[] }> }> }).hosts
    expect(hosts.find((host) => host.name === 'opencode')?.installs[0]?.command).toEqual([process.execPath, CLI, 'mcp', '--token=********'])
    expect(json.stdout).not.toContain(token)
    expect(text.stdout).toContain('--token=********')
    expect(text.stdout).not.toContain(token)
  })
})
