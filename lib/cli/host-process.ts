// Running a host's own CLI (`claude mcp add-json`, `codex mcp add`, …): never through a shell,
// always bounded by a time-out that stops it and all it started, its words kept short and printable.
import { accessSync, constants, statSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { HostError } from './host-error.js'
import { printableLines } from './printable.js'

/** A host CLI's `mcp add` or `remove` takes a few seconds (gemini about 5): a minute is plenty. */
export const HOST_TIMEOUT_MS = 60_000

/** Bytes kept of what a host CLI prints on each stream; the rest is counted and dropped. */
const OUTPUT_KEPT = 1024 * 1024

/** How much of what a failed host CLI said goes into the message. */
const WORDS_SHOWN = 1000

/** Whether `path` is a file this user may run. */
export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * The command line that starts `program`: itself when it is an absolute path to an executable
 * file, else the program of that name on the PATH of `env` as a relay finds a CLI (the core's
 * lookup, one for both: on Windows an npm `.cmd` shim becomes the script it runs, since a batch
 * file cannot run without a shell). Undefined when there is none.
 */
export function commandLine(program: string, env: NodeJS.ProcessEnv): string[] | undefined {
  if (isAbsolute(program)) return isExecutableFile(program) ? [program] : undefined
  const core = require('../internal/core.js') as typeof import('../internal/core.js')
  try {
    return core.native.binding.programCommandLine(program, core.env.encodeEnv(env)) ?? undefined
  } catch (error) {
    throw new HostError(printableLines((error as Error).message), 'ERR_HOST_NOT_FOUND')
  }
}

/**
 * A command read from a host's config, as shown: each part through the core's secret masking
 * (docs/GUARANTEES.md, "Secrets are not shown"), since a hand-edited entry may carry a token in its arguments.
 */
export function shownCommand(parts: string[]): string[] {
  const core = require('../internal/core.js') as typeof import('../internal/core.js')
  return parts.map((part) => core.native.binding.maskSecrets(part))
}

/** The end of what a host CLI said, at most WORDS_SHOWN characters, printable. */
function lastWords(stdout: string, stderr: string): string {
  const said = `${stderr.trim()}\n${stdout.trim()}`.trim()
  const cut = said.length > WORDS_SHOWN ? `…${said.slice(-WORDS_SHOWN)}` : said
  return printableLines(cut)
}

export interface HostRun {
  /** What starts the program (commandLine's), before `args`. */
  command: string[]
  args: string[]
  cwd: string
  env: NodeJS.ProcessEnv
  /** Names the host in messages. */
  host: string
}

/**
 * Runs a host CLI to the end; its stdout, or a HostError saying what it said when it failed. The
 * core's process runner runs it (`runProgram`), supervised as a backend is: past the time-out, or
 * if this process dies, the CLI and everything it started are stopped.
 */
export async function runHost({ command, args, cwd, env, host }: HostRun, timeoutMs = HOST_TIMEOUT_MS): Promise<string> {
  const core = require('../internal/core.js') as typeof import('../internal/core.js')
  let run: Awaited<ReturnType<typeof core.native.binding.runProgram>>
  try {
    run = await core.native.binding.runProgram(core.native.scope(), { command, args, cwd, env: core.env.encodeEnv(env), timeoutMs, outputLimit: OUTPUT_KEPT })
  } catch (error) {
    throw new HostError(`${host} could not be started: ${printableLines((error as Error).message)}`, 'ERR_HOST_FAILED')
  }
  if (run.timedOut) throw new HostError(`${host} did not finish within ${timeoutMs / 1000} s; it was stopped`, 'ERR_HOST_TIMEOUT')
  if (run.code === 0) return run.stdout
  const status = run.code === null || run.code === undefined ? `signal ${run.signal ?? 'unknown'}` : `exit ${run.code}`
  const words = lastWords(run.stdout, run.stderr)
  throw new HostError(`${host} failed (${status})${words === '' ? '' : `: ${words}`}`, 'ERR_HOST_FAILED')
}
