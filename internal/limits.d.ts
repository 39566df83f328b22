import type { SandboxMode } from './options.js';
/**
 * The contract's defaults and limits (docs/CONTRACT.md §2), as the core has them (a test compares
 * the two), written out so that importing the package loads no native code.
 */
export declare const DEFAULT_TIMEOUT_SECONDS: number;
export declare const DEFAULT_BACKEND: string;
export declare const DEFAULT_SANDBOX: SandboxMode;
export declare const MAX_RELAY_DEPTH: number;
export declare const MAX_CONTEXT_FILE_BYTES: number;
export declare const MAX_DIFF_BYTES: number;
export declare const MAX_PROMPT_BYTES: number;
export declare const MAX_OUTPUT_BYTES: number;
