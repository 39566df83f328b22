/**
 * A "second opinion" tool for an agent harness: before the agent commits, it asks another coding
 * agent to review the work. The harness registers `secondOpinion` as a tool; the result is data
 * the agent can act on (a review, or a code, a message and whether trying again could help), never
 * an exception for things that are not bugs.
 *
 * Run from the command line (see README.md beside this file):
 *   node examples/dist/second-opinion.js [repo] [--base main] [--to codex,gemini] [--focus "…"]
 */
import { parseArgs } from 'node:util'
import { relay, reviewRelay, RelayError } from '@phone-a-friend/relay'

export interface SecondOpinionRequest {
  /** The repository the agent is working in. */
  repoPath: string
  /** Backends to ask, in order of preference; the next is tried only when one cannot answer. */
  backends?: string[]
  /** Review the branch's commits since `base` (`git diff <base>...HEAD`) instead of the uncommitted changes. */
  base?: string
  /** What the reviewer should look at, in the agent's words. */
  focus?: string
  /** The whole tool call's budget in milliseconds, fallbacks included. */
  timeoutMs?: number
  /** The harness's own cancellation (the user pressed Esc). */
  signal?: AbortSignal
}

export type SecondOpinion =
  | { ok: true; backend: string; review: string }
  | { ok: false; code: string; message: string; retryable: boolean }

const UNCOMMITTED_PROMPT =
  'Review the uncommitted changes in the diff below. List bugs, missed edge cases and risky ' +
  'changes, most important first, each with the file and line. Say "No issues found" if there are none.'

export async function secondOpinion(request: SecondOpinionRequest): Promise<SecondOpinion> {
  const { repoPath, backends = ['codex', 'gemini', 'ollama'], base, focus, timeoutMs = 300_000 } = request
  // One budget for the whole call: when it runs out, the backend and everything it started are
  // killed and the call rejects with an AbortError. The harness's own signal stops it the same way.
  const budget = AbortSignal.timeout(timeoutMs)
  const signal = request.signal ? AbortSignal.any([request.signal, budget]) : budget
  const unanswered: string[] = []

  for (const backend of backends) {
    try {
      const review =
        base === undefined
          ? await relay({ prompt: focus ?? UNCOMMITTED_PROMPT, repoPath, backend, includeDiff: true, signal })
          : await reviewRelay({ repoPath, base, backend, prompt: focus, signal })
      return { ok: true, backend, review }
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError') {
        return request.signal?.aborted
          ? { ok: false, code: 'CANCELLED', message: 'Cancelled by the user', retryable: false }
          : { ok: false, code: 'TIMEOUT', message: `No review within ${timeoutMs / 1000}s`, retryable: true }
      }
      if (!(error instanceof RelayError)) throw error // a bug in a backend or here: let the harness see it
      switch (error.code) {
        case 'ERR_BACKEND_UNAVAILABLE': // not installed, or its server is down
        case 'ERR_BACKEND_FAILED': // it ran and failed (not logged in, out of quota, …)
        case 'ERR_BACKEND_NO_OUTPUT':
        case 'ERR_BACKEND_TIMEOUT':
          unanswered.push(`${backend}: ${error.message}`)
          continue
        case 'ERR_TOO_LARGE':
          return { ok: false, code: error.code, message: `${error.message}. Commit or stash part of the work and ask about the rest.`, retryable: false }
        case 'ERR_DEPTH_LIMIT':
          return { ok: false, code: error.code, message: 'This is already a relayed request: answer it yourself.', retryable: false }
        default: // ERR_INVALID_REPO, ERR_GIT_DIFF (no such base), ERR_TIMEOUT, …: the request itself is wrong
          return { ok: false, code: error.code, message: error.message, retryable: error.code === 'ERR_TIMEOUT' }
      }
    }
  }
  return { ok: false, code: 'NO_BACKEND', message: `No backend could answer:\n${unanswered.join('\n')}`, retryable: false }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { base: { type: 'string' }, to: { type: 'string' }, focus: { type: 'string' }, timeout: { type: 'string' } },
  })
  const controller = new AbortController()
  process.once('SIGINT', () => controller.abort())
  const result = await secondOpinion({
    repoPath: positionals[0] ?? '.',
    backends: values.to?.split(','),
    base: values.base,
    focus: values.focus,
    timeoutMs: values.timeout === undefined ? undefined : Number(values.timeout) * 1000,
    signal: controller.signal,
  })
  if (result.ok) {
    process.stdout.write(`[${result.backend}]\n${result.review}\n`)
  } else {
    process.stderr.write(`${result.code}: ${result.message}\n`)
    process.exitCode = 1
  }
}

if (require.main === module) void main()
