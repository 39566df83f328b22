/** How a run ended from outside, and the exit code for it: 128 + the signal's number. */
interface Stop {
  code: number
  /** The abort reason the running relay is given. */
  reason: Error
  /** The line for stderr; none when the reader went away (nobody is left to read it). */
  note?: string
}

/** The signals that stop a run, each with its exit code and the word a shell would print. */
const SIGNALS = {
  SIGHUP: { code: 129, word: 'Hangup' },
  SIGINT: { code: 130, word: 'Interrupted' },
  SIGTERM: { code: 143, word: 'Terminated' },
} as const satisfies Partial<Record<NodeJS.Signals, { code: number; word: string }>>

/** 128 + SIGPIPE, as git exits when its pager is closed: the reader went away. */
export const EXIT_BROKEN_PIPE = 141
const EXIT_WRITE_FAILED = 1

/**
 * One CLI run from start to end. A signal, or a reader that closed stdout or stderr, aborts
 * `signal`, so the running relay kills its backend and removes its temp folder, and the command
 * ends with the stop's exit code. A second signal does not wait.
 */
export class Lifetime {
  private readonly controller = new AbortController()
  readonly signal: AbortSignal = this.controller.signal
  stopped: Stop | undefined
  private reported = false
  private closed = false
  private readonly handlers: Array<[NodeJS.Signals, () => void]> = []

  constructor() {
    for (const [name, { code, word }] of Object.entries(SIGNALS) as Array<[NodeJS.Signals, { code: number; word: string }]>) {
      const handler = (): void => {
        if (this.stopped) process.exit(code)
        this.stop({ code, reason: new Error(`${word} (${name})`), note: `${word}.` })
      }
      process.on(name, handler)
      this.handlers.push([name, handler])
    }
    // Node ignores SIGPIPE, so a closed pipe surfaces as an 'error' event on the stream; unhandled,
    // it would crash with a stack trace.
    for (const stream of [process.stdout, process.stderr]) {
      stream.on('error', (error: NodeJS.ErrnoException) => this.onWriteError(stream, error))
    }
  }

  private stop(stop: Stop): void {
    if (this.stopped) return
    this.stopped = stop
    this.controller.abort(stop.reason)
  }

  /**
   * A failed write. A reader that closed early (`| head`) is EPIPE: end quietly with 141, nothing
   * more can be said anyway. Any other failure (a full disk) is worth a word on stderr, if that
   * still works, and exit 1.
   */
  private onWriteError(stream: NodeJS.WriteStream, error: NodeJS.ErrnoException): void {
    const code = error.code === 'EPIPE' ? EXIT_BROKEN_PIPE : EXIT_WRITE_FAILED
    if (code !== EXIT_BROKEN_PIPE && stream === process.stdout && !this.stopped) {
      process.stderr.write(`phone-a-friend: cannot write the output: ${error.message}\n`)
    }
    // Once the command is over, only the output was still under way: nothing is left to stop.
    if (this.closed) process.exit(this.stopped?.code ?? code)
    this.stop({ code, reason: new Error(`Cannot write the output: ${error.message}`) })
  }

  /** Says why the run stopped (once: on stderr, or as JSON on stdout) and returns its exit code. */
  report(json: boolean): number {
    const stop = this.stopped
    if (!stop) throw new Error('report() before a stop')
    if (!this.reported && stop.note !== undefined) {
      if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { code: 'ABORT_ERR', message: stop.reason.message } })}\n`)
      else process.stderr.write(`${stop.note}\n`)
    }
    this.reported = true
    return stop.code
  }

  /** The command is over: signals get their default effect back. */
  close(): void {
    this.closed = true
    for (const [name, handler] of this.handlers) process.off(name, handler)
  }
}
