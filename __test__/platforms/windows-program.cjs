// Run by windows.spec.ts under wine with the real Windows node.exe: `node.exe windows-program.cjs
// <request.json>`. It uses the package as a Windows user's program does and writes what happened
// as JSON to the request's `out` file (node.exe's stdout cannot be a Linux pipe under wine: libuv
// fails to open it, EBADF). Cases:
//   smoke       the harness alone: a napi addon with nothing of the relay in it loads
//   load        require the package; which .node file it loaded; checkBackends() through PATH
//   relay       a relay through the fake CLI's .cmd shim: the dry run's command, then the answer
//               (or the rejection) and the warnings; in a session when `session` is given, its
//               store in `home`
//   timeout     a relay whose CLI hangs with a grandchild, past its timeout
//   host-death  the same with a long timeout: says when the grandchild runs, then waits to be killed
//   host-cli    `phone-a-friend install`'s lookup of a host's CLI (the fake, as `gemini`), then runs
//               it with `args` as install runs a host's CLI: the command line and what it printed
// `progress` (a file) gets { grandchild: true } once the fake CLI's grandchild has started.
'use strict'
const { existsSync, readFileSync, renameSync, writeFileSync } = require('node:fs')
const { delimiter, join } = require('node:path')

const request = JSON.parse(readFileSync(process.argv[2], 'utf8'))

/** Written whole or not at all: the test polls for these files. */
function writeJson(file, value) {
  writeFileSync(`${file}.tmp`, JSON.stringify(value))
  renameSync(`${file}.tmp`, file)
}

function describeError(error) {
  if (!(error instanceof Error)) return { message: String(error) }
  return { name: error.name, code: error.code, message: error.message, stack: error.stack }
}

/** The package: by path, or by name from the node_modules around this file (the test copies it into a project for that). */
const loadPackage = () => require(request.package)

const nativeModulesLoaded = () => Object.keys(require.cache).filter((file) => file.endsWith('.node'))

/** Calls `then` once the fake CLI has reported its grandchild. */
function whenGrandchildRuns(then) {
  const poll = setInterval(() => {
    if (!existsSync(join(request.log, 'grandchild.json'))) return
    clearInterval(poll)
    then()
  }, 20)
}

async function run() {
  if (request.path) process.env.PATH = [...request.path, process.env.PATH].join(delimiter)
  switch (request.case) {
    case 'smoke': {
      const addon = require(request.smokeAddon)
      return { processId: addon.processId(), nodePid: process.pid, seedsDiffer: addon.seedsDiffer() }
    }
    case 'load': {
      const pkg = loadPackage()
      const backends = pkg.checkBackends()
      return { platform: process.platform, arch: process.arch, exports: Object.keys(pkg).sort(), backends, loaded: nativeModulesLoaded() }
    }
    case 'relay': {
      const { relay } = loadPackage()
      if (request.home) process.env.PHONE_A_FRIEND_HOME = request.home
      const warnings = []
      const options = { prompt: request.prompt, repoPath: request.repo, backend: 'gemini', model: request.model, timeoutSeconds: request.timeoutSeconds, session: request.session, onWarning: (warning) => warnings.push(warning) }
      const dryRun = await relay({ ...options, dryRun: true })
      try {
        return { action: dryRun.action, answer: await relay(options), warnings }
      } catch (error) {
        return { action: dryRun.action, rejected: describeError(error), warnings }
      }
    }
    case 'timeout': {
      const { relay } = loadPackage()
      whenGrandchildRuns(() => writeJson(request.progress, { grandchild: true }))
      const started = Date.now()
      try {
        const answer = await relay({ prompt: request.prompt, repoPath: request.repo, backend: 'gemini', timeoutSeconds: request.timeoutSeconds })
        return { answer, elapsedMs: Date.now() - started }
      } catch (error) {
        return { rejected: describeError(error), elapsedMs: Date.now() - started }
      }
    }
    case 'host-death': {
      const { relay } = loadPackage()
      whenGrandchildRuns(() => writeJson(request.progress, { grandchild: true }))
      // Never settles before the test kills this process; if it does, the test is told.
      const outcome = await relay({ prompt: request.prompt, repoPath: request.repo, backend: 'gemini', timeoutSeconds: request.timeoutSeconds }).then(
        (answer) => ({ answer }),
        (error) => ({ rejected: describeError(error) }),
      )
      return { settledBeforeTheKill: outcome }
    }
    case 'host-cli': {
      const { commandLine, runHost } = require(join(request.package, 'dist', 'cli', 'host-process.js'))
      const command = commandLine('gemini', process.env)
      const printed = await runHost({ command, args: request.args, cwd: request.repo, env: process.env, host: 'gemini' })
      return { command, printed }
    }
    default:
      throw new Error(`unknown case ${request.case}`)
  }
}

run().then(
  (result) => writeJson(request.out, { ok: true, result }),
  (error) => writeJson(request.out, { ok: false, error: describeError(error), loaded: nativeModulesLoaded() }),
)
