import type { SandboxMode } from './options.js'

/**
 * The contract's defaults and limits (docs/CONTRACT.md §2), as the core has them (a test compares
 * the two), written out so that importing the package loads no native code.
 */
export const DEFAULT_TIMEOUT_SECONDS: number = 600
/** The idle time-out (`idleTimeoutSeconds`) the CLI and the MCP server set; `relay()` sets none. */
export const DEFAULT_IDLE_TIMEOUT_SECONDS: number = 300
export const DEFAULT_BACKEND: string = 'codex'
export const DEFAULT_SANDBOX: SandboxMode = 'read-only'
export const MAX_RELAY_DEPTH: number = 1
export const MAX_CONTEXT_FILE_BYTES: number = 200_000
export const MAX_DIFF_BYTES: number = 300_000
export const MAX_PROMPT_BYTES: number = 500_000
export const MAX_OUTPUT_BYTES: number = 8_388_608
/** The environment variable that chooses the backend of a call naming none (the CLI, the MCP server). */
export const BACKEND_ENV_VAR: string = 'PHONE_A_FRIEND_BACKEND'
