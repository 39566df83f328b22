const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/** Progress on stderr, only for a person watching: a TTY, and not under CI. */
export function startSpinner(label: string, stream: NodeJS.WriteStream = process.stderr): () => void {
  if (!stream.isTTY || process.env.CI) return () => undefined
  const started = Date.now()
  let frame = 0
  const draw = (): void => {
    const seconds = Math.floor((Date.now() - started) / 1000)
    stream.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label} ${seconds}s`)
  }
  draw()
  const timer = setInterval(draw, 100)
  timer.unref()
  return () => {
    clearInterval(timer)
    stream.write('\r\x1b[2K')
  }
}
