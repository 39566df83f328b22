// `fit` (docs/CONTRACT.md §6a): a diff over its limit is fitted to the budget instead of refused,
// with every changed file accounted for in the envelope's Diff Coverage section and the dry run's
// `coverage`; the library's default stays the contract's refusal, the CLI fits by default.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MAX_PROMPT_BYTES, _resetRegistry, registerBackend, relay, relayDetailed, reviewRelay, reviewRelayDetailed, type DryRun, type DryRunCoverage } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo'
import { runCli } from './support/run-cli'
import { startOllamaStub } from './support/ollama-stub'

/** `count` lines of `width` bytes each, starting with `tag`. */
function lines(count: number, width: number, tag: string): string {
  return Array.from({ length: count }, (_, i) => `${tag} ${String(i).padStart(width - tag.length - 2, '0')}\n`).join('')
}

/** A block per hunk: 40 rewritten lines, then 10 kept ones that keep the hunks apart. */
function blocks(tag: string): string {
  return Array.from({ length: 100 }, (_, h) => lines(40, 80, `${tag}${h}`) + lines(10, 80, `keep${h}`)).join('')
}

const SOURCES = Array.from({ length: 40 }, (_, n) => `src/m${String(n).padStart(2, '0')}.ts`)
let repo: TempRepo

/**
 * A 5 MB uncommitted diff: a lock file, a generated file (.gitattributes), a binary, 40 source
 * files and one 400 KB source file of 100 hunks.
 */
beforeAll(() => {
  repo = new TempRepo()
  repo.write('.gitattributes', 'dist/** linguist-generated\n')
  for (const dir of ['src', 'dist']) mkdirSync(join(repo.path, dir))
  repo.write('package-lock.json', '{}\n').write('dist/app.js', '\n').write('logo.png', '').write('src/big.ts', blocks('old'))
  for (const file of SOURCES) repo.write(file, '\n')
  repo.commit('before')
  repo.write('package-lock.json', lines(40_000, 80, 'lock')).write('dist/app.js', lines(20_000, 80, 'gen'))
  repo.write('logo.png', Buffer.from([0, 159, 146, 150, 0, 1, 2, 3])).write('src/big.ts', blocks('new'))
  for (const file of SOURCES) repo.write(file, lines(20, 60, file))
})

afterAll(() => repo.remove())
beforeEach(() => _resetRegistry())

const status = (coverage: DryRunCoverage[] | null, path: string) => coverage?.find((file) => file.path === path)

describe('fit', () => {
  it('the library refuses a diff over its limit unless asked to fit it (drop-in)', async () => {
    await expect(relay({ prompt: 'Review', repoPath: repo.path, includeDiff: true, dryRun: true })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE' })
  })

  it('fits a 5 MB diff: within the budget, every changed file listed once with why, the source whole or cut at a hunk', async () => {
    const warnings: string[] = []
    const dryRun: DryRun = await relay({ prompt: 'Review', repoPath: repo.path, includeDiff: true, fit: true, dryRun: true, onWarning: (w) => warnings.push(w) })
    expect(dryRun.envelopeBytes).toBeLessThanOrEqual(MAX_PROMPT_BYTES)
    const coverage = dryRun.coverage ?? []
    expect(coverage.map((file) => file.path).sort()).toEqual(['dist/app.js', 'logo.png', 'package-lock.json', 'src/big.ts', ...SOURCES].sort())
    expect(status(coverage, 'package-lock.json')).toMatchObject({ status: 'left-out', includedBytes: 0, reason: 'a lock file' })
    expect(status(coverage, 'dist/app.js')).toMatchObject({ status: 'left-out', reason: 'marked linguist-generated in .gitattributes' })
    expect(status(coverage, 'logo.png')).toMatchObject({ status: 'left-out', reason: 'binary, or marked -diff in .gitattributes' })
    for (const file of SOURCES) expect(status(coverage, file)?.status).toBe('whole')
    const big = status(coverage, 'src/big.ts')
    expect(big?.status).toBe('cut')
    expect(big?.reason).toMatch(/^hunks 1-\d+ of 100: the rest did not fit the budget$/)
    // The envelope holds the cut file up to a hunk's start, and the section that lists the rest.
    const envelope = dryRun.envelope ?? ''
    const from = envelope.indexOf('diff --git a/src/big.ts')
    const cut = envelope.slice(from, envelope.indexOf('\ndiff --git', from) + 1)
    expect(cut.length).toBe(big?.includedBytes)
    // Whole hunks: the next would have begun with its "@@" line.
    expect(cut.split('\n').filter((line) => line.startsWith('@@ ')).length).toBe(Number(/^hunks 1-(\d+)/.exec(big?.reason ?? '')?.[1]))
    expect(cut.endsWith(' keep' + '\n') || /\n [^\n]*\n$/.test(cut)).toBe(true)
    expect(envelope).toContain('\n\nDiff Coverage:\nThe diff above was fitted to a budget of ')
    expect(envelope).toContain('- left-out: package-lock.json (')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/^\[phone-a-friend\] fit: the diff was fitted to \d+ bytes: 4 of 44 changed files cut or left out/)
  })

  it('a backend is sent exactly the dry run’s envelope', async () => {
    const received: string[] = []
    registerBackend({ name: 'fit-recorder', allowedSandboxes: ['read-only'], run: async ({ prompt }) => (received.push(prompt), 'ok') })
    const options = { prompt: 'Review', repoPath: repo.path, includeDiff: true, fit: true, backend: 'fit-recorder', onWarning: () => {} }
    const dryRun = await relay({ ...options, dryRun: true })
    expect(await relay(options)).toBe('ok')
    expect(received).toEqual([dryRun.envelope])
  })

  it('relayDetailed() and reviewRelayDetailed() give the answer with its backend, coverage and warnings', async () => {
    registerBackend({ name: 'fit-detailed', allowedSandboxes: ['read-only'], run: async () => 'detailed' })
    const options = { prompt: 'Review', repoPath: repo.path, includeDiff: true, fit: true, backend: 'fit-detailed', onWarning: () => {} }
    const details = await relayDetailed(options)
    expect(details).toMatchObject({ answer: 'detailed', backend: 'fit-detailed' })
    expect(details.coverage).toEqual((await relay({ ...options, dryRun: true })).coverage)
    expect(details.warnings).toHaveLength(1)
    expect(details.warnings[0]).toMatch(/^\[phone-a-friend\] fit: the diff was fitted to /)
    expect(details.durationMs).toBeGreaterThan(0)
    // A diff sent whole has no coverage.
    const plain = await relayDetailed({ prompt: 'p', repoPath: repo.path, backend: 'fit-detailed' })
    expect(plain).toMatchObject({ answer: 'detailed', coverage: null, warnings: [] })
    const review = await reviewRelayDetailed({ repoPath: repo.path, base: 'HEAD', backend: 'fit-detailed' })
    expect(review).toMatchObject({ answer: 'detailed', backend: 'fit-detailed', coverage: null })
    await expect(relayDetailed({ ...options, dryRun: true } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
  })

  it('the CLI’s --json answer carries the backend and the coverage', async () => {
    const stub = await startOllamaStub((res, _, __, req) => {
      if (req.url === '/api/show') return void res.writeHead(404).end('{"error":"not found"}')
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ message: { content: 'seen' }, done: true }))
    })
    try {
      const result = await runCli(['--prompt', 'Review', '--include-diff', '--to', 'ollama', '--model', 'm', '--json'], { cwd: repo.path, env: { ...process.env, OLLAMA_HOST: stub.host } })
      expect(result.code).toBe(0)
      const printed = JSON.parse(result.stdout) as { ok: boolean; output: string; backend: string; coverage: DryRunCoverage[]; durationMs: number }
      expect(printed).toMatchObject({ ok: true, output: 'seen', backend: 'ollama' })
      expect(printed.coverage).toHaveLength(44)
      expect(status(printed.coverage, 'package-lock.json')?.status).toBe('left-out')
      expect(stub.asked).toEqual(['POST /api/show', 'POST /api/chat'])
    } finally {
      await stub.close()
    }
  })

  it('a review’s generic path is fitted too', async () => {
    const review = new TempRepo()
    try {
      review.write('a.txt', 'one\n').commit('base')
      review.git('checkout', '-q', '-b', 'feature')
      review.write('package-lock.json', lines(50_000, 80, 'lock')).write('b.txt', 'two\n').commit('change')
      const options = { repoPath: review.path, base: 'main', backend: 'gemini', dryRun: true as const }
      await expect(reviewRelay(options)).rejects.toMatchObject({ code: 'ERR_TOO_LARGE' })
      const dryRun = await reviewRelay({ ...options, fit: true, onWarning: () => {} })
      expect(dryRun.coverage?.map((file) => [file.path, file.status])).toEqual([
        ['b.txt', 'whole'],
        ['package-lock.json', 'left-out'],
      ])
    } finally {
      review.remove()
    }
  })

  it('maxPromptBytes is the envelope’s budget: fitted to it, or with fit off refused naming it', async () => {
    const options = { prompt: 'Review', repoPath: repo.path, includeDiff: true, dryRun: true as const, onWarning: () => {} }
    const dryRun = await relay({ ...options, fit: true, maxPromptBytes: 60_000 })
    expect(dryRun.envelopeBytes).toBeLessThanOrEqual(60_000)
    expect(dryRun.envelopeBytes).toBeGreaterThan(40_000)
    expect(dryRun.coverage?.filter((file) => file.status === 'whole').length).toBeLessThan(40)
    // Past the contract's limit it means the limit.
    const whole = await relay({ ...options, fit: true })
    expect((await relay({ ...options, fit: true, maxPromptBytes: 2 ** 40 })).envelope).toBe(whole.envelope)
    const small = { prompt: 'Review', repoPath: repo.path, contextText: 'x'.repeat(2_000), dryRun: true as const }
    await expect(relay({ ...small, maxPromptBytes: 1_000 })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE', message: expect.stringMatching(/^Relay prompt is too large \(\d+ bytes; max 1000 bytes\)$/) })
    const cut = await relay({ ...small, maxPromptBytes: 1_000, fit: true, onWarning: () => {} })
    expect(cut.envelopeBytes).toBeLessThanOrEqual(1_000)
    expect(cut.envelope).toContain('[phone-a-friend: the context was cut to fit the envelope: ')
    await expect(relay({ ...small, maxPromptBytes: '1000' as unknown as number })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: 'The "options.maxPromptBytes" property must be of type number. Received type string ("1000")' })
    await expect(relay({ ...small, maxPromptBytes: 1.5 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE', message: 'The value of "options.maxPromptBytes" is out of range. It must be an integer >= 0. Received 1.5' })
  })

  it('the CLI fits by default, says so once on stderr and in --json, and --no-fit refuses', async () => {
    const fitted = await runCli(['--prompt', 'Review', '--include-diff', '--dry-run', '--json'], { cwd: repo.path })
    expect(fitted.code).toBe(0)
    const { dryRun } = JSON.parse(fitted.stdout) as { dryRun: DryRun }
    expect(dryRun.coverage?.length).toBe(44)
    expect(fitted.stderr.match(/fit: the diff was fitted/g)).toHaveLength(1)
    const text = await runCli(['--prompt', 'Review', '--include-diff', '--dry-run'], { cwd: repo.path })
    expect(text.stdout).toMatch(/fitted: {3}40 of 44 changed files whole/)
    expect(text.stdout).toContain('  left-out: package-lock.json (')
    const refused = await runCli(['--prompt', 'Review', '--include-diff', '--dry-run', '--no-fit'], { cwd: repo.path })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^Error \[ERR_TOO_LARGE\]: Git diff is too large/)
  })

  it('the CLI takes --max-prompt-bytes, a whole number', async () => {
    const fitted = await runCli(['--prompt', 'Review', '--include-diff', '--dry-run', '--json', '--max-prompt-bytes', '60000'], { cwd: repo.path })
    expect(fitted.code).toBe(0)
    expect((JSON.parse(fitted.stdout) as { dryRun: DryRun }).dryRun.envelopeBytes).toBeLessThanOrEqual(60_000)
    const bad = await runCli(['--prompt', 'Review', '--dry-run', '--max-prompt-bytes', '6e4'], { cwd: repo.path })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('invalid --max-prompt-bytes value "6e4": expected a whole number of bytes, like 100000')
  })
})
