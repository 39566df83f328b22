// What the end-to-end suites share: the environment a test adds for the relay, and the envelope a
// relay wraps a request in.

const undo: Array<() => void> = []

/** Adds variables to process.env (the relay snapshots it per call) until `restoreEnv()`. */
export function useEnv(vars: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((key) => [key, process.env[key]]))
  Object.assign(process.env, vars)
  undo.push(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  })
}

/** Undoes every `useEnv` since the last call, the latest first. */
export function restoreEnv(): void {
  for (let step = undo.pop(); step; step = undo.pop()) step()
}

/** The prompt a relay sends for `request` in the repository at `repoPath`. */
export const envelopeOf = (repoPath: string, request: string): string =>
  'You are helping another coding agent by reviewing or advising on work in a local repository.\n' +
  `Repository path: ${repoPath}\nUse the repository files for context when needed.\n` +
  `Respond with concise, actionable feedback.\n\nRequest:\n${request}`

/** Every chunk of a stream with the time it arrived, and the stream's return value. */
export async function timedStream(stream: AsyncGenerator<string, string, undefined>) {
  const chunks: { text: string; at: number }[] = []
  for (;;) {
    const step = await stream.next()
    if (step.done) return { chunks, answer: step.value, endedAt: Date.now() }
    chunks.push({ text: step.value, at: Date.now() })
  }
}
