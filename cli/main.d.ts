/** Runs the CLI; sets `process.exitCode` rather than exiting, so no output is cut short. */
export declare function main(argv: string[]): Promise<void>;
