import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { RelayOptions, ReviewRelayOptions, SandboxMode } from '../index.js'
import { HELP, USAGE_LINE } from './usage.js'

/** Exit codes of SPEC 9. */
const EXIT_RELAY_ERROR = 1
const EXIT_USAGE = 2
const EXIT_INTERRUPTED = 130
/** 128 + SIGPIPE, as git exits when its pager is closed: the reader went away. */
const EXIT_BROKEN_PIPE = 141

class UsageError extends Error {}

const OPTIONS = {
  prompt: { type: 'string', short: 'p' },
  to: { type: 'string', short: 't' },
  repo: { type: 'string', short: 'r' },
  'context-file': { type: 'string' },
  'context-text': { type: 'string' },
  'include-diff': { type: 'boolean' },
  timeout: { type: 'string' },
  model: { type: 'string', short: 'm' },
  sandbox: { type: 'string' },
  review: { type: 'boolean' },
  base: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const

type Flags = ReturnType<typeof parseFlags>['values']

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/** The API, loaded only when a command needs it: `--help` and `--version` never load the addon. */
function api(): typeof import('../index.js') {
  return require('../index.js') as typeof import('../index.js')
}

function version(): string {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
  return manifest.version
}

/** flag > environment > default. */
function envFlag(name: string): string | undefined {
  const value = process.env[name]
  return value === undefined || value === '' ? undefined : value
}

function truthy(value: string | undefined): boolean {
  return value === 'true' || value === '1'
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

interface Request {
  review: boolean
  options: RelayOptions & ReviewRelayOptions
}

async function buildRequest(flags: Flags, signal: AbortSignal): Promise<Request> {
  const review = Boolean(flags.review || flags.base !== undefined)
  let prompt = flags.prompt
  if (prompt === '-') prompt = await readStdin()
  if (prompt === undefined && !review) throw new UsageError('missing --prompt')
  const timeout = flags.timeout ?? envFlag('PHONE_A_FRIEND_TIMEOUT')
  const options: RelayOptions & ReviewRelayOptions = {
    prompt: prompt as string,
    repoPath: flags.repo ?? process.cwd(),
    backend: flags.to ?? envFlag('PHONE_A_FRIEND_BACKEND'),
    contextFile: flags['context-file'],
    contextText: flags['context-text'],
    includeDiff: flags['include-diff'] ?? truthy(envFlag('PHONE_A_FRIEND_INCLUDE_DIFF')),
    // Not a number: the relay reports ERR_INVALID_TIMEOUT in its turn.
    timeoutSeconds: timeout === undefined ? undefined : Number(timeout),
    model: flags.model,
    sandbox: (flags.sandbox ?? envFlag('PHONE_A_FRIEND_SANDBOX')) as SandboxMode | undefined,
    base: flags.base ?? (review ? envFlag('PHONE_A_FRIEND_REVIEW_BASE') : undefined),
    signal,
  }
  if (review && prompt === undefined) delete (options as Partial<RelayOptions>).prompt
  return { review, options }
}

function printError(error: unknown, json: boolean): void {
  const { code, message } = error as { code?: unknown; message?: unknown }
  const coded = { code: typeof code === 'string' ? code : 'ERR_UNEXPECTED', message: typeof message === 'string' ? message : String(error) }
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: coded })}\n`)
  else process.stderr.write(`Error [${coded.code}]: ${coded.message}\n`)
}

async function runRelay(flags: Flags): Promise<number> {
  const controller = new AbortController()
  let interrupted = false
  const onSigint = (): void => {
    if (interrupted) process.exit(EXIT_INTERRUPTED) // a second Ctrl-C does not wait
    interrupted = true
    controller.abort(new Error('Interrupted (SIGINT)'))
  }
  process.on('SIGINT', onSigint)
  const { relay, reviewRelay, DEFAULT_BACKEND } = api()
  const { startSpinner } = await import('./spinner.js')
  let stopSpinner = (): void => undefined
  try {
    const request = await buildRequest(flags, controller.signal)
    stopSpinner = startSpinner(`asking ${request.options.backend ?? DEFAULT_BACKEND}…`)
    const answer = request.review ? await reviewRelay(request.options) : await relay(request.options)
    stopSpinner()
    process.stdout.write(flags.json ? `${JSON.stringify({ ok: true, output: answer })}\n` : `${answer}\n`)
    return 0
  } catch (error) {
    stopSpinner()
    if (error instanceof UsageError) throw error
    if (interrupted) {
      if (flags.json) printError(error, true)
      else process.stderr.write('Interrupted.\n')
      return EXIT_INTERRUPTED
    }
    printError(error, Boolean(flags.json))
    return EXIT_RELAY_ERROR
  } finally {
    process.off('SIGINT', onSigint)
  }
}

async function runDoctor(flags: Flags): Promise<number> {
  const { doctor, formatDoctor } = await import('./doctor.js')
  const report = await doctor()
  process.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : formatDoctor(report))
  return report.backends.some((backend) => backend.found) ? 0 : EXIT_RELAY_ERROR
}

async function dispatch(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseFlags(argv)
  if (flags.help) {
    process.stdout.write(HELP)
    return 0
  }
  if (flags.version) {
    process.stdout.write(`${version()}\n`)
    return 0
  }
  const [command = 'relay', ...rest] = positionals
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`)
  if (command === 'doctor') return runDoctor(flags)
  if (command === 'relay') return runRelay(flags)
  throw new UsageError(`unknown command: ${command}`)
}

/**
 * A failed write to stdout or stderr. A reader that closed early (`| head`) is EPIPE: end at once
 * and quietly with 141, nothing more can be said anyway. Any other failure (a full disk) is worth a
 * word on stderr, if that still works, and exit 1.
 */
function onWriteError(this: NodeJS.WriteStream, error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') process.exit(EXIT_BROKEN_PIPE)
  if (this === process.stdout) process.stderr.write(`phone-a-friend: cannot write the output: ${error.message}\n`)
  process.exit(EXIT_RELAY_ERROR)
}

/** Runs the CLI; sets `process.exitCode` rather than exiting, so no output is cut short. */
export async function main(argv: string[]): Promise<void> {
  // Node ignores SIGPIPE, so a closed pipe surfaces as an 'error' event on the stream; unhandled,
  // it would crash with a stack trace.
  for (const stream of [process.stdout, process.stderr]) if (stream.listeners('error').length === 0) stream.on('error', onWriteError)
  try {
    process.exitCode = await dispatch(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`phone-a-friend: ${error.message}\n${USAGE_LINE}\n`)
    process.exitCode = EXIT_USAGE
  }
}
