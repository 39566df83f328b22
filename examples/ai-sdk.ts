/**
 * The relay as an AI SDK model: a structured review of a repository's uncommitted changes, typed
 * by a zod schema that the relay asks the backend for and checks, with `generateText()` and
 * `Output.object`. With `--explain`, a plain explanation streamed with `streamText()` instead.
 *
 * Run from the command line (see README.md beside this file):
 *   node examples/dist/ai-sdk.js [repo] [--to codex] [--explain "What does src/main.rs do?"]
 */
import { parseArgs } from 'node:util'
import { NoObjectGeneratedError, Output, generateText, streamText } from 'ai'
import { z } from 'zod'
import { SCHEMA_ERROR_HEADER, createPhoneAFriend } from '@phone-a-friend/relay/ai-sdk'

export const Review = z.object({
  verdict: z.enum(['ship', 'iterate']),
  findings: z.array(z.object({ file: z.string(), problem: z.string(), severity: z.enum(['blocker', 'important', 'nit']) })),
})

export type Review = z.infer<typeof Review>

/**
 * Asks `backend` to review the uncommitted changes of `repoPath` (the relay adds the diff:
 * `includeDiff`). Rejects with the AI SDK's errors: `NoObjectGeneratedError` when the answer does
 * not match `Review`, `APICallError` when the backend fails (never retried), an `AbortError`.
 */
export async function reviewChanges(repoPath: string, backend: string, signal?: AbortSignal): Promise<Review> {
  const friend = createPhoneAFriend({ repoPath, timeoutSeconds: 300 })
  const { output, warnings } = await generateText({
    model: friend(backend),
    prompt: 'Review the uncommitted changes: what would you fix before this is committed?',
    output: Output.object({ schema: Review }),
    providerOptions: { phoneAFriend: { includeDiff: true } },
    abortSignal: signal,
  })
  // The relay's own words, e.g. that there were no uncommitted changes and the last commit was reviewed.
  for (const warning of warnings ?? []) if (warning.type === 'other') process.stderr.write(`note: ${warning.message}\n`)
  return output
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { to: { type: 'string', default: 'codex' }, explain: { type: 'string' } } })
  const repoPath = positionals[0] ?? '.'
  const controller = new AbortController()
  process.once('SIGINT', () => controller.abort())
  if (values.explain !== undefined) {
    const friend = createPhoneAFriend({ repoPath })
    const result = streamText({ model: friend(values.to), prompt: values.explain, abortSignal: controller.signal, onError: ({ error }) => console.error(error) })
    for await (const chunk of result.textStream) process.stdout.write(chunk)
    process.stdout.write('\n')
    return
  }
  try {
    const review = await reviewChanges(repoPath, values.to, controller.signal)
    process.stdout.write(`[${values.to}] ${review.verdict}\n`)
    for (const finding of review.findings) process.stdout.write(`- ${finding.severity} ${finding.file}: ${finding.problem}\n`)
  } catch (error) {
    if (!NoObjectGeneratedError.isInstance(error)) throw error
    // The relay's check names the first violation; the AI SDK's own error says only that it failed.
    process.stderr.write(`no review: ${error.response?.headers?.[SCHEMA_ERROR_HEADER] ?? error.message}\n`)
    process.exitCode = 1
  }
}

if (require.main === module) void main()
