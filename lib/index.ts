/**
 * @phone-a-friend/relay: ask another coding agent (codex, gemini, claude, opencode, antigravity, ollama or your own backend)
 * for a second opinion on work in a repository. The work runs off Node's main thread.
 */
import type * as Core from './internal/core.js'
import type {
  GitHelperOptions,
  DryRunRelayOptions,
  RelayAllOptions,
  DryRunReviewOptions,
  MaybeDryRunRelayOptions,
  MaybeDryRunReviewOptions,
  RelayOptions,
  ReviewRelayOptions,
} from './internal/options.js'
import type { RelayAllResult, RelayDetails } from './internal/calls.js'
import type { Backend } from './internal/backends.js'

let loaded: typeof Core | undefined

/**
 * The wrapper's internals, loaded on the first call rather than at import: an import then costs
 * only the error classes and the constants (a few milliseconds less for every process that
 * imports the package, most of which make few calls).
 */
function internals(): typeof Core {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (loaded ??= require('./internal/core.js') as typeof Core)
}

export { RelayError, BackendError, type RelayErrorCode, type RelayErrorOptions, type RelayErrorReason } from './internal/errors.js'
export type { DryRunRelayOptions, DryRunReviewOptions, GitHelperOptions, MaybeDryRunRelayOptions, MaybeDryRunReviewOptions, RelayAllOptions, RelayOptions, ReviewRelayOptions, SandboxMode } from './internal/options.js'
export type { RelayAllResult, RelayAttempt, RelayDetails, RelayUsage } from './internal/calls.js'
export type { RelayProgress } from './internal/call-records.js'
export type { Backend, BackendRunOptions, BackendReviewOptions } from './internal/backends.js'
export type { DryRun, DryRunAction, DryRunCoverage, DryRunDiff } from './internal/dry-run.js'
export type { Verdict, VerdictFinding } from './internal/verdict.js'
export type { BackendReport, DoctorOptions, DoctorReport, SignIn } from './internal/doctor.js'
import type { DoctorOptions, DoctorReport } from './internal/doctor.js'
import type { Verdict } from './internal/verdict.js'
import type { DryRun } from './internal/dry-run.js'
import { invalidArgType } from './internal/errors.js'

export {
  DEFAULT_BACKEND,
  DEFAULT_SANDBOX,
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  MAX_CONTEXT_FILE_BYTES,
  MAX_DIFF_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_PROMPT_BYTES,
  MAX_RELAY_DEPTH,
} from './internal/limits.js'

/**
 * The promise `start` returns, or what it throws as a rejected one: nothing throws synchronously.
 * Not an async wrapper, whose promise would wait on the call's own: two more turns of the
 * microtask queue on every call (BENCHMARKS.md, "The call's own promise").
 */
function rejecting<T>(start: () => Promise<T>): Promise<T> {
  try {
    return start()
  } catch (error) {
    return Promise.reject(error)
  }
}

/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
export function registerBackend(backend: Backend): void {
  internals().backends.registerBackend(backend)
}

/**
 * Relays a prompt (with optional context and git diff) to a backend and resolves with its answer
 * (with `dryRun: true`, a `DryRun` saying what would be sent and run, running nothing).
 * Every failure rejects (bad argument types with a `TypeError`, the rest with a `RelayError`
 * whose `code` says which); nothing throws synchronously.
 */
export function relay(options: DryRunRelayOptions): Promise<DryRun>
export function relay(options: RelayOptions): Promise<string>
export function relay(options: MaybeDryRunRelayOptions): Promise<string | DryRun>
export function relay(options: MaybeDryRunRelayOptions): Promise<string | DryRun> {
  return rejecting(() => internals().calls.relay(internals().options.nativeRelayOptions(options)))
}

/**
 * `relay()`'s answer with what is known about it: the backend and model that answered, what it
 * cost (`usage`), how a fitted diff was fitted (`coverage`), the backends that could not answer
 * before it (`attempts`), the call's warnings and its duration. Not a dry run.
 */
export function relayDetailed(options: RelayOptions): Promise<RelayDetails> {
  return rejecting(() => internals().calls.detailed(detailedOptions(internals().options.nativeRelayOptions(options), 'relayDetailed'), 'relay'))
}

/** `reviewRelay()`'s answer with what is known about it, as `relayDetailed()` gives it. */
export function reviewRelayDetailed(options: ReviewRelayOptions): Promise<RelayDetails> {
  return rejecting(() => internals().calls.detailed(detailedOptions(internals().options.nativeReviewOptions(options), 'reviewRelayDetailed'), 'review'))
}

/** A detailed call's options: an answer is what it details, so not a dry run. */
function detailedOptions<T extends { dryRun: boolean }>(parsed: T, name: string): T {
  if (parsed.dryRun) throw invalidArgType('options.dryRun', `false for ${name}() (a dry run describes the call: relay({ dryRun: true }))`, true)
  return parsed
}

/**
 * `relay()` as an async generator (docs/CONTRACT.md §10): the same checks in the same order (a
 * failed one rejects the first `next()`), then the answer's text as the backend produces it; its
 * return value is the final answer, exactly what `relay()` resolves with. Nothing starts before the
 * first `next()`; `break`, `return()`, `throw()` or the signal abort the run and stop the backend.
 * At most 1 MiB of unread text is held: past that the backend is not read until you catch up.
 */
export async function* relayStream(options: RelayOptions): AsyncGenerator<string, string, undefined> {
  const parsed = internals().options.nativeRelayOptions(options)
  // A dry run has nothing to stream; `relay({ dryRun: true })` describes the call.
  if (parsed.dryRun) throw invalidArgType('options.dryRun', 'false for relayStream() (use relay({ dryRun: true }))', true)
  return yield* internals().calls.relayStream(parsed)
}

/**
 * `relayStream()` whose return value is the answer with what is known about it, as
 * `relayDetailed()` resolves with it (`relayStream()`'s stays the answer alone, as the original's).
 */
export async function* relayStreamDetailed(options: RelayOptions): AsyncGenerator<string, RelayDetails, undefined> {
  const parsed = internals().options.nativeRelayOptions(options)
  if (parsed.dryRun) throw invalidArgType('options.dryRun', 'false for relayStreamDetailed() (use relay({ dryRun: true }))', true)
  return yield* internals().calls.relayStreamDetailed(parsed)
}

/**
 * Asks several backends at once (docs/CONTRACT.md §15): the checks, context, diff and envelope are
 * done once and shared; the backends run concurrently and each settles on its own, so the call
 * takes as long as the slowest one and one failure does not affect the others. Resolves with one
 * result per backend, in the order of `backends`: `{ backend, ok: true, answer }` or
 * `{ backend, ok: false, error }` (a `RelayError`).
 *
 * What depends on the backend fails that backend alone: a name nobody registered
 * (`ERR_UNSUPPORTED_BACKEND`), a sandbox mode it refuses (`ERR_INVALID_SANDBOX`), and whatever
 * happens when it runs. Every other check (prompt, timeout, repository, context, diff, sizes,
 * depth) rejects the whole call with the `RelayError` `relay()` would give, whatever the
 * backends. The signal aborts every backend: the call rejects with an `AbortError`.
 */
export function relayAll(options: RelayAllOptions): Promise<RelayAllResult[]> {
  return rejecting(() => internals().calls.relayAll(internals().options.nativeRelayAllOptions(options)))
}

/**
 * Asks a backend to review the changes between `base` and `HEAD`: its native review when it has
 * one, else the diff in the prompt. Rejects like `relay()`.
 */
export function reviewRelay(options: DryRunReviewOptions): Promise<DryRun>
export function reviewRelay(options: ReviewRelayOptions): Promise<string>
export function reviewRelay(options: MaybeDryRunReviewOptions): Promise<string | DryRun>
export function reviewRelay(options: MaybeDryRunReviewOptions): Promise<string | DryRun> {
  return rejecting(() => internals().calls.review(internals().options.nativeReviewOptions(options)))
}

/** A session in the store (docs/CONTRACT.md §12). */
export interface SessionInfo {
  /** Your label. */
  label: string
  backend: string
  repoPath: string
  /** The backend's own session id, for backends that keep sessions. */
  backendSessionId: string | null
  /** Turns kept for a replay (Ollama, a `transcript-replay` JS backend). */
  turns: number
  /**
   * Whether its next turn continues the conversation: `false` when the backend reported no
   * session id of its own and no turns were kept (that turn then starts anew, with a warning).
   */
  resumable: boolean
  /** RFC 3339 times. */
  createdAt: string
  lastUsedAt: string
}

/** Every session in the store (`PHONE_A_FRIEND_HOME`, else `$XDG_CONFIG_HOME/phone-a-friend`, else `~/.config/phone-a-friend`). */
export async function listSessions(): Promise<SessionInfo[]> {
  const { calls, native } = internals()
  const sessions = await calls.sessionCall((caller) => native.binding.listSessions(native.scope(), caller))
  return sessions.map((s) => ({ ...s, backendSessionId: s.backendSessionId ?? null }))
}

/** Removes a session from the store; whether there was one. */
export async function deleteSession(label: string): Promise<boolean> {
  const name = internals().options.stringArgument(label, 'label')
  const { calls, native } = internals()
  return calls.sessionCall((caller) => native.binding.deleteSession(native.scope(), name, caller))
}

/** Removes the sessions last used more than `olderThanDays` days ago; their labels. */
export async function pruneSessions(olderThanDays: number): Promise<string[]> {
  if (typeof olderThanDays !== 'number') throw invalidArgType('olderThanDays', 'of type number', olderThanDays)
  const { calls, native } = internals()
  return calls.sessionCall((caller) => native.binding.pruneSessions(native.scope(), olderThanDays, caller))
}

/**
 * Reads a verdict envelope (the text `reviewRelay({ verdict: true })` resolves with, or any model's
 * answer, also inside a ```json fence) and checks it as upstream (the phone-a-friend v4.1.1 CLI)
 * does (docs/CONTRACT.md §13): the shape, and a verdict consistent with the findings (a blocker or
 * important finding requires `iterate`; `abstain` only with no findings). Throws a `RelayError`
 * with `ERR_SCHEMA` saying what is wrong.
 */
export function parseVerdict(text: string): Verdict {
  const raw = internals().options.stringArgument(text, 'text')
  return JSON.parse(internals().calls.valueOf(internals().native.binding.parseVerdict(raw))) as Verdict
}

/**
 * The first of `main`, `master` that the repository has, else `'HEAD~1'` (also when git fails or
 * takes longer than `options.timeoutSeconds`, default 30). Synchronous: it holds the JS thread for
 * at most that long, and answers `'HEAD~1'` at once when a file git reads as it starts (`.git`,
 * `HEAD`, `config`, `commondir`, `index`, `packed-refs`) is not a regular file, such as a FIFO.
 */
export function detectDefaultBranch(repoPath: string, options?: GitHelperOptions): string {
  const repo = internals().options.stringArgument(repoPath, 'repoPath')
  const timeoutSeconds = internals().options.gitHelperTimeout(options)
  return internals().calls.valueOf(internals().native.binding.detectDefaultBranch(repo, timeoutSeconds))
}

/**
 * `git diff <base>...HEAD`, trimmed. Synchronous; throws a `RelayError` (`ERR_GIT_DIFF`, also when
 * git takes longer than `options.timeoutSeconds`, default 30, or at once when a file git reads as
 * it starts is not a regular file, as for `detectDefaultBranch`; `ERR_TOO_LARGE`).
 */
export function gitDiffBase(repoPath: string, base: string, options?: GitHelperOptions): string {
  const repo = internals().options.stringArgument(repoPath, 'repoPath')
  const from = internals().options.stringArgument(base, 'base')
  const timeoutSeconds = internals().options.gitHelperTimeout(options)
  return internals().calls.valueOf(internals().native.binding.gitDiffBase(repo, from, timeoutSeconds))
}

/**
 * Which built-in backends can answer, as `phone-a-friend doctor --json` and the MCP `backends`
 * tool say: each CLI's version (and whether it is outside the version range this package was
 * verified with), whether it is signed in as far as a cheap offline check tells, and whether the
 * Ollama server answers. At most 30 s; `signal` stops the checks' processes.
 */
export async function doctor(options?: DoctorOptions): Promise<DoctorReport> {
  return internals().doctor.doctor(options)
}

/** Whether the `codex`, `gemini`, `ollama`, `claude`, `opencode` and `antigravity` CLIs are on this process's PATH. Synchronous.
 * Only whether each is installed (`found` in `doctor()`, the same lookup): `doctor()` says whether it can answer. */
export function checkBackends(): Record<string, boolean> {
  return { ...internals().native.binding.checkBackends() }
}

/** Drops every backend registered from JS and restores the six built-ins. */
export function _resetRegistry(): void {
  internals().backends.resetRegistry()
}
