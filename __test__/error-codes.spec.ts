// The codes a RelayError can carry come from one list in the core (`with_error_codes!` in
// crates/core/src/errors.rs), which napi renders in binding.d.ts as `RelayErrorCode`; the JS API
// exports that union with the wrapper's own ERR_NATIVE_BINDING_MISSING. The documents that list
// the codes must list exactly these, in this order.
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { RelayErrorCode } from '../lib/index.js'

const ROOT = resolve(__dirname, '..')

/** The members of binding.d.ts's `RelayErrorCode` union. */
function generatedCodes(): string[] {
  const typings = readFileSync(join(ROOT, 'binding.d.ts'), 'utf8')
  const union = /export type RelayErrorCode =([^;]*?)(?:\n\n|;|$)/.exec(typings)
  expect(union, 'binding.d.ts declares RelayErrorCode').not.toBeNull()
  return [...(union?.[1] ?? '').matchAll(/'([A-Z_]+)'/g)].map((match) => match[1])
}

/** The codes in the first column of the first table after `heading` in a Markdown page. */
function documentedCodes(page: string, heading: string): string[] {
  const text = readFileSync(join(ROOT, page), 'utf8')
  const section = text.slice(text.indexOf(heading))
  const table = /\n(\|[^\n]*\n)+/.exec(section)?.[0] ?? ''
  return [...table.matchAll(/^\| `(ERR_[A-Z_]+)` \|/gm)].map((match) => match[1])
}

describe('error codes: one list', () => {
  const codes = [...generatedCodes(), 'ERR_NATIVE_BINDING_MISSING']

  it('binding.d.ts has the core list of codes, and the JS union takes each', () => {
    expect(codes).toContain('ERR_PROMPT_REQUIRED')
    expect(codes.length).toBeGreaterThanOrEqual(19)
    // A type-level check too: each literal is a RelayErrorCode (npm run typecheck).
    const typed: RelayErrorCode[] = ['ERR_PROMPT_REQUIRED', 'ERR_SCHEMA', 'ERR_NATIVE_BINDING_MISSING']
    for (const code of typed) expect(codes).toContain(code)
  })

  it('docs/ERRORS.md lists exactly these codes, in this order', () => {
    expect(documentedCodes('docs/ERRORS.md', '## RelayError and its codes')).toEqual(codes)
  })

  it('docs/CONTRACT.md §7 lists exactly these codes', () => {
    expect(documentedCodes('docs/CONTRACT.md', '## 7. Errors').sort()).toEqual([...codes].sort())
  })
})

describe('hint: what to do, beside a message the original fixed', () => {
  it('names the backend or sandbox mode meant, and says how to get under a size limit', async () => {
    const { _resetRegistry, registerBackend, relay } = await import('@phone-a-friend/relay')
    _resetRegistry()
    const { TempRepo } = await import('./support/git-repo.js')
    const repo = new TempRepo().write('a.txt', 'one\n').commit('first')
    try {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemni' })).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND', hint: 'Did you mean gemini?' })
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'Codex' })).rejects.toMatchObject({ hint: 'Did you mean codex?' })
      // A registered backend is a name meant too.
      registerBackend({ name: 'reviewer', allowedSandboxes: ['read-only'], run: async () => 'ok' })
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'reveiwer' })).rejects.toMatchObject({ hint: 'Did you mean reviewer?' })
      const stranger = await relay({ prompt: 'p', repoPath: repo.path, backend: 'zzz' }).catch((e: unknown) => e)
      expect((stranger as { hint?: string }).hint).toBeUndefined()
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'codex', sandbox: 'read_only' as never })).rejects.toMatchObject({ code: 'ERR_INVALID_SANDBOX', hint: 'Did you mean read-only?' })
      const large = (await relay({ prompt: 'x'.repeat(600_000), repoPath: repo.path, backend: 'reviewer' }).catch((e: unknown) => e)) as { code: string; message: string; hint: string }
      expect(large).toMatchObject({ code: 'ERR_TOO_LARGE', message: expect.stringMatching(/^Relay prompt is too large \(\d+ bytes; max 500000 bytes\)$/) })
      expect(large.hint).toMatch(/^Shorten the prompt or the context, or fit the diff/)
    } finally {
      _resetRegistry()
      repo.remove()
    }
  })
})

describe('hint on a time-out that is not a number', () => {
  it('keeps the original message and says what the option takes', async () => {
    const { relay } = await import('@phone-a-friend/relay')
    const error = await relay({ prompt: 'p', repoPath: '.', timeoutSeconds: '30' as never }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ERR_INVALID_TIMEOUT', message: 'Timeout must be greater than zero', hint: "timeoutSeconds (the CLI's --timeout) takes a number of seconds greater than zero, such as 30 or 2.5; a string such as '30', NaN or Infinity is not one" })
  })
})
