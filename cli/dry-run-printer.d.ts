import type { DryRun } from '../index.js';
/** The envelope (what the friend would read), then a summary of what would run. */
export declare function formatDryRun(dryRun: DryRun): string;
