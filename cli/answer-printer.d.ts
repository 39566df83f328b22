/** What the printer writes to: process.stdout, or a stand-in in tests. */
export interface Output {
    write(text: string): boolean;
    readonly destroyed: boolean;
}
/**
 * Prints an answer to stdout as the backend produces it, so that stdout ends up holding exactly
 * what `--no-stream` prints: the final answer and a newline.
 *
 * The final answer is trimmed (the built-in backends trim it), while the chunks are raw text: a
 * backend may stream "\n answer \n". So whitespace is held back rather than printed: leading
 * whitespace until the first other text (then dropped), trailing whitespace until more text comes
 * (then printed before it; at the end, dropped). What is printed is thus always the stream so far,
 * trimmed and without its trailing whitespace.
 *
 * At the end (`finish`), when what was printed is the start of the final answer (always, for a
 * backend whose chunks joined are its answer, and for one that sent the answer as one chunk), the
 * rest of the answer and a newline follow: byte for byte what `--no-stream` prints. When a run
 * carried several messages (docs/CONTRACT.md §10: separated by a blank line, the answer being the
 * last), stdout already ends with the answer: only the newline follows. Should the stream not end
 * with the answer at all, the answer follows after a blank line, so stdout always ends with it.
 */
export declare class AnswerPrinter {
    private readonly out;
    private readonly beforeFirstWrite;
    private readonly keep;
    /** Whitespace received since the last text printed, not printed yet. */
    private pending;
    /** Characters printed in all. */
    private printed;
    /** The end of what was printed: all of it while it is no longer than `keep`. */
    private tail;
    /**
     * @param beforeFirstWrite runs once, just before the first byte is written (stops the spinner)
     * @param keep how much of what was printed to remember for `finish`: at least the longest
     *   possible answer, in UTF-16 code units (MAX_OUTPUT_BYTES is enough: one never exceeds the
     *   UTF-8 bytes)
     */
    constructor(out: Output, beforeFirstWrite: () => void, keep: number);
    /** Prints what `chunk` adds; false when the output asks to wait for its 'drain'. */
    write(chunk: string): boolean;
    /** Ends the output with the final answer, as `--no-stream` would print it (see the class). */
    finish(answer: string): void;
    /**
     * The run failed or was stopped after part of the answer was printed: ends that line, so what
     * comes next on a terminal (the error, `Interrupted.`) starts on a line of its own. Nothing when
     * nothing was printed, or when the output is gone (a reader that left).
     */
    abandon(): void;
    private emit;
}
