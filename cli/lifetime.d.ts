/** How a run ended from outside, and the exit code for it: 128 + the signal's number. */
interface Stop {
    code: number;
    /** The abort reason the running relay is given. */
    reason: Error;
    /** The line for stderr; none when the reader went away (nobody is left to read it). */
    note?: string;
}
/** 128 + SIGPIPE, as git exits when its pager is closed: the reader went away. */
export declare const EXIT_BROKEN_PIPE = 141;
/**
 * One CLI run from start to end. A signal, or a reader that closed stdout or stderr, aborts
 * `signal`, so the running relay kills its backend and removes its temp folder, and the command
 * ends with the stop's exit code. A second signal does not wait.
 */
export declare class Lifetime {
    private readonly controller;
    readonly signal: AbortSignal;
    stopped: Stop | undefined;
    private reported;
    private closed;
    private readonly handlers;
    constructor();
    private stop;
    /**
     * A failed write. A reader that closed early (`| head`) is EPIPE: end quietly with 141, nothing
     * more can be said anyway. Any other failure (a full disk) is worth a word on stderr, if that
     * still works, and exit 1.
     */
    private onWriteError;
    /** Says why the run stopped (once: on stderr, or as JSON on stdout) and returns its exit code. */
    report(json: boolean): number;
    /** The command is over: signals get their default effect back. */
    close(): void;
}
export {};
