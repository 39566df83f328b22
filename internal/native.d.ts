import * as binding from '../binding.js';
/**
 * This module instance's scope: its backend registry, its warning sink, and how its JS backends
 * are told to stop. Workers get their own; a scope's calls are cancelled when its thread ends.
 */
export declare const scope: number;
/** Whether this module runs on the process's main thread, where native code reads `process.env` itself. */
export declare const onMainThread: boolean;
export { binding };
