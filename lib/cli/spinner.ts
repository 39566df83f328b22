const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/** Whether a spinner would show on `stream`: a TTY, and not under CI. */
export function spinnerShows(stream: NodeJS.WriteStream = process.stderr): boolean {
  return stream.isTTY === true && !process.env.CI
}

/**
 * Progress on stderr, only for a person watching: a TTY, and not under CI. `label` is read at
 * each frame (what the backend is doing, as it changes); it must hold no control character.
 */
export function startSpinner(label: string | (() => string), stream: NodeJS.WriteStream = process.stderr): () => void {
  if (!spinnerShows(stream)) return () => undefined
  const started = Date.now()
  let frame = 0
  const draw = (): void => {
    const seconds = Math.floor((Date.now() - started) / 1000)
    const text = typeof label === 'string' ? label : label()
    // One line: cut to the terminal's width, so that \r returns to its start.
    const line = `${FRAMES[frame++ % FRAMES.length]} ${text} ${seconds}s`.slice(0, Math.max(10, (stream.columns || 80) - 1))
    stream.write(`\r\x1b[2K${line}`)
  }
  draw()
  const timer = setInterval(draw, 100)
  timer.unref()
  return () => {
    clearInterval(timer)
    stream.write('\r\x1b[2K')
  }
}
