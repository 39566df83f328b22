import type * as Binding from '../binding.js';
type BindingModule = typeof Binding;
/** The addon's exports, each looked up (and the addon loaded) when first used. */
export declare const binding: BindingModule;
/**
 * This module instance's scope: its backend registry, its warning sink, and how its JS backends
 * are told to stop. Workers get their own; a scope's calls are cancelled when its thread ends.
 * Made on first use, with the addon.
 */
export declare function scope(): number;
/** Whether this module runs on the process's main thread, where native code reads `process.env` itself. */
export declare function onMainThread(): boolean;
export {};
