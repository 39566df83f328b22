import type { NativeRelayOptions, NativeReviewOptions } from '../binding.js';
import { RelayError } from './errors.js';
/** How much a backend may touch. Built-in backends accept all three. */
export type SandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access';
export interface RelayOptions {
    /** What to ask. Must not be blank. */
    prompt: string;
    /** The repository the backend works in; relative paths resolve against `process.cwd()`. */
    repoPath: string;
    /**
     * Backend name: `codex`, `gemini`, `ollama` or one passed to `registerBackend()`.
     * @default 'codex'
     */
    backend?: string;
    /** A file whose text goes into the prompt as additional context (at most 200,000 bytes trimmed). */
    contextFile?: string | null;
    /** Inline additional context (at most 200,000 bytes trimmed); not together with `contextFile`. */
    contextText?: string | null;
    /**
     * Add `git diff HEAD` (or, when that is empty, the last commit's diff) to the prompt.
     * @default false
     */
    includeDiff?: boolean;
    /**
     * Seconds the backend may take; a finite number greater than zero.
     * @default 600
     */
    timeoutSeconds?: number;
    /** Model name passed to the backend; the backend's own default when absent. */
    model?: string | null;
    /**
     * What the backend may change in the repository.
     * @default 'read-only'
     */
    sandbox?: SandboxMode;
    /** Cancels the relay: the promise rejects with an `AbortError` and the backend is killed. */
    signal?: AbortSignal;
    /**
     * Receives the answer's text as the backend produces it (the chunks `relayStream()` yields);
     * the promise still resolves with the whole answer. If it throws, the relay is aborted and
     * rejects with what it threw.
     */
    onChunk?: ((text: string) => void) | null;
    /**
     * A JSON Schema (an object, or its JSON text) the answer must match (docs/CONTRACT.md §13): asked
     * of the backend (at the end of the prompt, and through its native structured output where it has
     * one), then checked; a mismatch rejects with `ERR_SCHEMA` naming the first violation's path. The
     * answer stays a string: the JSON text.
     */
    schema?: string | object | null;
    /**
     * A label of yours for a conversation with this backend in this repository (docs/CONTRACT.md
     * §12): the first call starts it, later calls continue it (the backend's own session, or a replay
     * of the earlier turns). Kept in the session store (see `listSessions()`).
     */
    session?: string | null;
    /** The backend's own session id to attach to (adopted under `session` when both are given). */
    backendSession?: string | null;
    /** Receives the call's warnings (a new session, a store moved aside, a save that failed) instead of `console.error`. */
    onWarning?: ((message: string) => void) | null;
    /** `true` makes the call a dry run: see `DryRunRelayOptions`. */
    dryRun?: false | null;
}
/**
 * `relay()` options for a dry run: every check runs and the context, diff and envelope are built
 * as usual (same errors), then the call resolves with a `DryRun` describing what would be sent
 * and run, instead of running it: nothing is spawned and no request is made.
 */
export type DryRunRelayOptions = Omit<RelayOptions, 'dryRun'> & {
    dryRun: true;
};
export interface ReviewRelayOptions {
    /** The repository to review; relative paths resolve against `process.cwd()`. */
    repoPath: string;
    /**
     * Backend name.
     * @default 'codex'
     */
    backend?: string;
    /**
     * The branch or commit to diff against (`git diff <base>...HEAD`).
     * @default the first of `main`, `master` that exists, else `HEAD~1`
     */
    base?: string;
    /**
     * Review instructions.
     * @default 'Review the following changes.'
     */
    prompt?: string;
    /**
     * Seconds the backend may take; a finite number greater than zero.
     * @default 600
     */
    timeoutSeconds?: number;
    /** Model name passed to the backend. */
    model?: string | null;
    /**
     * What the backend may change in the repository.
     * @default 'read-only'
     */
    sandbox?: SandboxMode;
    /** Cancels the review: the promise rejects with an `AbortError` and the backend is killed. */
    signal?: AbortSignal;
    /** Receives the answer's text as it is produced, as `RelayOptions.onChunk` does. */
    onChunk?: ((text: string) => void) | null;
    /** As `RelayOptions.schema`; a review with a schema takes the generic path (diff in the prompt). */
    schema?: string | object | null;
    /**
     * Ask for a verdict (docs/CONTRACT.md §13): the answer is the verdict envelope of upstream, the
     * phone-a-friend v4.1.1 CLI (`schema_version` 1) as JSON text, checked against its schema and its
     * findings (see `parseVerdict()`). Not with `schema`.
     * @default false
     */
    verdict?: boolean | null;
    /** Receives the review's warnings (the native review's fallback) instead of `console.error`. */
    onWarning?: ((message: string) => void) | null;
    /** `true` makes the review a dry run: see `DryRunReviewOptions`. */
    dryRun?: false | null;
}
/** `reviewRelay()` options for a dry run, as `DryRunRelayOptions`. */
export type DryRunReviewOptions = Omit<ReviewRelayOptions, 'dryRun'> & {
    dryRun: true;
};
type Fields = Record<string, unknown>;
export declare function signalOf(options: Fields): AbortSignal | undefined;
/** `onChunk`, when one is given. */
export declare function onChunkOf(options: Fields): ((text: string) => void) | undefined;
export interface Parsed<T> {
    options: T;
    signal?: AbortSignal;
    onWarning?: (message: string) => void;
    onChunk?: (text: string) => void;
    dryRun: boolean;
    /** The first of checks 1 and 2 (docs/CONTRACT.md §3) that fails, made here so a refusal costs no copy of the environment; the native core makes them again, in the same order. */
    refused?: RelayError;
}
export declare function nativeRelayOptions(input: unknown): Parsed<NativeRelayOptions>;
export declare function nativeReviewOptions(input: unknown): Parsed<NativeReviewOptions>;
/** `relayAll()` options (docs/CONTRACT.md §15): those of `relay()`, with `backends` in place of `backend`. */
export interface RelayAllOptions extends Omit<RelayOptions, 'backend' | 'onChunk' | 'dryRun' | 'signal'> {
    /**
     * The backends to ask, all at once, each on the same envelope; at least one. The results come
     * in this order (a name given twice is asked twice).
     */
    backends: string[];
    /** Cancels every backend of the call: the promise rejects with an `AbortError`. */
    signal?: AbortSignal;
}
export declare function nativeRelayAllOptions(input: unknown): Parsed<NativeRelayOptions> & {
    backends: string[];
};
/** Options of the synchronous git helpers. */
export interface GitHelperOptions {
    /**
     * Seconds git may take; a finite number greater than zero. Past it, `gitDiffBase` throws
     * `ERR_GIT_DIFF` and `detectDefaultBranch` answers `'HEAD~1'`, as for any git failure.
     * @default 30
     */
    timeoutSeconds?: number;
}
/** The `timeoutSeconds` of a git helper's optional options (the core checks its value). */
export declare function gitHelperTimeout(input: unknown): number | undefined;
export declare function stringArgument(value: unknown, name: string): string;
export {};
