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
