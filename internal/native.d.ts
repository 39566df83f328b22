import * as binding from '../binding.js';
/** This module instance's scope: its backend registry and its warning sink. Workers get their own. */
export declare const scope: number;
export { binding };
