import type { BackendCall, BackendOutcome } from '../binding.js';
import type { SandboxMode } from './options.js';
/** What a backend's `run()` receives. */
export interface BackendRunOptions {
    /** The whole prompt envelope. */
    prompt: string;
    /** Absolute path of the repository. */
    repoPath: string;
    timeoutSeconds: number;
    sandbox: SandboxMode;
    model: string | null;
    /** The full child environment (the caller's, as it was at the call), `PHONE_A_FRIEND_DEPTH` already raised. */
    env: Record<string, string>;
    /**
     * The JSON Schema (its JSON text) the answer must match, when the caller gave one: it is
     * already asked for at the end of `prompt`; pass it to your model's structured output if it
     * has one. The relay checks the answer against it either way.
     */
    schema: string | null;
    /**
     * In a session, for a backend whose `capabilities.resumeStrategy` is `'native-session'`: its
     * own session id to continue (`resumeSession: true`), or `null` to start one (then report its
     * id through `onSessionCreated`).
     */
    sessionId?: string | null;
    resumeSession?: boolean;
    /** In a session, for `'transcript-replay'`: the earlier turns, oldest first, to send before `prompt`. */
    sessionHistory?: Array<{
        role: string;
        content: string;
    }>;
    /** Reports the backend's own session id (kept with the caller's session label). */
    onSessionCreated?: (sessionId: string) => void;
    /**
     * Aborts when the relay gives up on this call: at its timeout (`reason`: a `RelayError` with
     * code `ERR_BACKEND_TIMEOUT`), when the caller aborts (`reason`: the caller's `signal.reason`)
     * or when the relay is cancelled otherwise. Never aborts once the call has settled.
     */
    signal: AbortSignal;
}
/** What a backend's native `review()` receives. */
export interface BackendReviewOptions {
    repoPath: string;
    timeoutSeconds: number;
    sandbox: SandboxMode;
    model: string | null;
    env: Record<string, string>;
    /** The branch or commit to review against. */
    base: string;
    /** Review instructions, when the caller gave some. */
    prompt?: string;
    /** As for `run()`. */
    signal: AbortSignal;
}
/** A backend written in JS. Throw a `BackendError` to report a failure. */
export interface Backend {
    name: string;
    allowedSandboxes: Iterable<SandboxMode>;
    run(options: BackendRunOptions): Promise<string>;
    /**
     * The answer as it is produced, for `relayStream()` and `onChunk` (else they get `run()`'s
     * answer as one chunk). The chunks joined are the answer. Each chunk is taken only once the
     * consumer has room for it (at most 1 MiB unread), so a slow consumer pauses this iterator.
     */
    runStream?(options: BackendRunOptions): AsyncIterable<string>;
    /** A native review; without it, reviews go through `run()` with the diff in the prompt. */
    review?(options: BackendReviewOptions): Promise<string>;
    /**
     * How it continues a conversation (docs/CONTRACT.md §12), in the shape of upstream (the
     * phone-a-friend v4.1.1 CLI): `'native-session'` (it keeps sessions: `run()` gets
     * `sessionId`/`resumeSession` and reports new ids through `onSessionCreated`),
     * `'transcript-replay'` (`run()` gets `sessionHistory`), or `'unsupported'` (the default: a
     * `session` is refused with `ERR_SESSION`). Read when it is registered.
     */
    capabilities?: {
        resumeStrategy?: 'native-session' | 'transcript-replay' | 'unsupported';
    };
}
/** Calls a registered backend's `run()`/`review()`; always resolves. */
export type Trampoline = (call: BackendCall) => Promise<BackendOutcome>;
/** The trampoline of the JS backend registered as `name`, if it is one. */
export declare function trampolineFor(name: string): Trampoline | undefined;
/** Adds a backend written in JS, or replaces the one of the same name (built-ins too). */
export declare function registerBackend(backend: Backend): void;
/** Drops every backend registered from JS and restores the five built-ins. */
export declare function resetRegistry(): void;
