import type { GitHelperOptions, DryRunRelayOptions, RelayAllOptions, DryRunReviewOptions, RelayOptions, ReviewRelayOptions } from './internal/options.js';
import type { RelayAllResult } from './internal/calls.js';
import type { Backend } from './internal/backends.js';
export { RelayError, BackendError, type RelayErrorCode, type RelayErrorOptions } from './internal/errors.js';
export type { DryRunRelayOptions, DryRunReviewOptions, GitHelperOptions, RelayAllOptions, RelayOptions, ReviewRelayOptions, SandboxMode } from './internal/options.js';
export type { RelayAllResult } from './internal/calls.js';
export type { Backend, BackendRunOptions, BackendReviewOptions } from './internal/backends.js';
export type { DryRun, DryRunAction } from './internal/dry-run.js';
export type { Verdict, VerdictFinding } from './internal/verdict.js';
import type { Verdict } from './internal/verdict.js';
import type { DryRun } from './internal/dry-run.js';
export { DEFAULT_BACKEND, DEFAULT_SANDBOX, DEFAULT_TIMEOUT_SECONDS, MAX_CONTEXT_FILE_BYTES, MAX_DIFF_BYTES, MAX_OUTPUT_BYTES, MAX_PROMPT_BYTES, MAX_RELAY_DEPTH, } from './internal/limits.js';
/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
export declare function registerBackend(backend: Backend): void;
/**
 * Relays a prompt (with optional context and git diff) to a backend and resolves with its answer
 * (with `dryRun: true`, a `DryRun` saying what would be sent and run, running nothing).
 * Every failure rejects (bad argument types with a `TypeError`, the rest with a `RelayError`
 * whose `code` says which); nothing throws synchronously.
 */
export declare function relay(options: DryRunRelayOptions): Promise<DryRun>;
export declare function relay(options: RelayOptions): Promise<string>;
/**
 * `relay()` as an async generator (docs/CONTRACT.md §10): the same checks in the same order (a
 * failed one rejects the first `next()`), then the answer's text as the backend produces it; its
 * return value is the final answer, exactly what `relay()` resolves with. Nothing starts before the
 * first `next()`; `break`, `return()`, `throw()` or the signal abort the run and stop the backend.
 * At most 1 MiB of unread text is held: past that the backend is not read until you catch up.
 */
export declare function relayStream(options: RelayOptions): AsyncGenerator<string, string, undefined>;
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
export declare function relayAll(options: RelayAllOptions): Promise<RelayAllResult[]>;
/**
 * Asks a backend to review the changes between `base` and `HEAD`: its native review when it has
 * one, else the diff in the prompt. Rejects like `relay()`.
 */
export declare function reviewRelay(options: DryRunReviewOptions): Promise<DryRun>;
export declare function reviewRelay(options: ReviewRelayOptions): Promise<string>;
/** A session in the store (docs/CONTRACT.md §12). */
export interface SessionInfo {
    /** Your label. */
    label: string;
    backend: string;
    repoPath: string;
    /** The backend's own session id, for backends that keep sessions. */
    backendSessionId: string | null;
    /** Turns kept for a replay (Ollama, a `transcript-replay` JS backend). */
    turns: number;
    /** RFC 3339 times. */
    createdAt: string;
    lastUsedAt: string;
}
/** Every session in the store (`PHONE_A_FRIEND_HOME`, else `$XDG_CONFIG_HOME/phone-a-friend`, else `~/.config/phone-a-friend`). */
export declare function listSessions(): Promise<SessionInfo[]>;
/** Removes a session from the store; whether there was one. */
export declare function deleteSession(label: string): Promise<boolean>;
/** Removes the sessions last used more than `olderThanDays` days ago; their labels. */
export declare function pruneSessions(olderThanDays: number): Promise<string[]>;
/**
 * Reads a verdict envelope (the text `reviewRelay({ verdict: true })` resolves with, or any model's
 * answer, also inside a ```json fence) and checks it as upstream (the phone-a-friend v4.1.1 CLI)
 * does (docs/CONTRACT.md §13): the shape, and a verdict consistent with the findings (a blocker or
 * important finding requires `iterate`; `abstain` only with no findings). Throws a `RelayError`
 * with `ERR_SCHEMA` saying what is wrong.
 */
export declare function parseVerdict(text: string): Verdict;
/**
 * The first of `main`, `master` that the repository has, else `'HEAD~1'` (also when git fails or
 * takes longer than `options.timeoutSeconds`, default 30). Synchronous: it holds the JS thread for
 * at most that long, and answers `'HEAD~1'` at once when a file git reads as it starts (`.git`,
 * `HEAD`, `config`, `commondir`, `index`, `packed-refs`) is not a regular file, such as a FIFO.
 */
export declare function detectDefaultBranch(repoPath: string, options?: GitHelperOptions): string;
/**
 * `git diff <base>...HEAD`, trimmed. Synchronous; throws a `RelayError` (`ERR_GIT_DIFF`, also when
 * git takes longer than `options.timeoutSeconds`, default 30, or at once when a file git reads as
 * it starts is not a regular file, as for `detectDefaultBranch`; `ERR_TOO_LARGE`).
 */
export declare function gitDiffBase(repoPath: string, base: string, options?: GitHelperOptions): string;
/** Whether the `codex`, `gemini`, `ollama`, `claude` and `opencode` CLIs are on this process's PATH. Synchronous. */
export declare function checkBackends(): Record<string, boolean>;
/** Drops every backend registered from JS and restores the five built-ins. */
export declare function _resetRegistry(): void;
