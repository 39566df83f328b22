// The package as users install it: packed with `npm pack` (with its platform package, as
// `napi prepublish` publishes them), installed into a fresh project, used from CJS, ESM,
// strict TypeScript and npx.
import { execFile, execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ADDON, PLATFORM, SUPERVISOR_NAME, skipWithoutSubreaper, supervisorForThisArch } from './support/platform.js'

const ROOT = resolve(__dirname, '..')
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
// tsc is plain JS and checks the same typings on every platform: under qemu (`npm run test:arm64`
// names the host's Node here) it runs natively, since emulated it takes minutes.
const TSC_NODE = process.env.PAF_HOST_NODE ?? process.execPath
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
const SUPERVISOR = supervisorForThisArch()
let work: string
let project: string

/** As a user's shell: the installed package loads its own addon, not one the test run points at. */
const { NAPI_RS_NATIVE_LIBRARY_PATH: _override, ...USER_ENV } = process.env

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = USER_ENV): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

/**
 * `run`, without blocking the event loop: vitest's worker must answer its own RPC within 60 s,
 * and npm takes longer than that under qemu (`npm run test:arm64`).
 */
async function runAsync(command: string, args: string[], cwd: string): Promise<void> {
  await promisify(execFile)(command, args, { cwd, env: USER_ENV, encoding: 'utf8' })
}

async function pack(dir: string, destination: string): Promise<string> {
  const before = new Set(readdirSync(destination))
  await runAsync('npm', ['pack', '--silent', '--pack-destination', destination], dir)
  const tarball = readdirSync(destination).find((file) => file.endsWith('.tgz') && !before.has(file))
  if (!tarball) throw new Error(`npm pack made nothing in ${dir}`)
  return join(destination, tarball)
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'paf-pack-'))
  const platform = join(work, 'platform')
  mkdirSync(platform)
  copyFileSync(join(ROOT, 'npm', PLATFORM, 'package.json'), join(platform, 'package.json'))
  copyFileSync(ADDON, join(platform, `relay.${PLATFORM}.node`))
  copyFileSync(SUPERVISOR, join(platform, SUPERVISOR_NAME))
  const tarballs = [await pack(ROOT, work), await pack(platform, work)]
  project = join(work, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
  await runAsync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs], project)
}, process.env.PAF_QEMU === undefined ? 180_000 : 600_000)

afterAll(() => rmSync(work, { recursive: true, force: true }))

// The tests below block on child processes; under qemu several in a row outlast the 60 s within
// which vitest's worker must read its RPC replies: a turn of the event loop after each lets it.
afterEach(() => new Promise<void>((resolveTurn) => setTimeout(resolveTurn, 1)))

describe('the installed package', () => {
  it('ships only what it needs', () => {
    const installed = join(project, 'node_modules', '@phone-a-friend', 'relay')
    const files = readdirSync(installed).sort()
    expect(files).toEqual(['BENCHMARKS.md', 'CHANGELOG.md', 'LICENSE', 'README.md', 'ai-sdk.mjs', 'bin', 'binding.d.ts', 'binding.js', 'dist', 'docs', 'examples', 'index.mjs', 'package.json'])
    expect(readdirSync(join(installed, 'dist')).sort()).toEqual(['ai-sdk.d.ts', 'ai-sdk.js', 'cli', 'index.d.ts', 'index.js', 'internal'])
    // The CLI ships without its typings; the library with them.
    expect(readdirSync(join(installed, 'dist', 'cli')).every((file) => file.endsWith('.js'))).toBe(true)
    expect(readdirSync(join(installed, 'dist', 'internal')).some((file) => file.endsWith('.d.ts'))).toBe(true)
  })

  it('ships the docs and examples its README links, so that every link works from the tarball', () => {
    const installed = join(project, 'node_modules', '@phone-a-friend', 'relay')
    expect(readdirSync(join(installed, 'examples')).sort()).toEqual(['README.md', 'ai-sdk.ts', 'mcp-task.ts', 'mcp-v2-client.ts', 'second-opinion.ts', 'tsconfig.json'])
    const pages = ['README.md', 'BENCHMARKS.md', ...readdirSync(join(installed, 'docs')).map((page) => join('docs', page)), join('examples', 'README.md')]
    const broken: string[] = []
    for (const page of pages) {
      const text = readFileSync(join(installed, page), 'utf8')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const path = target.split('#')[0]
        if (path === '' || /^[a-z]+:/i.test(path)) continue
        if (!existsSync(join(installed, dirname(page), path))) broken.push(`${page} -> ${target}`)
      }
    }
    expect(broken).toEqual([])
  })

  it.skipIf(skipWithoutSubreaper('the package runs a CLI backend', SUPERVISOR))('runs a CLI backend under the supervisor that ships in the platform package', () => {
    const platformDir = join(project, 'node_modules', '@phone-a-friend', `relay-${PLATFORM}`)
    expect(readdirSync(platformDir).sort()).toEqual(['package.json', 'phone-a-friend-supervisor', `relay.${PLATFORM}.node`])
    expect(statSync(join(platformDir, 'phone-a-friend-supervisor')).mode & 0o111).not.toBe(0)
    const bin = mkdtempSync(join(work, 'bin-'))
    writeFileSync(join(bin, 'codex'), '#!/bin/sh\ncat > /dev/null\necho "answer under $(cat /proc/$PPID/comm)"\n', { mode: 0o755 })
    const out = run(process.execPath, ['-e', `
      const { relay } = require('@phone-a-friend/relay')
      relay({ prompt: 'hello', repoPath: '.' }).then((answer) => console.log(answer), (e) => console.log(e.code + ': ' + e.message))
    `], project, { ...USER_ENV, PATH: `${bin}:${process.env.PATH}` })
    // The backend's parent is the supervisor (its name cut to 15 bytes by the kernel), not Node.
    expect(out).toBe('answer under phone-a-friend-\n')
  })

  it('npx phone-a-friend --help works', () => {
    const help = run('npx', ['--no-install', 'phone-a-friend', '--help'], project)
    expect(help).toMatch(/^phone-a-friend: ask another coding agent/)
    expect(run('npx', ['--no-install', 'phone-a-friend', '--version'], project).trim()).toBe(VERSION)
  })

  it('npx phone-a-friend install works from the installed package (its dependencies installed with it)', () => {
    const home = mkdtempSync(join(work, 'home-'))
    const env = { ...USER_ENV, HOME: home, XDG_CONFIG_HOME: join(home, '.config') }
    run('npx', ['--no-install', 'phone-a-friend', 'install', 'opencode'], project, env)
    const installedBin = join(project, 'node_modules', '@phone-a-friend', 'relay', 'bin', 'phone-a-friend.js')
    const config = JSON.parse(readFileSync(join(home, '.config', 'opencode', 'opencode.jsonc'), 'utf8')) as { mcp: Record<string, { command: string[] }> }
    expect(config.mcp['phone-a-friend'].command).toEqual([process.execPath, installedBin, 'mcp'])
    expect(run('npx', ['--no-install', 'phone-a-friend', 'install', 'opencode'], project, env)).toContain('nothing changed')
  })

  it('npx phone-a-friend mcp serves MCP on stdio and exits when stdin closes', () => {
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'relay', arguments: { prompt: ' ' } } },
    ]
    const input = lines.map((line) => `${JSON.stringify(line)}\n`).join('')
    const out = execFileSync('npx', ['--no-install', 'phone-a-friend', 'mcp'], { cwd: project, env: USER_ENV, input, encoding: 'utf8', timeout: 30_000 })
    // Requests are served concurrently: answers come in any order.
    const answers = out.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { id: number; result: Record<string, unknown> }).sort((a, b) => a.id - b.id)
    expect(answers.map((answer) => answer.id)).toEqual([1, 2, 3])
    expect(answers[0].result.serverInfo).toMatchObject({ name: 'phone-a-friend', version: VERSION })
    expect((answers[1].result.tools as Array<{ name: string }>).map((tool) => tool.name).sort()).toEqual(['backends', 'relay', 'review'])
    expect(answers[2].result).toMatchObject({ isError: true, structuredContent: { error: { code: 'ERR_PROMPT_REQUIRED' } } })
  })

  it('relayAll() asks several backends at once', () => {
    const out = run(process.execPath, ['-e', `
      const { relayAll, registerBackend } = require('@phone-a-friend/relay')
      registerBackend({ name: 'a', allowedSandboxes: ['read-only'], run: async () => 'from a' })
      registerBackend({ name: 'b', allowedSandboxes: ['read-only'], run: async () => 'from b' })
      relayAll({ prompt: 'p', repoPath: '.', backends: ['a', 'b', 'nope'] }).then((results) =>
        console.log(JSON.stringify(results.map((r) => (r.ok ? r.answer : r.error.code)))))
    `], project)
    expect(JSON.parse(out)).toEqual(['from a', 'from b', 'ERR_UNSUPPORTED_BACKEND'])
  })

  it('require() gives the API', () => {
    const out = run(process.execPath, ['-e', `
      const api = require('@phone-a-friend/relay')
      const names = ['relay', 'relayAll', 'reviewRelay', 'detectDefaultBranch', 'gitDiffBase', 'registerBackend', 'checkBackends', '_resetRegistry']
      console.log(JSON.stringify({ fns: names.map((n) => typeof api[n]), max: api.MAX_PROMPT_BYTES, error: new api.RelayError('m', 'ERR_TOO_LARGE').name }))
    `], project)
    expect(JSON.parse(out)).toEqual({ fns: Array(8).fill('function'), max: 500_000, error: 'RelayError' })
  })

  it('the ESM entry names every export of the CommonJS one', () => {
    const out = run(process.execPath, ['--input-type=module', '-e', `
      import { createRequire } from 'node:module'
      const esm = await import('@phone-a-friend/relay')
      const cjs = createRequire(import.meta.url)('@phone-a-friend/relay')
      console.log(JSON.stringify({ esm: Object.keys(esm).filter((k) => k !== 'default').sort(), cjs: Object.keys(cjs).sort(), same: Object.keys(cjs).every((k) => esm[k] === cjs[k]) }))
    `], project)
    const { esm, cjs, same } = JSON.parse(out) as { esm: string[]; cjs: string[]; same: boolean }
    expect(esm).toEqual(cjs)
    expect(same).toBe(true)
  })

  it('the AI SDK provider: its subpath loads without @ai-sdk/provider (an optional peer), a call says what to install; with it, CJS and ESM relay alike', () => {
    const script = `
      const { createRequire } = require('node:module')
      const { registerBackend } = require('@phone-a-friend/relay')
      registerBackend({ name: 'echo', allowedSandboxes: ['read-only'], run: async (o) => 'echo:' + o.prompt.split('\\n').at(-1) })
      const cjs = require('@phone-a-friend/relay/ai-sdk')
      const call = { prompt: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }] }
      import('@phone-a-friend/relay/ai-sdk').then(async (esm) => {
        const same = esm.createPhoneAFriend === cjs.createPhoneAFriend && esm.PhoneAFriendLanguageModel === cjs.PhoneAFriendLanguageModel
        const model = cjs.createPhoneAFriend({ repoPath: '.' })('echo')
        const outcome = await model.doGenerate(call).then((r) => r.content[0].text, (e) => e.code + ': ' + e.message)
        console.log(JSON.stringify({ same, spec: model.specificationVersion, outcome, esm: Object.keys(esm).filter((k) => k !== 'default').sort(), cjs: Object.keys(cjs).sort() }))
      })
    `
    const without = JSON.parse(run(process.execPath, ['-e', script], project)) as Record<string, unknown>
    expect(without).toMatchObject({ same: true, spec: 'v4', outcome: expect.stringMatching(/^ERR_INTERNAL: @phone-a-friend\/relay\/ai-sdk needs the package @ai-sdk\/provider /) })
    expect(without.esm).toEqual(without.cjs)
    // @ai-sdk/provider has no runtime dependency: its folder is the whole install.
    cpSync(join(ROOT, 'node_modules', '@ai-sdk', 'provider'), join(project, 'node_modules', '@ai-sdk', 'provider'), { recursive: true, dereference: true })
    try {
      expect(JSON.parse(run(process.execPath, ['-e', script], project))).toMatchObject({ same: true, outcome: 'echo:hello' })
    } finally {
      rmSync(join(project, 'node_modules', '@ai-sdk'), { recursive: true, force: true })
    }
  })

  it('loads its native code on first use, not at import', () => {
    const out = run(process.execPath, ['--input-type=module', '-e', `
      import { readFileSync } from 'node:fs'
      const loaded = () => readFileSync('/proc/self/maps', 'utf8').includes('.node')
      const { relay, MAX_PROMPT_BYTES } = await import('@phone-a-friend/relay')
      const atImport = loaded()
      await relay({ prompt: 'p', repoPath: '/nonexistent-folder-for-this-test' }).catch(() => undefined)
      console.log(JSON.stringify({ atImport, afterCall: loaded(), max: MAX_PROMPT_BYTES }))
    `], project)
    expect(JSON.parse(out)).toEqual({ atImport: false, afterCall: true, max: 500_000 })
  })

  it('a first call loads the call modules as one bundled file (dist/internal/core.js)', () => {
    const out = run(process.execPath, ['-e', `
      const api = require('@phone-a-friend/relay')
      const ours = () => Object.keys(require.cache).filter((file) => file.includes('@phone-a-friend')).map((file) => file.slice(file.indexOf('@phone-a-friend') + 16)).sort()
      const atImport = ours()
      api.relay({ prompt: 'p', repoPath: '/nonexistent-folder-for-this-test' }).catch((error) => {
        console.log(JSON.stringify({ atImport, afterCall: ours(), code: error.code }))
      })
    `], project)
    expect(JSON.parse(out)).toEqual({
      atImport: ['relay/dist/index.js', 'relay/dist/internal/errors.js', 'relay/dist/internal/limits.js'],
      afterCall: [`relay-${PLATFORM}/package.json`, `relay-${PLATFORM}/relay.${PLATFORM}.node`, 'relay/binding.js', 'relay/dist/index.js', 'relay/dist/internal/core.js', 'relay/dist/internal/errors.js', 'relay/dist/internal/limits.js'],
      code: 'ERR_INVALID_REPO',
    })
  })

  it('import gives the same API, and the same classes as require()', () => {
    const out = run(process.execPath, ['--input-type=module', '-e', `
      import { createRequire } from 'node:module'
      import def, { relay, RelayError, registerBackend } from '@phone-a-friend/relay'
      const cjs = createRequire(import.meta.url)('@phone-a-friend/relay')
      registerBackend({ name: 'echo', allowedSandboxes: ['read-only'], run: async (o) => 'echo:' + o.prompt.split('\\n').at(-1) })
      const answer = await relay({ prompt: 'hello', repoPath: '.', backend: 'echo' })
      const error = await relay({ prompt: '', repoPath: '.' }).catch((e) => e)
      console.log(JSON.stringify({ answer, same: RelayError === cjs.RelayError && def.relay === relay, instance: error instanceof cjs.RelayError, code: error.code }))
    `], project)
    expect(JSON.parse(out)).toEqual({ answer: 'echo:hello', same: true, instance: true, code: 'ERR_PROMPT_REQUIRED' })
  })

  it('strict TypeScript accepts the typed options and refuses a bad sandbox', () => {
    const tsconfig = {
      compilerOptions: { strict: true, noEmit: true, module: 'node16', moduleResolution: 'node16', target: 'ES2022', lib: ['ES2022'], types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] },
    }
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig))
    writeFileSync(join(project, 'good.ts'), `
      import { relay, relayAll, reviewRelay, RelayError, type RelayAllResult, type RelayOptions, type Backend, type DryRun, registerBackend } from '@phone-a-friend/relay'
      const options: RelayOptions = { prompt: 'p', repoPath: '.', sandbox: 'workspace-write', timeoutSeconds: 5, signal: AbortSignal.timeout(1000) }
      const backend: Backend = { name: 'b', allowedSandboxes: new Set(['read-only'] as const), run: async (o) => o.prompt }
      registerBackend(backend)
      export async function use(): Promise<string> {
        try { return await relay(options) } catch (e) { if (e instanceof RelayError) return e.code }
        return reviewRelay({ repoPath: '.', base: 'main' })
      }
      export async function several(): Promise<string[]> {
        const results: RelayAllResult[] = await relayAll({ prompt: 'p', repoPath: '.', backends: ['codex', 'gemini'] })
        return results.map((result) => (result.ok ? result.answer : result.error.code))
      }
      export async function plan(): Promise<number> {
        const dryRun: DryRun = await relay({ ...options, dryRun: true })
        return dryRun.action.kind === 'command' ? dryRun.action.args.length : dryRun.envelopeBytes
      }
    `)
    expect(() => run(TSC_NODE, [TSC, '-p', '.'], project)).not.toThrow()
    writeFileSync(join(project, 'bad.ts'), `
      import { relay } from '@phone-a-friend/relay'
      export const p = relay({ prompt: 'p', repoPath: '.', sandbox: 'root' })
    `)
    let output = ''
    try {
      run(TSC_NODE, [TSC, '-p', '.'], project)
    } catch (error) {
      output = String((error as { stdout?: string }).stdout)
    }
    // relay() is overloaded (a dry run resolves with a DryRun): TypeScript names the bad field within.
    expect(output).toMatch(/bad\.ts\(3,\d+\): error TS2769: No overload matches this call[\s\S]*Type '"root"' is not assignable to type 'SandboxMode/)
  })
})
