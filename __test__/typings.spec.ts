// The typings as a newcomer meets them: a strict TypeScript project (moduleResolution nodenext)
// that imports the package. The snippets that must compile do; those that must not carry
// `// @ts-expect-error`, which is itself an error when the line below it compiles.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '..')
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
let project: string

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'paf-typings-'))
  mkdirSync(join(project, 'node_modules', '@phone-a-friend'), { recursive: true })
  // The package as installed: resolved through its `exports` to the compiled typings.
  symlinkSync(ROOT, join(project, 'node_modules', '@phone-a-friend', 'relay'))
  // The AI SDK's provider types, installed next to it as the AI SDK provider's users have them.
  symlinkSync(join(ROOT, 'node_modules', '@ai-sdk'), join(project, 'node_modules', '@ai-sdk'))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  const compilerOptions = { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', lib: ['ES2022'], types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] }
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }))
})

afterAll(() => rmSync(project, { recursive: true, force: true }))

/** tsc's report on `source`, or '' when it compiles. */
function compile(source: string): string {
  writeFileSync(join(project, 'snippet.ts'), source)
  try {
    execFileSync(process.execPath, [TSC, '-p', '.'], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout)
  }
}

describe('strict TypeScript (nodenext) and the typings', () => {
  it('a dry run known only at run time resolves with a string or a DryRun, for relay and reviewRelay', () => {
    const report = compile(`
      import { relay, reviewRelay, type DryRun } from '@phone-a-friend/relay'
      declare const flag: boolean
      export async function either(): Promise<string | DryRun> {
        const answer: string | DryRun = await relay({ prompt: 'p', repoPath: '.', dryRun: flag })
        return typeof answer === 'string' ? answer : reviewRelay({ repoPath: '.', dryRun: flag })
      }
      export async function narrowed(): Promise<[string, DryRun, string]> {
        return [await relay({ prompt: 'p', repoPath: '.' }), await relay({ prompt: 'p', repoPath: '.', dryRun: true }), await reviewRelay({ repoPath: '.', dryRun: false })]
      }
      export async function notAString(): Promise<string> {
        // @ts-expect-error it may be a DryRun
        return relay({ prompt: 'p', repoPath: '.', dryRun: flag })
      }
    `)
    expect(report).toBe('')
  })

  it('relayAll() refuses in its type what it refuses at run time', () => {
    const report = compile(`
      import { relayAll, type RelayAllResult } from '@phone-a-friend/relay'
      const base = { prompt: 'p', repoPath: '.', backends: ['codex', 'gemini'] }
      export const fine: Promise<RelayAllResult[]> = relayAll({ ...base, backend: null, onChunk: null, dryRun: false, session: null, backendSession: undefined })
      // @ts-expect-error a session belongs to one backend
      relayAll({ ...base, session: 's' })
      // @ts-expect-error as session
      relayAll({ ...base, backendSession: 'id' })
      // @ts-expect-error the backends are named in backends
      relayAll({ ...base, backend: 'codex' })
      // @ts-expect-error it streams nothing
      relayAll({ ...base, onChunk: (text: string) => void text })
      // @ts-expect-error no dry run
      relayAll({ ...base, dryRun: true })
    `)
    expect(report).toBe('')
  })

  it('a backend declared before registerBackend() may list its sandboxes as strings; a string itself is refused', () => {
    const report = compile(`
      import { registerBackend, type BackendRunOptions } from '@phone-a-friend/relay'
      const modes = new Set<string>(['read-only', 'workspace-write'])
      const backend = { name: 'mine', allowedSandboxes: modes, run: async (options: BackendRunOptions) => options.prompt }
      registerBackend(backend)
      const listed = { name: 'listed', allowedSandboxes: ['read-only'], run: async ({ schema }: BackendRunOptions) => schema ?? 'no schema' }
      registerBackend(listed)
      // @ts-expect-error an iterable of strings, not one string
      registerBackend({ name: 'one', allowedSandboxes: 'read-only', run: async () => 'ok' })
    `)
    expect(report).toBe('')
  })

  it('the AI SDK provider: a LanguageModelV4 per backend, settings typed as relay()’s options', () => {
    const report = compile(`
      import type { LanguageModelV4, ProviderV4 } from '@ai-sdk/provider'
      import { createPhoneAFriend, phoneAFriend, type PhoneAFriendProviderOptions } from '@phone-a-friend/relay/ai-sdk'
      const friend = createPhoneAFriend({ repoPath: '.', sandbox: 'workspace-write', timeoutSeconds: 300 })
      export const models: LanguageModelV4[] = [friend('codex'), friend('claude', { model: 'opus' }), friend.languageModel('mine'), phoneAFriend('gemini')]
      export const provider: ProviderV4 = friend
      export const options = { phoneAFriend: { includeDiff: true, contextText: 'notes', session: 'review-1' } satisfies PhoneAFriendProviderOptions }
      // @ts-expect-error not a SandboxMode
      createPhoneAFriend({ sandbox: 'root' })
      // @ts-expect-error not a relay option
      friend('codex', { temperature: 0.2 })
      // @ts-expect-error includeDiff is a boolean
      export const wrong = { includeDiff: 'yes' } satisfies PhoneAFriendProviderOptions
    `)
    expect(report).toBe('')
  })

  it('still refuses a bad sandbox in the options', () => {
    const report = compile(`
      import { relay } from '@phone-a-friend/relay'
      // @ts-expect-error not a SandboxMode
      export const p = relay({ prompt: 'p', repoPath: '.', sandbox: 'root' })
    `)
    expect(report).toBe('')
  })

  it('each call types exactly its own options of the one request (the Rust lists, request.rs)', () => {
    const source = readFileSync(join(ROOT, 'crates', 'core', 'src', 'relay', 'request.rs'), 'utf8')
    const list = (name: string): string[] => {
      const body = new RegExp(`const ${name}: &'static \\[&'static str\\] = &\\[([^\\]]*)\\]`).exec(source)?.[1] ?? ''
      return [...body.matchAll(/"(\w+)"/g)].map((match) => match[1])
    }
    const [relayOnly, reviewOnly] = [list('RELAY_ONLY'), list('REVIEW_ONLY')]
    expect(relayOnly.length > 0 && reviewOnly.length > 0).toBe(true)
    const refused = (call: string, base: string, names: string[]): string => names.map((name) => `  // @ts-expect-error not a ${call} option\n  ${call}({ ${base}${name}: undefined })\n`).join('')
    const report = compile(`
      import { relay, reviewRelay } from '@phone-a-friend/relay'
      ${refused('relay', "prompt: 'p', repoPath: '.', ", reviewOnly)}
      ${refused('reviewRelay', "repoPath: '.', ", relayOnly)}
      export const taken = [relay({ prompt: 'p', repoPath: '.', ${relayOnly.map((name) => `${name}: undefined`).join(', ')} }), reviewRelay({ repoPath: '.', ${reviewOnly.map((name) => `${name}: undefined`).join(', ')} })]
    `)
    expect(report).toBe('')
  })
})
