import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { RelayAllOptions, RelayDetails, RelayOptions, ReviewRelayOptions, SandboxMode } from '../index.js'
import { RelayError } from '../internal/errors.js'
import { BACKEND_ENV_VAR, DEFAULT_IDLE_TIMEOUT_SECONDS, MAX_PROMPT_BYTES } from '../internal/limits.js'
import { AnswerPrinter } from './answer-printer.js'
import { Lifetime } from './lifetime.js'
import { printable, printableJson, printableLines, stdoutText } from './printable.js'
import { closest } from './suggest.js'
import { COMMAND_HELP, COMMAND_USAGE, HELP, MCP_USAGE, USAGE_LINE } from './usage.js'
import { UsageError } from './usage-error.js'

/** Exit codes of docs/CONTRACT.md §9; a stop from outside has its own (lifetime.ts). */
const EXIT_RELAY_ERROR = 1
const EXIT_USAGE = 2


const OPTIONS = {
  prompt: { type: 'string', short: 'p' },
  to: { type: 'string', short: 't' },
  repo: { type: 'string', short: 'r' },
  'context-file': { type: 'string' },
  'context-text': { type: 'string' },
  'include-diff': { type: 'boolean' },
  fit: { type: 'boolean' },
  'no-fit': { type: 'boolean' },
  'max-prompt-bytes': { type: 'string' },
  fallback: { type: 'string' },
  timeout: { type: 'string' },
  'idle-timeout': { type: 'string' },
  model: { type: 'string', short: 'm' },
  sandbox: { type: 'string' },
  review: { type: 'boolean' },
  base: { type: 'string' },
  json: { type: 'boolean' },
  'no-stream': { type: 'boolean' },
  raw: { type: 'boolean' },
  verbose: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'show-envelope': { type: 'boolean' },
  schema: { type: 'string' },
  verdict: { type: 'boolean' },
  session: { type: 'string' },
  'backend-session': { type: 'string' },
  'older-than': { type: 'string' },
  scope: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const

type Flags = ReturnType<typeof parseFlags>['values']

const LONG_OPTIONS = Object.keys(OPTIONS).map((name) => `--${name}`)

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (error) {
    const { code, message } = error as { code?: string; message: string }
    // Node's text goes on about '--'; a typo is far likelier, so name the option meant instead.
    const unknown = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '([^']*)'/.exec(message)?.[1] : undefined
    if (unknown === undefined) throw new UsageError(message)
    const meant = unknown.startsWith('--') ? closest(unknown, LONG_OPTIONS) : undefined
    throw new UsageError(`Unknown option '${unknown}'${meant ? `. Did you mean ${meant}?` : ''}`)
  }
}

/** Shown in a message: a prompt passed without --prompt can be long. */
function shown(argument: string): string {
  return argument.length > 40 ? `${argument.slice(0, 40)}…` : argument
}

/** An unknown command, with the command (or the option: `review` → `--review`) most likely meant. */
function unknownCommand(command: string): UsageError {
  const meant = closest(command, Object.keys(COMMAND_HELP)) ?? closest(command, LONG_OPTIONS)
  const hint = meant ? `. Did you mean ${meant}?` : /\s/.test(command) ? '. To ask something, pass it with --prompt' : ''
  return new UsageError(`unknown command: ${shown(command)}${hint}`)
}

/** The help of `command`, or of the whole CLI. */
function helpOf(command: string | undefined): string {
  if (command === undefined) return HELP
  if (!Object.hasOwn(COMMAND_HELP, command)) throw unknownCommand(command)
  return COMMAND_HELP[command]
}

/** The API, loaded only when a command needs it: help and `--version` never load the addon. */
function api(): typeof import('../index.js') {
  return require('../index.js') as typeof import('../index.js')
}

function version(): string {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
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

/**
 * A decimal number, sign, fraction and exponent allowed: `30`, `2.5`, `.5`, `-1`, `1e3`; not `5m`,
 * `0x10`, `NaN`, `Infinity` or an empty string, which Number() would also take.
 */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/

/**
 * `--timeout`, else PHONE_A_FRIEND_TIMEOUT, as seconds. Anything but a number is a usage error
 * naming the value; a number out of range (0, -1, 1e999) is left to the relay (ERR_INVALID_TIMEOUT).
 */
function timeoutSeconds(flags: Flags): number | undefined {
  const [value, source] = flags.timeout !== undefined ? [flags.timeout, '--timeout'] : [envFlag('PHONE_A_FRIEND_TIMEOUT'), 'PHONE_A_FRIEND_TIMEOUT']
  if (value === undefined) return undefined
  if (!DECIMAL.test(value)) throw new UsageError(`invalid ${source} value ${JSON.stringify(value)}: expected a number of seconds, like 30 or 2.5`)
  return Number(value)
}

/**
 * `--idle-timeout`, else PHONE_A_FRIEND_IDLE_TIMEOUT, else the CLI's default, as seconds; `0`
 * turns the watchdog off. As `--timeout`, anything but a number is a usage error.
 */
function idleTimeoutSeconds(flags: Flags, defaultSeconds: number): number | undefined {
  const [value, source] = flags['idle-timeout'] !== undefined ? [flags['idle-timeout'], '--idle-timeout'] : [envFlag('PHONE_A_FRIEND_IDLE_TIMEOUT'), 'PHONE_A_FRIEND_IDLE_TIMEOUT']
  if (value === undefined) return defaultSeconds
  if (!DECIMAL.test(value)) throw new UsageError(`invalid ${source} value ${JSON.stringify(value)}: expected a number of seconds, like 300, or 0 for none`)
  return Number(value) === 0 ? undefined : Number(value)
}

/** `--max-prompt-bytes`: a whole number of bytes, or a usage error naming the value. */
function maxPromptBytes(flags: Flags): number | undefined {
  const value = flags['max-prompt-bytes']
  if (value === undefined) return undefined
  if (!/^\d+$/.test(value)) throw new UsageError(`invalid --max-prompt-bytes value ${JSON.stringify(value)}: expected a whole number of bytes, like 100000`)
  return Math.min(Number(value), 0xffff_ffff)
}

/**
 * All of stdin, or a rejection with the signal's reason as soon as it aborts. Past the prompt
 * limit, reading stops (ERR_TOO_LARGE): a relay would refuse the prompt anyway, and an endless
 * producer must not fill memory first.
 */
function readStdin(signal: AbortSignal): Promise<string> {
  if (signal.aborted) return Promise.reject(signal.reason)
  const stdin = process.stdin
  // Someone at a terminal may not know the CLI is waiting on them.
  if (stdin.isTTY) process.stderr.write('phone-a-friend: reading the prompt from stdin (end it with Ctrl-D, cancel with Ctrl-C)\n')
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let bytes = 0
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk)
      bytes += chunk.length
      if (bytes <= MAX_PROMPT_BYTES) return
      stop()
      const hint = 'Shorten it: name the files in the prompt for the backend to read in the repository, and send only what it cannot read there'
      reject(new RelayError(`Prompt on stdin is too large (over the limit of ${MAX_PROMPT_BYTES} bytes)`, 'ERR_TOO_LARGE', { hint }))
    }
    const onEnd = (): void => {
      settle()
      resolve(Buffer.concat(chunks).toString('utf8'))
    }
    const onError = (error: Error): void => {
      settle()
      reject(error)
    }
    const onAbort = (): void => {
      stop()
      reject(signal.reason)
    }
    const settle = (): void => {
      stdin.off('data', onData).off('end', onEnd).off('error', onError)
      signal.removeEventListener('abort', onAbort)
    }
    const stop = (): void => {
      settle()
      stdin.destroy() // nothing more is read, and an open pipe no longer holds the process
    }
    stdin.on('data', onData).on('end', onEnd).on('error', onError)
    signal.addEventListener('abort', onAbort)
  })
}

interface Request {
  review: boolean
  options: RelayOptions & ReviewRelayOptions
  /** `--to a,b`: the backends to ask at once (docs/CONTRACT.md §15); undefined for one. */
  backends?: string[]
}

/** The backends a `--to` (or PHONE_A_FRIEND_BACKEND) of comma-separated names asks, else undefined. */
function severalBackends(to: string | undefined, review: boolean): string[] | undefined {
  if (to === undefined || !to.includes(',')) return undefined
  const names = to.split(',').map((name) => name.trim())
  if (names.some((name) => name === '')) throw new UsageError(`invalid --to value ${JSON.stringify(to)}: expected backend names separated by commas, like codex,gemini`)
  if (review) throw new UsageError('--review asks one backend: name one with --to')
  return names
}

/** Largest schema file the CLI reads (a schema is a few kilobytes; the prompt limit is 500,000 bytes). */
const MAX_SCHEMA_FILE_BYTES = 1024 * 1024

/** `--schema`: JSON given inline (it starts with `{` or is `true`/`false`), else a file holding it. */
async function schemaOf(flags: Flags): Promise<string | undefined> {
  const value = flags.schema
  if (value === undefined) return undefined
  if (flags.verdict) throw new UsageError('--verdict has its own schema: do not combine it with --schema')
  const inline = value.trim()
  if (inline.startsWith('{') || inline === 'true' || inline === 'false') return inline
  try {
    return await readSchemaFile(value)
  } catch (error) {
    if (error instanceof UsageError) throw error
    throw new UsageError(`--schema ${shown(value)}: neither JSON nor a readable file (${(error as Error).message})`)
  }
}

/**
 * A schema file's text, at most MAX_SCHEMA_FILE_BYTES of it. Only a regular file is opened: opening
 * a FIFO waits for a writer in a libuv thread that no signal can free, and a device's size says
 * nothing of what it yields. O_NONBLOCK and a second look at the opened file cover a path swapped
 * in between.
 */
async function readSchemaFile(path: string): Promise<string> {
  const { constants, promises: fs } = await import('node:fs')
  const notRegular = (): UsageError => new UsageError(`--schema ${shown(path)}: not a regular file`)
  if (!(await fs.stat(path)).isFile()) throw notRegular()
  const file = await fs.open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    if (!(await file.stat()).isFile()) throw notRegular()
    const buffer = Buffer.alloc(MAX_SCHEMA_FILE_BYTES + 1)
    let length = 0
    for (;;) {
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, null)
      if (bytesRead === 0) break
      length += bytesRead
      if (length > MAX_SCHEMA_FILE_BYTES) throw new UsageError(`--schema file ${path} is too large (over the limit of ${MAX_SCHEMA_FILE_BYTES} bytes)`)
    }
    return buffer.toString('utf8', 0, length)
  } finally {
    await file.close()
  }
}

/** Flags a relay or review would not use: refused rather than dropped without a word. */
function refuseIgnoredFlags(flags: Flags, review: boolean): void {
  if (flags['older-than'] !== undefined) throw new UsageError('--older-than is for sessions prune')
  if (flags.scope !== undefined) throw new UsageError('--scope is for install and uninstall')
  if (flags['show-envelope'] && !flags['dry-run']) throw new UsageError('--show-envelope is for --dry-run')
  if (flags['backend-session'] !== undefined && flags.session === undefined) throw new UsageError('--backend-session needs --session: the label to keep it under')
  if (review && flags.session !== undefined) throw new UsageError('a review (--review, --base, --verdict) takes no --session')
  if (flags.fit && flags['no-fit']) throw new UsageError('--fit and --no-fit: give one')
  if (review && flags.fallback !== undefined) throw new UsageError('a review (--review, --base, --verdict) takes no --fallback')
}

async function buildRequest(flags: Flags, signal: AbortSignal): Promise<Request> {
  const review = Boolean(flags.review || flags.base !== undefined || flags.verdict)
  // Usage first, so a bad value does not wait on stdin.
  if (flags.prompt === undefined && !review) throw new UsageError('missing --prompt')
  refuseIgnoredFlags(flags, review)
  const timeout = timeoutSeconds(flags)
  const idle = idleTimeoutSeconds(flags, DEFAULT_IDLE_TIMEOUT_SECONDS)
  const promptBytes = maxPromptBytes(flags)
  const schema = await schemaOf(flags)
  const backend = flags.to ?? envFlag(BACKEND_ENV_VAR)
  const backends = severalBackends(backend, review)
  if (backends !== undefined && flags.fallback !== undefined) throw new UsageError('several --to backends take no --fallback: each of them is asked already')
  const prompt = flags.prompt === '-' ? await readStdin(signal) : flags.prompt
  const options: RelayOptions & ReviewRelayOptions = {
    prompt: prompt as string,
    repoPath: flags.repo ?? process.cwd(),
    backend: backends === undefined ? backend : undefined,
    contextFile: flags['context-file'],
    contextText: flags['context-text'],
    includeDiff: flags['include-diff'] ?? truthy(envFlag('PHONE_A_FRIEND_INCLUDE_DIFF')),
    // On unless --no-fit: a diff over its limit is fitted, and the friend told what it did not see.
    fit: !flags['no-fit'],
    maxPromptBytes: promptBytes,
    fallback: flags.fallback === undefined ? undefined : flags.fallback.split(',').map((name) => name.trim()).filter((name) => name !== ''),
    timeoutSeconds: timeout,
    idleTimeoutSeconds: idle,
    model: flags.model,
    sandbox: (flags.sandbox ?? envFlag('PHONE_A_FRIEND_SANDBOX')) as SandboxMode | undefined,
    base: flags.base ?? (review ? envFlag('PHONE_A_FRIEND_REVIEW_BASE') : undefined),
    schema,
    verdict: flags.verdict,
    session: flags.session,
    backendSession: flags['backend-session'],
    signal,
    // A warning may carry a label, an id or a path from the store.
    onWarning: (message) => void process.stderr.write(`${printableLines(message)}\n`),
  }
  if (review && prompt === undefined) delete (options as Partial<RelayOptions>).prompt
  return { review, options, backends }
}

/** `{ code, message }` of any failure. */
function codedError(error: unknown): { code: string; message: string; backendOutput?: string; reason?: string; retryAfterSeconds?: number; partialAnswer?: string; hint?: string } {
  const { code, message, backendOutput, reason, retryAfterSeconds, partialAnswer, hint } = error as { code?: unknown; message?: unknown; backendOutput?: unknown; reason?: unknown; retryAfterSeconds?: unknown; partialAnswer?: unknown; hint?: unknown }
  return {
    code: typeof code === 'string' ? code : 'ERR_UNEXPECTED',
    message: typeof message === 'string' ? message : String(error),
    // What a CLI backend said last, why it failed, what it had answered (docs/ERRORS.md), for scripts reading --json.
    ...(typeof backendOutput === 'string' ? { backendOutput } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(typeof retryAfterSeconds === 'number' ? { retryAfterSeconds } : {}),
    ...(typeof partialAnswer === 'string' ? { partialAnswer } : {}),
    ...(typeof hint === 'string' ? { hint } : {}),
  }
}

/** A failure's lines on stderr: `Error [<code>] (<backend>): <message>`, then its `Hint:` when it has one. */
function errorLines(coded: { code: string; message: string; hint?: string }, backend: string | undefined): string {
  const hint = coded.hint === undefined ? '' : `Hint: ${printableLines(coded.hint)}\n`
  return `Error [${printable(coded.code)}]${backend === undefined ? '' : ` (${printable(backend)})`}: ${printableLines(coded.message)}\n${hint}`
}

/**
 * A failure on stderr as `Error [<code>]: <message>`, with `(<backend>)` after the code when a
 * backend failed, as `--to a,b` prints each; `--json`: `{ ok: false, backend?, error }`.
 */
function printError(error: unknown, json: boolean): void {
  const coded = codedError(error)
  const { backend } = error as { backend?: unknown }
  const who = typeof backend === 'string' ? backend : undefined
  if (json) process.stdout.write(`${printableJson({ ok: false, ...(who === undefined ? {} : { backend: who }), error: coded })}\n`)
  else process.stderr.write(errorLines(coded, who))
}

/**
 * `--to a,b` (docs/CONTRACT.md §15): asks every backend at once. Each answer goes to stdout under a
 * header (`=== codex ===`), in the order named; each failure to stderr as `Error [<code>]
 * (<backend>): <message>`; `--json` prints the array of results. Exit 1 when any backend failed.
 */
async function relayToSeveral(library: typeof import('../index.js'), request: Request & { backends: string[] }, json: boolean, shownText: (text: string) => string, stopSpinner: () => void): Promise<number> {
  const { backend: _one, ...options } = request.options
  // Given as the flags are, for relayAll() to refuse what it takes not (a session: ERR_SESSION).
  const results = await library.relayAll({ ...options, backends: request.backends } as RelayAllOptions)
  stopSpinner()
  if (json) {
    const shown = results.map((result) => (result.ok ? result : { backend: result.backend, ok: false, error: codedError(result.error) }))
    process.stdout.write(`${printableJson(shown)}\n`)
  } else {
    const answers = results.flatMap((result) => (result.ok ? [`=== ${result.backend} ===\n${result.answer}\n`] : []))
    process.stdout.write(shownText(answers.join('\n')))
    for (const result of results) {
      if (!result.ok) {
        process.stderr.write(errorLines(codedError(result.error), result.backend))
      }
    }
  }
  return results.every((result) => result.ok) ? 0 : EXIT_RELAY_ERROR
}

/** The failures of check 4, which relayAll() reports per backend; any other fails the whole call. */
const BACKEND_CHECKS = new Set(['ERR_UNSUPPORTED_BACKEND', 'ERR_INVALID_SANDBOX'])

/**
 * `--to a,b --dry-run`: one dry run per backend (relayAll() makes none), each printed under a
 * header in the order named; `--json` prints `[{ backend, ok: true, dryRun } | { backend, ok: false,
 * error }]`. As with relayAll(), a backend that fails check 4 fails alone, any other failure (the
 * same for every backend) fails the whole call, and a warning is printed once.
 */
async function dryRunSeveral(library: typeof import('../index.js'), request: Request & { backends: string[] }, json: boolean, showEnvelope: boolean, shownText: (text: string) => string): Promise<number> {
  if (request.options.session !== undefined || request.options.backendSession !== undefined) {
    throw new RelayError('relayAll takes no session: a session belongs to one backend', 'ERR_SESSION')
  }
  const warned = new Set<string>()
  const onWarning = (message: string): void => {
    if (warned.has(message)) return
    warned.add(message)
    request.options.onWarning?.(message)
  }
  type Outcome = { backend: string; ok: true; dryRun: import('../index.js').DryRun } | { backend: string; ok: false; error: { code: string; message: string } }
  const outcomes: Outcome[] = []
  for (const backend of request.backends) {
    try {
      outcomes.push({ backend, ok: true, dryRun: await library.relay({ ...request.options, backend, onWarning, dryRun: true }) })
    } catch (error) {
      const coded = codedError(error)
      if (!BACKEND_CHECKS.has(coded.code)) throw error
      outcomes.push({ backend, ok: false, error: coded })
    }
  }
  if (json) {
    process.stdout.write(`${printableJson(outcomes)}\n`)
  } else {
    const { formatDryRun } = await import('./dry-run-printer.js')
    process.stdout.write(shownText(outcomes.flatMap((outcome) => (outcome.ok ? [`=== ${outcome.backend} ===\n${formatDryRun(outcome.dryRun, { showEnvelope })}`] : [])).join('\n')))
    for (const outcome of outcomes) {
      if (!outcome.ok) process.stderr.write(errorLines(outcome.error, outcome.backend))
    }
  }
  return outcomes.every((outcome) => outcome.ok) ? 0 : EXIT_RELAY_ERROR
}

/** `stop` made safe to call more than once. */
function once(stop: () => void): () => void {
  let done = false
  return () => {
    if (done) return
    done = true
    stop()
  }
}

/** Resolves once `stream` wants more ('drain'), is gone, or the run is stopped. */
function drained(stream: NodeJS.WriteStream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done).off('close', done)
      signal.removeEventListener('abort', done)
      resolve()
    }
    if (signal.aborted) return resolve()
    stream.on('drain', done).on('close', done)
    signal.addEventListener('abort', done)
  })
}

/**
 * Runs the request, printing the answer as it comes (docs/CONTRACT.md §10); resolves with the final
 * answer. A relay goes through relayStreamDetailed(), so a reader slower than the backend holds the backend
 * back (stdout is asynchronous on a pipe: without waiting for 'drain', Node would buffer whatever
 * the backend sends). A review has no generator in the API, only onChunk.
 */
async function streamAnswer(library: typeof import('../index.js'), request: Request, printer: AnswerPrinter, signal: AbortSignal): Promise<RelayDetails> {
  if (request.review) return library.reviewRelayDetailed({ ...request.options, onChunk: (text) => void printer.write(text) })
  const stream = library.relayStreamDetailed(request.options)
  try {
    for (;;) {
      const step = await stream.next()
      if (step.done) return step.value
      if (!printer.write(step.value)) await drained(process.stdout, signal)
    }
  } finally {
    await stream.return(undefined as never) // left early (a throw here): the backend is stopped; else nothing
  }
}

/**
 * What the backend is doing, while the CLI waits (docs/CLI.md): the spinner's text on a terminal;
 * with `--verbose` off one, a line on stderr for each change of phase.
 */
function watchProgress(request: Request, asked: string, { verbose, spinning }: { verbose: boolean; spinning: boolean }): { label: () => string } {
  let label = `asking ${asked}…`
  let shown = ''
  const lines = verbose && !spinning
  if (!lines && !spinning) return { label: () => label }
  request.options.onProgress = (progress) => {
    // The spinner counts the seconds itself: the phase alone, once the backend does something.
    const doing = progress.phase === 'tool' ? `running ${progress.tool ?? 'a tool'}` : progress.phase
    const working = progress.phase === 'thinking' || progress.phase === 'tool' || progress.phase === 'writing'
    label = printable(`asking ${progress.backend ?? asked}…${working ? ` ${doing}` : ''}`)
    const phase = `${progress.backend ?? ''} ${progress.phase} ${progress.tool ?? ''}`
    if (lines && phase !== shown) process.stderr.write(`[phone-a-friend] ${printable(progress.message)}\n`)
    shown = phase
  }
  return { label: () => label }
}

/** `--verbose`: who answered, in how long, at what cost, on stderr after the answer. */
async function printSummary(details: RelayDetails): Promise<void> {
  const { formatSummary } = await import('./summary.js')
  process.stderr.write(`${printableLines(formatSummary(details))}\n`)
}

/** `--verdict`'s exit codes: 0 ship, 4 iterate, 3 abstain (1 stays "the relay failed"). */
function verdictExitCode(verdict: 'ship' | 'iterate' | 'abstain'): number {
  return { ship: 0, iterate: 4, abstain: 3 }[verdict]
}

async function runRelay(flags: Flags, life: Lifetime): Promise<number> {
  const { spinnerShows, startSpinner } = await import('./spinner.js')
  let stopSpinner = (): void => undefined
  let printer: AnswerPrinter | undefined
  /** The one backend asked, once the addon is loaded. */
  let backend: string | undefined
  try {
    const request = await buildRequest(flags, life.signal)
    // The addon only now: a usage error never needs it.
    const library = api()
    const shownText = stdoutText(process.stdout.isTTY === true, Boolean(flags.raw))
    backend = request.options.backend ?? library.DEFAULT_BACKEND
    if (flags['dry-run'] && request.backends !== undefined) {
      return await dryRunSeveral(library, { ...request, backends: request.backends }, Boolean(flags.json), Boolean(flags['show-envelope']), shownText)
    }
    if (flags['dry-run']) {
      const options = { ...request.options, dryRun: true } as const
      const dryRun = request.review ? await library.reviewRelay(options) : await library.relay(options)
      const { formatDryRun } = await import('./dry-run-printer.js')
      process.stdout.write(flags.json ? `${printableJson({ ok: true, dryRun })}\n` : shownText(formatDryRun(dryRun, { showEnvelope: Boolean(flags['show-envelope']) })))
      return 0
    }
    if (request.backends !== undefined) {
      stopSpinner = once(startSpinner(`asking ${request.backends.join(', ')}…`))
      return await relayToSeveral(library, { ...request, backends: request.backends }, Boolean(flags.json), shownText, stopSpinner)
    }
    const watching = watchProgress(request, backend, { verbose: Boolean(flags.verbose), spinning: spinnerShows() })
    stopSpinner = once(startSpinner(watching.label))
    // JSON answers (--schema, --verdict) are all or nothing: never streamed.
    if (flags.json || flags['no-stream'] || request.options.schema !== undefined || flags.verdict) {
      const details = request.review ? await library.reviewRelayDetailed(request.options) : await library.relayDetailed(request.options)
      const { answer, backend: answered, model, usage, coverage, attempts, durationMs } = details
      stopSpinner()
      process.stdout.write(flags.json ? `${printableJson({ ok: true, answer, output: answer, backend: answered, model, usage, coverage, attempts, durationMs: Math.round(durationMs) })}\n` : `${shownText(answer)}\n`)
      if (flags.verbose) await printSummary(details)
      return flags.verdict ? verdictExitCode(library.parseVerdict(answer).verdict) : 0
    }
    // The spinner shares the terminal with stdout: it goes before the first byte of the answer.
    const stdout = { write: (text: string) => process.stdout.write(shownText(text)), get destroyed() { return process.stdout.destroyed } }
    printer = new AnswerPrinter(stdout, stopSpinner, library.MAX_OUTPUT_BYTES)
    const details = await streamAnswer(library, request, printer, life.signal)
    stopSpinner()
    printer.finish(details.answer)
    if (flags.verbose) await printSummary(details)
    return 0
  } catch (error) {
    stopSpinner()
    if (error instanceof UsageError) throw error
    // Part of the answer may be on stdout already: it stays there, its line ended.
    printer?.abandon()
    if (life.stopped) return life.report(Boolean(flags.json))
    printError(error, Boolean(flags.json))
    return EXIT_RELAY_ERROR
  }
}

async function runDoctor(flags: Flags, life: Lifetime): Promise<number> {
  let report: import('./doctor.js').DoctorReport
  let formatDoctor: typeof import('./doctor.js').formatDoctor
  try {
    formatDoctor = (await import('./doctor.js')).formatDoctor
    report = await api().doctor({ model: flags.model, signal: life.signal }) // loads the addon, which may fail to load
  } catch (error) {
    if (life.stopped) return life.report(Boolean(flags.json))
    printError(error, Boolean(flags.json))
    return EXIT_RELAY_ERROR
  }
  if (life.stopped) return life.report(Boolean(flags.json))
  const { doctorHosts, formatHosts } = await import('./doctor-hosts.js')
  const hosts = doctorHosts({ env: process.env, cwd: process.cwd() })
  // What CLIs and the Ollama server said is in the report, and config files hold what anyone
  // wrote: never raw to a terminal, nor in JSON.
  process.stdout.write(flags.json ? `${printableJson({ ...report, hosts })}\n` : printableLines(`${formatDoctor(report)}${formatHosts(hosts)}`))
  return report.backends.some((backend) => backend.ready) ? 0 : EXIT_RELAY_ERROR
}

/** Flags `install` and `uninstall` take; any other is refused rather than ignored. */
const INSTALL_FLAGS = new Set(['scope', 'dry-run', 'json'])

/** `install <host>` / `uninstall <host>` (docs/CLI.md): a host's failure is printed as a relay's error, exit 1. */
async function runInstallCommand(action: 'install' | 'uninstall', flags: Flags, args: string[]): Promise<number> {
  const other = Object.keys(flags).find((name) => !INSTALL_FLAGS.has(name))
  if (other !== undefined) throw new UsageError(`--${other} is not an option of ${action}`)
  const { runInstall } = await import('./install.js')
  const origin = { binPath: join(__dirname, '..', '..', 'bin', 'phone-a-friend.js'), nodePath: process.execPath, version: version() }
  try {
    return await runInstall({ action, args, scope: flags.scope, dryRun: Boolean(flags['dry-run']), json: Boolean(flags.json), origin, place: { env: process.env, cwd: process.cwd() } })
  } catch (error) {
    if (error instanceof UsageError) throw error
    printError(error, Boolean(flags.json))
    return EXIT_RELAY_ERROR
  }
}

const SESSIONS_ACTIONS = ['list', 'delete', 'prune']

/** `sessions list | delete <label> | prune --older-than <days>`: the session store. */
async function runSessions(flags: Flags, args: string[]): Promise<number> {
  const [action, ...labels] = args
  const json = Boolean(flags.json)
  // Labels and ids come from a file anyone with the account can edit: nothing of them goes raw to a terminal.
  const print = (value: unknown, text: string): void => void process.stdout.write(json ? `${printableJson(value)}\n` : text)
  if (action === 'list' || action === undefined) {
    if (labels.length > 0) throw new UsageError(`unexpected argument: ${shown(labels[0])}`)
    const sessions = await api().listSessions()
    // A label whose next turn starts anew says so (the backend reported no session id).
    const lines = sessions.map((s) => `${[s.label, s.backend, s.repoPath, s.lastUsedAt, ...(s.backendSessionId ? [s.backendSessionId] : []), ...(s.resumable ? [] : ['(nothing to continue)'])].map(printable).join('\t')}\n`)
    print(sessions, lines.join('') || 'no sessions\n')
    return 0
  }
  if (action === 'delete') {
    if (labels.length !== 1) throw new UsageError('sessions delete takes one label')
    const deleted = await api().deleteSession(labels[0])
    print({ deleted }, deleted ? `deleted ${printable(labels[0])}\n` : `no session ${printable(labels[0])}\n`)
    return deleted ? 0 : EXIT_RELAY_ERROR
  }
  if (action === 'prune') {
    if (labels.length > 0) throw new UsageError(`unexpected argument: ${shown(labels[0])}`)
    const days = flags['older-than']
    if (days === undefined || !DECIMAL.test(days)) throw new UsageError('sessions prune needs --older-than <days>, a number like 30 or 0.5')
    const removed = await api().pruneSessions(Number(days))
    print({ removed }, removed.map((label) => `pruned ${printable(label)}\n`).join('') || 'nothing to prune\n')
    return 0
  }
  const meant = closest(action, SESSIONS_ACTIONS)
  throw new UsageError(`unknown sessions action: ${shown(action)} (list, delete or prune)${meant ? `. Did you mean ${meant}?` : ''}`)
}

async function dispatch(argv: string[], life: Lifetime): Promise<number> {
  // Nothing asked at all: someone finding out what the CLI does.
  if (argv.length === 0) {
    process.stdout.write(HELP)
    return 0
  }
  const { values: flags, positionals } = parseFlags(argv)
  const [command, ...rest] = positionals
  if (command === 'help') {
    if (rest.length > 1) throw new UsageError(`unexpected argument: ${shown(rest[1])}`)
    process.stdout.write(helpOf(rest[0]))
    return 0
  }
  if (flags.help) {
    process.stdout.write(helpOf(command))
    return 0
  }
  if (flags.version) {
    process.stdout.write(`${version()}\n`)
    return 0
  }
  if (command === 'sessions') {
    try {
      return await runSessions(flags, rest)
    } catch (error) {
      if (error instanceof UsageError) throw error
      printError(error, Boolean(flags.json))
      return EXIT_RELAY_ERROR
    }
  }
  if (command === 'install' || command === 'uninstall') return runInstallCommand(command, flags, rest)
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${shown(rest[0])}`)
  if (command === 'doctor') return runDoctor(flags, life)
  if (command === 'mcp') throw new UsageError('mcp takes no options')
  if (command === undefined || command === 'relay') return runRelay(flags, life)
  throw unknownCommand(command)
}

/** `--json` among the options, even when the rest of them could not be parsed. */
function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--')
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json')
}

/**
 * The command `argv` runs (its first positional), even when its options could not be parsed;
 * undefined when it names none.
 */
function commandOf(argv: string[]): string | undefined {
  const { tokens } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: false, tokens: true })
  return tokens.find((token) => token.kind === 'positional')?.value
}

function printUsageError(error: UsageError, json: boolean, argv: string[]): void {
  if (json) return void process.stdout.write(`${JSON.stringify({ ok: false, error: { code: 'ERR_USAGE', message: error.message } })}\n`)
  const command = commandOf(argv)
  const usage = command !== undefined && Object.hasOwn(COMMAND_USAGE, command) ? COMMAND_USAGE[command] : USAGE_LINE
  process.stderr.write(`phone-a-friend: ${error.message}\n${usage}\n`)
}

const MCP_ON_A_TERMINAL = `phone-a-friend mcp: speaks MCP over stdin/stdout, for an MCP client to start; Ctrl-D ends it.
Add it to one: npx -p @phone-a-friend/relay phone-a-friend install claude (or codex, gemini, opencode; by hand: phone-a-friend mcp --help)
`

/** The server's failure when stdin closed before the client's `initialize` request. */
const CLOSED_BEFORE_INITIALIZE = /^MCP initialization failed: connection closed/

/**
 * `phone-a-friend mcp` (docs/CONTRACT.md §16): the MCP server on stdin and stdout, until the client
 * closes stdin. It runs before anything else of the CLI: the server must own fd 0 and 1, so nothing
 * here may touch `process.stdin` or `process.stdout` (not even to listen for their errors).
 */
async function runMcp(argv: string[]): Promise<number> {
  const [, ...rest] = argv
  if (rest.length > 0) {
    process.stderr.write(`phone-a-friend: mcp takes no arguments: ${shown(rest.join(' '))}\n${MCP_USAGE}\n`)
    return EXIT_USAGE
  }
  // Someone who typed it at a terminal would otherwise wait on a server that says nothing.
  // isatty(0), not process.stdin: fd 0 stays the server's alone.
  // Loaded here, not at the top: node:tty costs every other command about 3 ms of start-up.
  const { isatty } = require('node:tty') as typeof import('node:tty')
  const onATerminal = isatty(0)
  if (onATerminal) process.stderr.write(MCP_ON_A_TERMINAL)
  try {
    const { binding, scope } = (require('../internal/core.js') as typeof import('../internal/core.js')).native
    await binding.serveMcp(scope(), process.cwd())
    return 0
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    // Ctrl-D at the terminal before any request: the way out the note above gives, not a failure.
    if (onATerminal && CLOSED_BEFORE_INITIALIZE.test(message)) return 0
    process.stderr.write(`phone-a-friend mcp: ${message}\n`)
    return EXIT_RELAY_ERROR
  }
}

/** Runs the CLI; sets `process.exitCode` rather than exiting, so no output is cut short. */
export async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'mcp' && !argv.some((arg) => arg === '--help' || arg === '-h')) {
    process.exitCode = await runMcp(argv)
    return
  }
  const life = new Lifetime()
  let code: number
  try {
    code = await dispatch(argv, life)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    printUsageError(error, wantsJson(argv), argv)
    code = EXIT_USAGE
  } finally {
    life.close()
  }
  // A stop the command did not get to see (a reader that left while it printed) still counts.
  process.exitCode = life.stopped ? life.report(wantsJson(argv)) : code
}
