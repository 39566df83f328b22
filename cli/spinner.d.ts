/** Progress on stderr, only for a person watching: a TTY, and not under CI. */
export declare function startSpinner(label: string, stream?: NodeJS.WriteStream): () => void;
