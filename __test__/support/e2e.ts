// What the end-to-end suites share: the environment a test adds for the relay, the envelope a
// relay wraps a request in, and a relay whose diff must be fitted.
import type { TempRepo } from './git-repo.js'

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

/**
 * The options of a relay to `backend` whose diff must be fitted: `lockFile` committed, then
 * rewritten to 440 KB, beside a one-line change of `a.txt`.
 */
export function fittedRelay(repo: TempRepo, lockFile: string, backend: string) {
  const lock = Array.from({ length: 6_000 }, (_, i) => `lock line ${String(i).padStart(60, '0')}`).join('\n')
  repo.write(lockFile, '\n').commit('lock')
  repo.write(lockFile, `${lock}\n`).write('a.txt', 'changed\n')
  return { prompt: 'Review', repoPath: repo.path, backend, includeDiff: true, fit: true, onWarning: () => {} }
}
