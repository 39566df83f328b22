"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MAX_OUTPUT_BYTES = exports.MAX_PROMPT_BYTES = exports.MAX_DIFF_BYTES = exports.MAX_CONTEXT_FILE_BYTES = exports.MAX_RELAY_DEPTH = exports.DEFAULT_SANDBOX = exports.DEFAULT_BACKEND = exports.DEFAULT_TIMEOUT_SECONDS = void 0;
/**
 * The contract's defaults and limits (docs/CONTRACT.md §2), as the core has them (a test compares
 * the two), written out so that importing the package loads no native code.
 */
exports.DEFAULT_TIMEOUT_SECONDS = 600;
exports.DEFAULT_BACKEND = 'codex';
exports.DEFAULT_SANDBOX = 'read-only';
exports.MAX_RELAY_DEPTH = 1;
exports.MAX_CONTEXT_FILE_BYTES = 200_000;
exports.MAX_DIFF_BYTES = 300_000;
exports.MAX_PROMPT_BYTES = 500_000;
exports.MAX_OUTPUT_BYTES = 8_388_608;
