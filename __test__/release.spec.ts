// The packages as a user gets them: `npm run release:assemble` (staged in a temp folder here),
// published to a real npm registry on 127.0.0.1 (verdaccio, no uplinks: nothing leaves the
// machine), then installed in a fresh project with the README's install command, as written.
// Also what a user sees when the platform package is left out (`--omit=optional`).
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '..')
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string }
const PLATFORM = 'linux-x64-gnu' // the target this suite runs on
const PLATFORM_PACKAGE = `${PKG.name}-${PLATFORM}`
/** Every platform whose addon is built here (release:assemble stages those): this one, and the cross-built ones if any. */
const BUILT = readdirSync(ROOT)
  .map((file) => /^relay\.(.+)\.node$/.exec(file)?.[1])
  .filter((platform): platform is string => platform !== undefined)

let work: string
let stage: string
let registry: string
let verdaccio: ChildProcess | undefined
let bin: string
/** The environment of every command: no npm_* variables of the `npm test` running this, a throwaway npm cache and user config. */
let env: NodeJS.ProcessEnv

interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** Runs a command to its end; never throws, so the exit code can be asserted. */
function run(command: string, args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((done) => {
    execFile(command, args, { cwd, env: { ...env, ...extra }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
      done({ code, stdout, stderr })
    })
  })
}

async function ok(command: string, args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<string> {
  const ran = await run(command, args, cwd, extra)
  if (ran.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${ran.code}\n${ran.stdout}\n${ran.stderr}`)
  return ran.stdout
}

/** verdaccio in a child process, listening on a free port of 127.0.0.1; it exits when our end of its stdin closes. */
async function startRegistry(): Promise<string> {
  const dir = join(work, 'registry')
  mkdirSync(dir)
  // JSON is YAML: verdaccio reads this as its config.yaml.
  const config = {
    storage: join(dir, 'storage'),
    auth: { htpasswd: { file: join(dir, 'htpasswd'), max_users: 10 } },
    uplinks: {},
    packages: { '**': { access: '$all', publish: '$authenticated', unpublish: '$authenticated' } },
    max_body_size: '1gb',
    web: { enable: false },
    log: { type: 'file', path: join(dir, 'verdaccio.log'), level: 'warn' },
  }
  writeFileSync(join(dir, 'config.yaml'), JSON.stringify(config))
  const script = `
    process.stdin.on('end', () => process.exit(0)).resume()
    require('verdaccio').runServer(process.argv[1]).then((server) =>
      server.listen(0, '127.0.0.1', () => console.log('listening on ' + server.address().port)))`
  verdaccio = spawn(process.execPath, ['-e', script, join(dir, 'config.yaml')], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
  const child = verdaccio
  return new Promise((done, failed) => {
    let output = ''
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      const port = /listening on (\d+)/.exec(output)?.[1]
      if (port !== undefined) done(`http://127.0.0.1:${port}/`)
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.on('exit', (code) => failed(new Error(`verdaccio exited ${code} before listening:\n${output}`)))
  })
}

/** A throwaway user on the local registry; its token goes in the throwaway user config. */
async function addUser(): Promise<void> {
  const response = await fetch(`${registry}-/user/org.couchdb.user:release-test`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'release-test', password: 'release-test-password' }),
  })
  expect(response.status).toBe(201)
  const { token } = (await response.json()) as { token: string }
  writeFileSync(join(work, 'npmrc'), `${registry.replace(/^http:/, '')}:_authToken=${token}\n`)
}

/** The install command of the README's "Install" section, verbatim. */
function readmeInstallCommand(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('\n## Install\n'))
  const command = /```sh\n([^\n]+)\n```/.exec(section)?.[1]
  if (command === undefined) throw new Error('README.md: no ```sh block in the Install section')
  return command.trim()
}

/** A fresh project that installs from the local registry only. */
function project(name: string): string {
  const dir = join(work, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }))
  writeFileSync(join(dir, '.npmrc'), `registry=${registry}\n`)
  return dir
}

/** Relays "hello" through the installed package; prints the answer, or the error's code, message and cause. */
const RELAY = `
  const { relay } = require('${PKG.name}')
  relay({ prompt: 'hello', repoPath: process.cwd() }).then(
    (answer) => console.log(JSON.stringify({ answer })),
    (error) => console.log(JSON.stringify({ name: error.name, code: error.code, message: error.message, cause: String(error.cause) })))
`

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'paf-release-'))
  stage = join(work, 'stage')
  env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))
  // No real backend CLI (the devDependencies' node_modules/.bin) on PATH: only the fake codex. Node and npm first.
  env.PATH = [dirname(process.execPath), ...(process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.includes('node_modules'))].join(delimiter)
  Object.assign(env, { npm_config_userconfig: join(work, 'npmrc'), npm_config_cache: join(work, 'npm-cache'), npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' })
  env.OLLAMA_HOST = 'http://127.0.0.1:9' // nothing answers there: doctor's ollama is not ready
  bin = join(work, 'bin')
  mkdirSync(bin)
  copyFileSync(join(__dirname, 'support', 'fake-cli.sh'), join(bin, 'codex'))
  chmodSync(join(bin, 'codex'), 0o755)
  ;[registry] = await Promise.all([startRegistry(), ok(process.execPath, [join(ROOT, 'scripts', 'release-assemble.mjs'), '--out', stage], ROOT)])
  await addUser()
  const platformDirs = readdirSync(join(stage, 'npm')).map((dir) => join(stage, 'npm', dir))
  // The package's runtime dependencies as npm has them (the registry has no uplink), each from its
  // tarball in node_modules; then the platform packages, then the main package that depends on them.
  const dependencies = Object.keys((PKG as { dependencies?: Record<string, string> }).dependencies ?? {})
  for (const dependency of dependencies) await ok('npm', ['publish', join(ROOT, 'node_modules', dependency), '--ignore-scripts', '--provenance=false', '--registry', registry], work)
  for (const dir of [...platformDirs, stage]) await ok('npm', ['publish', dir, '--registry', registry], work)
}, 120_000)

afterAll(() => {
  verdaccio?.stdin?.end()
  verdaccio?.kill()
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('published to a registry and installed as the README says', () => {
  let installed: string

  beforeAll(async () => {
    installed = project('consumer')
    const command = readmeInstallCommand()
    expect(command).toMatch(/^npm (install|i) @phone-a-friend\/relay\b/)
    await ok('sh', ['-c', command], installed)
  }, 60_000)

  it('the main package depends on every built platform package at its own version, npm installs only the one for this platform, and all are public', async () => {
    const main = JSON.parse(readFileSync(join(installed, 'node_modules', PKG.name, 'package.json'), 'utf8'))
    expect(BUILT).toContain(PLATFORM)
    expect(main.optionalDependencies).toEqual(Object.fromEntries(BUILT.map((platform) => [`${PKG.name}-${platform}`, PKG.version])))
    expect(readdirSync(join(installed, 'node_modules', '@phone-a-friend')).sort()).toEqual(['relay', `relay-${PLATFORM}`])
    expect(main.publishConfig).toEqual({ access: 'public' })
    // The AI SDK provider's one dependency, for its subpath only: an optional peer, never installed for users who do not ask.
    expect(main.peerDependencies).toEqual({ '@ai-sdk/provider': '^4.0.0' })
    expect(main.peerDependenciesMeta).toEqual({ '@ai-sdk/provider': { optional: true } })
    expect(existsSync(join(installed, 'node_modules', '@ai-sdk'))).toBe(false)
    const platform = JSON.parse(readFileSync(join(installed, 'node_modules', PLATFORM_PACKAGE, 'package.json'), 'utf8'))
    expect(platform).toMatchObject({ version: PKG.version, os: ['linux'], cpu: ['x64'], libc: ['glibc'], publishConfig: { access: 'public' } })
  })

  it('each package holds what it needs and nothing more', () => {
    const main = join(installed, 'node_modules', PKG.name)
    expect(readdirSync(main).sort()).toEqual(['BENCHMARKS.md', 'CHANGELOG.md', 'LICENSE', 'README.md', 'ai-sdk.mjs', 'bin', 'binding.d.ts', 'binding.js', 'dist', 'docs', 'examples', 'index.mjs', 'package.json'])
    expect(readdirSync(join(main, 'dist')).sort()).toEqual(['ai-sdk.d.ts', 'ai-sdk.js', 'cli', 'index.d.ts', 'index.js', 'internal'])
    const platform = join(installed, 'node_modules', PLATFORM_PACKAGE)
    expect(readdirSync(platform).sort()).toEqual(['LICENSE', 'README.md', 'package.json', 'phone-a-friend-supervisor', `relay.${PLATFORM}.node`])
    expect(statSync(join(platform, 'phone-a-friend-supervisor')).mode & 0o111).not.toBe(0)
  })

  it('every staged platform package holds its addon, and its supervisor but on Windows', () => {
    for (const platform of BUILT) {
      const supervisor = platform.startsWith('win32-') ? [] : ['phone-a-friend-supervisor']
      const files = readdirSync(join(stage, 'npm', platform)).sort()
      expect(files, platform).toEqual(['LICENSE', 'README.md', 'package.json', ...supervisor, `relay.${platform}.node`].sort())
    }
  })

  it('the committed npm/<platform>/package.json of each assembled platform is the one release:assemble generates', () => {
    const platforms = readdirSync(join(stage, 'npm'))
    expect(platforms).toContain(PLATFORM)
    for (const platform of platforms) {
      const generated = readFileSync(join(stage, 'npm', platform, 'package.json'), 'utf8')
      expect(readFileSync(join(ROOT, 'npm', platform, 'package.json'), 'utf8'), `npm/${platform}/package.json`).toBe(generated)
    }
  })

  it('require() relays through a CLI backend, run under the shipped supervisor', async () => {
    const log = mkdtempSync(join(work, 'log-'))
    const out = await ok(process.execPath, ['-e', RELAY], installed, { PATH: `${bin}${delimiter}${env.PATH}`, FAKE_LOG: log, FAKE_MODE: 'answer' })
    expect(JSON.parse(out)).toEqual({ answer: 'file answer' })
    expect(readFileSync(join(log, 'stdin'), 'utf8')).toContain('hello')
  })

  it('npx phone-a-friend doctor exits 0 with a backend ready, 1 with none', async () => {
    const ready = await run('npx', ['phone-a-friend', 'doctor'], installed, { PATH: `${bin}${delimiter}${env.PATH}` })
    expect(ready).toMatchObject({ code: 0, stderr: '' })
    expect(ready.stdout).toMatch(/^✓ codex +1\.2\.3-fake, signed in /m)
    const none = await run('npx', ['phone-a-friend', 'doctor'], installed)
    expect(none.code).toBe(1)
    expect(none.stdout).toMatch(/^✗ codex /m)
  })
})

describe('installed without optional dependencies', () => {
  let installed: string

  beforeAll(async () => {
    installed = project('no-optional')
    await ok('sh', ['-c', `${readmeInstallCommand()} --omit=optional`], installed)
  }, 60_000)

  it('has no platform package', () => {
    expect(readdirSync(join(installed, 'node_modules', '@phone-a-friend'))).toEqual(['relay'])
  })

  it('a call rejects with ERR_NATIVE_BINDING_MISSING, naming the platform, the package and the fix', async () => {
    const out = JSON.parse(await ok(process.execPath, ['-e', RELAY], installed)) as Record<string, string>
    expect(out.name).toBe('RelayError')
    expect(out.code).toBe('ERR_NATIVE_BINDING_MISSING')
    expect(out.message).toBe(
      `${PKG.name} cannot load its native addon: the package ${PLATFORM_PACKAGE}, which holds it for this platform (${PLATFORM}), is not installed. ` +
        'npm installs it as an optional dependency: `--omit=optional` (or omit=optional in the npm config) leaves it out, ' +
        'and so can a package-lock.json made on another platform. Reinstall with optional dependencies enabled: ' +
        '`npm install --include=optional` (if the lock file came from another platform, delete node_modules and package-lock.json first).',
    )
    // napi's own words stay reachable as the cause.
    expect(out.cause).toMatch(/^Error: Cannot find native binding/)
  })

  it('npx phone-a-friend doctor exits 1 with the coded error', async () => {
    const doctor = await run('npx', ['phone-a-friend', 'doctor'], installed, { PATH: `${bin}${delimiter}${env.PATH}` })
    expect(doctor.code).toBe(1)
    expect(doctor.stdout).toBe('')
    expect(doctor.stderr).toMatch(new RegExp(`^Error \\[ERR_NATIVE_BINDING_MISSING\\]: .*the package ${PLATFORM_PACKAGE}, which holds it for this platform \\(${PLATFORM}\\)`))
  })

  it('on a platform the package has no build for, the error says so and names the platforms it has', async () => {
    const manifest = join(installed, 'node_modules', PKG.name, 'package.json')
    const original = readFileSync(manifest, 'utf8')
    const elsewhere = { [`${PKG.name}-darwin-arm64`]: PKG.version, [`${PKG.name}-linux-arm64-gnu`]: PKG.version }
    writeFileSync(manifest, JSON.stringify({ ...JSON.parse(original), optionalDependencies: elsewhere }))
    try {
      const out = JSON.parse(await ok(process.execPath, ['-e', RELAY], installed)) as Record<string, string>
      expect(out.code).toBe('ERR_NATIVE_BINDING_MISSING')
      expect(out.message).toBe(
        `${PKG.name} has no native addon for this platform (${PLATFORM}): there is no package ${PLATFORM_PACKAGE}. It is built for darwin-arm64, linux-arm64-gnu.`,
      )
    } finally {
      writeFileSync(manifest, original)
    }
  })

  it('installing again with optional dependencies brings the platform package, and the relay works', async () => {
    await ok('npm', ['install', '--include=optional'], installed)
    const log = mkdtempSync(join(work, 'log-'))
    const out = await ok(process.execPath, ['-e', RELAY], installed, { PATH: `${bin}${delimiter}${env.PATH}`, FAKE_LOG: log, FAKE_MODE: 'answer' })
    expect(JSON.parse(out)).toEqual({ answer: 'file answer' })
  })
})
