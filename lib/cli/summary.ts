// `--verbose`'s last line on stderr: who answered, in how long, and what it cost, as far as the
// backend said (docs/CONTRACT.md §8b).
import type { RelayDetails, RelayUsage } from '../index.js'

const count = new Intl.NumberFormat('en-US')

/** The usage's known parts, e.g. `1,234 input tokens (200 cached), 56 output (7 reasoning), $0.0123`. */
export function formatUsage(usage: RelayUsage): string {
  const parts: string[] = []
  if (usage.inputTokens !== undefined) {
    const cached = usage.cachedInputTokens === undefined ? '' : ` (${count.format(usage.cachedInputTokens)} cached)`
    parts.push(`${count.format(usage.inputTokens)} input tokens${cached}`)
  }
  if (usage.outputTokens !== undefined) {
    const reasoning = usage.reasoningTokens === undefined ? '' : ` (${count.format(usage.reasoningTokens)} reasoning)`
    parts.push(`${count.format(usage.outputTokens)} output${reasoning}`)
  }
  if (usage.costUsd !== undefined) parts.push(`$${usage.costUsd.toFixed(4)}`)
  return parts.join(', ')
}

/** `[phone-a-friend] codex (gpt-5) answered in 12.3s after claude (quota); 1,234 input tokens, …`. */
export function formatSummary(details: Pick<RelayDetails, 'backend' | 'model' | 'usage' | 'attempts' | 'durationMs'>): string {
  const who = details.model === null ? details.backend : `${details.backend} (${details.model})`
  const after = details.attempts.length === 0 ? '' : ` after ${details.attempts.map(({ backend, reason }) => `${backend} (${reason})`).join(', ')}`
  const usage = details.usage === null ? 'no usage reported' : formatUsage(details.usage)
  return `[phone-a-friend] ${who} answered in ${(details.durationMs / 1000).toFixed(1)}s${after}; ${usage}`
}
