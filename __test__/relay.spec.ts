import { execFileSync } from 'node:child_process'
import { symlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  BackendError,
  MAX_CONTEXT_FILE_BYTES,
  MAX_DIFF_BYTES,
  MAX_PROMPT_BYTES,
  RelayError,
  _resetRegistry,
  registerBackend,
  relay,
} from '@phone-a-friend/relay'
import { TempRepo, tempDir } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'

const HEADER = (repo: string): string =>
  'You are helping another coding agent by reviewing or advising on work in a local repository.\n' +
  `Repository path: ${repo}\n` +
  'Use the repository files for context when needed.\n' +
  'Respond with concise, actionable feedback.\n\n' +
  'Request:\n'

async function relayError(promise: Promise<unknown>): Promise<RelayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(RelayError)
  return error as RelayError
}

let repo: TempRepo
let mock: MockBackend

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  mock = new MockBackend('mock')
  registerBackend(mock)
})

afterEach(() => {
  repo.remove()
  delete process.env.PHONE_A_FRIEND_DEPTH
})

describe('order of checks and their messages', () => {
  it.each(['', '   ', '\u3000\n\t\uFEFF'])('a blank prompt %j is ERR_PROMPT_REQUIRED, checked first', async (prompt) => {
    const error = await relayError(relay({ prompt, repoPath: '/no/such/dir', timeoutSeconds: 0, backend: 'nope' }))
    expect(error).toMatchObject({ name: 'RelayError', code: 'ERR_PROMPT_REQUIRED', message: 'Prompt is required' })
  })

  it('a missing prompt is a blank one', async () => {
    const options = { repoPath: repo.path } as unknown as Parameters<typeof relay>[0]
    await expect(relay(options)).rejects.toThrow('Prompt is required')
  })

  it.each([0, -0, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '10' as unknown as number])(
    'timeout %s is ERR_INVALID_TIMEOUT, checked before the repository',
    async (timeoutSeconds) => {
      const error = await relayError(relay({ prompt: 'p', repoPath: '/no/such/dir', timeoutSeconds }))
      expect(error).toMatchObject({ code: 'ERR_INVALID_TIMEOUT', message: 'Timeout must be greater than zero' })
    },
  )

  it('fractional and huge timeouts are accepted', async () => {
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', timeoutSeconds: 0.25 })).resolves.toBe('mock answer')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', timeoutSeconds: 1e300 })).resolves.toBe('mock answer')
    expect(mock.runs.map((r) => r.timeoutSeconds)).toEqual([0.25, 1e300])
  })

  it('a repository that is missing or a file is ERR_INVALID_REPO with its absolute path', async () => {
    const missing = await relayError(relay({ prompt: 'p', repoPath: 'no/such/dir', backend: 'nope' }))
    expect(missing).toMatchObject({
      code: 'ERR_INVALID_REPO',
      message: `Repository path does not exist or is not a directory: ${resolve('no/such/dir')}`,
    })
    const file = join(repo.path, 'a.txt')
    await expect(relay({ prompt: 'p', repoPath: file })).rejects.toThrow(`Repository path does not exist or is not a directory: ${file}`)
  })

  it('an unknown backend is ERR_UNSUPPORTED_BACKEND listing the sorted names', async () => {
    registerBackend(new MockBackend('Zeta'))
    const error = await relayError(relay({ prompt: 'p', repoPath: repo.path, backend: 'nope', sandbox: 'bogus' as never }))
    expect(error).toMatchObject({
      code: 'ERR_UNSUPPORTED_BACKEND',
      message: 'Unsupported relay backend: nope. Supported: Zeta, antigravity, claude, codex, gemini, mock, ollama, opencode',
    })
  })

  it('a sandbox the backend does not allow is ERR_INVALID_SANDBOX listing the sorted modes', async () => {
    registerBackend(new MockBackend('strict', undefined, { allowed: ['workspace-write', 'read-only'] }))
    const error = await relayError(
      relay({ prompt: 'p', repoPath: repo.path, backend: 'strict', sandbox: 'danger-full-access', contextFile: 'x', contextText: 'y' }),
    )
    expect(error).toMatchObject({
      code: 'ERR_INVALID_SANDBOX',
      message: 'Invalid sandbox mode: danger-full-access. Allowed values: read-only, workspace-write',
    })
    await expect(relay({ prompt: 'p', repoPath: repo.path, sandbox: 'bogus' as never })).rejects.toThrow(
      'Invalid sandbox mode: bogus. Allowed values: danger-full-access, read-only, workspace-write',
    )
  })

  it('contextFile with non-blank contextText is ERR_CONTEXT_CONFLICT, before the file is opened', async () => {
    const error = await relayError(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: '/no/such/file', contextText: 'x' }))
    expect(error).toMatchObject({ code: 'ERR_CONTEXT_CONFLICT', message: 'Use either context_file or context_text, not both' })
    // Blank text is no conflict.
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: join(repo.path, 'a.txt'), contextText: ' \n' })).resolves.toBe(
      'mock answer',
    )
  })

  it('context files that are missing, not files or unreadable are ERR_CONTEXT_FILE', async () => {
    const dir = tempDir()
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'))
    const cases: Array<[string, string]> = [
      ['missing.txt', `Context file does not exist: ${resolve('missing.txt')}`],
      [join(dir, 'dangling'), `Context file does not exist: ${join(dir, 'dangling')}`],
      [dir, `Context path is not a file: ${dir}`],
      ['/dev/zero', 'Context path is not a file: /dev/zero'],
    ]
    for (const [contextFile, message] of cases) {
      const error = await relayError(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile }))
      expect(error).toMatchObject({ code: 'ERR_CONTEXT_FILE', message })
    }
    // A regular file whose read fails (EINVAL: it has no read), even for root.
    const unreadable = await relayError(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: '/proc/self/clear_refs' }))
    expect(unreadable.code).toBe('ERR_CONTEXT_FILE')
    expect(unreadable.message).toMatch(/^Failed reading context file: .+/)
    expect(mock.runs).toHaveLength(0)
  })

  it('a nested relay is ERR_DEPTH_LIMIT, checked after the size limits', async () => {
    process.env.PHONE_A_FRIEND_DEPTH = '1'
    await expect(relay({ prompt: 'x'.repeat(MAX_PROMPT_BYTES), repoPath: repo.path, backend: 'mock' })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE' })
    const error = await relayError(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock' }))
    expect(error).toMatchObject({ code: 'ERR_DEPTH_LIMIT', message: 'Relay depth limit reached; refusing nested relay invocation' })
    expect(mock.runs).toHaveLength(0)
  })
})

describe('depth guard', () => {
  it.each([
    [undefined, true],
    ['0', true],
    ['garbage', true],
    ['1abc', true],
    ['1', false],
    ['7', false],
  ])('PHONE_A_FRIEND_DEPTH=%s', async (depth, allowed) => {
    if (depth !== undefined) process.env.PHONE_A_FRIEND_DEPTH = depth
    const result = relay({ prompt: 'p', repoPath: repo.path, backend: 'mock' })
    if (allowed) {
      await expect(result).resolves.toBe('mock answer')
      expect(mock.runs[0].env.PHONE_A_FRIEND_DEPTH).toBe('1')
    } else {
      await expect(result).rejects.toMatchObject({ code: 'ERR_DEPTH_LIMIT' })
    }
    // The process's own environment is never written.
    expect(process.env.PHONE_A_FRIEND_DEPTH).toBe(depth)
  })

  it('the backend gets the whole environment as it was at the call', async () => {
    process.env.PAF_TEST_MARKER = 'visible'
    try {
      await relay({ prompt: 'p', repoPath: repo.path, backend: 'mock' })
    } finally {
      delete process.env.PAF_TEST_MARKER
    }
    expect(mock.runs[0].env).toMatchObject({ PAF_TEST_MARKER: 'visible', PATH: process.env.PATH })
  })
})

describe('the envelope', () => {
  it('holds the request alone, trimmed', async () => {
    await relay({ prompt: '  Is this right?\n', repoPath: repo.path, backend: 'mock' })
    expect(mock.runs[0]).toMatchObject({
      prompt: `${HEADER(repo.path)}Is this right?`,
      repoPath: repo.path,
      timeoutSeconds: 600,
      sandbox: 'read-only',
      model: null,
    })
  })

  it('adds context text and the diff in their sections', async () => {
    repo.write('a.txt', 'two\n')
    await relay({ prompt: 'Check', repoPath: repo.path, backend: 'mock', contextText: '\n notes \n', includeDiff: true, model: 'm1', sandbox: 'workspace-write' })
    const diff = repo.git('diff', 'HEAD', '--').trim()
    expect(mock.runs[0].prompt).toBe(`${HEADER(repo.path)}Check\n\nAdditional Context:\nnotes\n\nGit Diff:\n${diff}`)
    expect(mock.runs[0]).toMatchObject({ model: 'm1', sandbox: 'workspace-write' })
  })

  it('reads a context file relative to the working directory, BOM and all trimmed', async () => {
    repo.write('ctx.md', '\uFEFF# Notes\n\n')
    const cwd = process.cwd()
    process.chdir(repo.path)
    try {
      await relay({ prompt: 'Check', repoPath: '.', backend: 'mock', contextFile: 'ctx.md' })
    } finally {
      process.chdir(cwd)
    }
    expect(mock.runs[0].prompt).toBe(`${HEADER(repo.path)}Check\n\nAdditional Context:\n# Notes`)
  })
})

describe('the two-phase diff', () => {
  it('uses uncommitted changes first, then the last commit', async () => {
    repo.write('a.txt', 'two\n').commit('second')
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', includeDiff: true })
    expect(mock.runs[0].prompt).toContain('Git Diff:\ndiff --git a/a.txt b/a.txt')
    expect(mock.runs[0].prompt).toContain('-one\n+two')
    repo.write('a.txt', 'three\n')
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', includeDiff: true })
    expect(mock.runs[1].prompt).toContain('-two\n+three')
  })

  it('treats git failures as no diff', async () => {
    const plain = tempDir()
    await relay({ prompt: 'p', repoPath: plain, backend: 'mock', includeDiff: true })
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', includeDiff: true }) // one commit: no HEAD~1
    expect(mock.runs.map((r) => r.prompt.includes('Git Diff:'))).toEqual([false, false])
  })
})

/** Rewrites a.txt until `git diff HEAD` trimmed is exactly `size` bytes. */
function diffOfSize(size: number): void {
  let body = 'x'.repeat(size)
  for (let attempt = 0; attempt < 5; attempt++) {
    repo.write('a.txt', `${body}\n`)
    const actual = Buffer.byteLength(repo.git('diff', 'HEAD', '--').trim())
    if (actual === size) return
    body = 'x'.repeat(body.length + size - actual)
  }
  throw new Error(`could not make a diff of ${size} bytes`)
}

describe('limits at the boundary and one byte over', () => {
  it('context text: 200,000 bytes pass, 200,001 do not (UTF-8 bytes, after trimming)', async () => {
    const exact = '€'.repeat(MAX_CONTEXT_FILE_BYTES / 4) + 'x'.repeat(MAX_CONTEXT_FILE_BYTES / 4)
    expect(Buffer.byteLength(exact)).toBe(MAX_CONTEXT_FILE_BYTES)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextText: ` ${exact}\n` })).resolves.toBe('mock answer')
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextText: `${exact}x` })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: 'Context text is too large (200001 bytes; max 200000 bytes)',
    })
    // Over the limit, the size is still the trimmed text's, whitespace around it or not.
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextText: `\t ${exact}x\u3000\n` })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: 'Context text is too large (200001 bytes; max 200000 bytes)',
    })
    // Under the limit once trimmed, however much whitespace surrounds it: the text the backend
    // gets is the trimmed one.
    const padded = mock.runs.length
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextText: `${' '.repeat(8_000_000)}${exact}\n\t` })).resolves.toBe('mock answer')
    expect(mock.runs[padded]?.prompt.endsWith(`Additional Context:\n${exact}`)).toBe(true)
    // Measured where it is given, not copied first: 64 MB is refused with its size.
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextText: 'x'.repeat(64_000_000) })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: 'Context text is too large (64000000 bytes; max 200000 bytes)',
    })
  })

  it('context file: 200,000 bytes pass, 200,001 do not, and 50 MB is refused with its size', async () => {
    const dir = tempDir()
    const exact = join(dir, 'exact.txt')
    writeFileSync(exact, `\n${'c'.repeat(MAX_CONTEXT_FILE_BYTES)}\n\n`)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: exact })).resolves.toBe('mock answer')
    const over = join(dir, 'over.txt')
    writeFileSync(over, 'c'.repeat(MAX_CONTEXT_FILE_BYTES + 1))
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: over })).rejects.toThrow(
      'Context file is too large (200001 bytes; max 200000 bytes)',
    )
    const huge = join(dir, 'huge.txt')
    writeFileSync(huge, Buffer.alloc(50_000_000, 'z'))
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: huge })).rejects.toThrow(
      'Context file is too large (50000000 bytes; max 200000 bytes)',
    )
  })

  it('diff: 300,000 bytes pass, 300,001 do not', async () => {
    diffOfSize(MAX_DIFF_BYTES)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', includeDiff: true })).resolves.toBe('mock answer')
    diffOfSize(MAX_DIFF_BYTES + 1)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', includeDiff: true })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: 'Git diff is too large (300001 bytes; max 300000 bytes)',
    })
  })

  it('a diff of any size ends in ERR_TOO_LARGE with its exact trimmed size', async () => {
    repo.write('a.txt', 'y'.repeat(3_000_000) + '\n')
    const size = Buffer.byteLength(execFileSync('git', ['-C', repo.path, 'diff', 'HEAD', '--'], { maxBuffer: 1 << 30 }).toString().trim())
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'mock', includeDiff: true })).rejects.toThrow(
      `Git diff is too large (${size} bytes; max 300000 bytes)`,
    )
  })

  it('prompt envelope: 500,000 bytes pass, 500,001 do not', async () => {
    const room = MAX_PROMPT_BYTES - Buffer.byteLength(HEADER(repo.path))
    await relay({ prompt: 'p'.repeat(room), repoPath: repo.path, backend: 'mock' })
    expect(Buffer.byteLength(mock.runs[0].prompt)).toBe(MAX_PROMPT_BYTES)
    await expect(relay({ prompt: 'p'.repeat(room + 1), repoPath: repo.path, backend: 'mock' })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: 'Relay prompt is too large (500001 bytes; max 500000 bytes)',
    })
  })
})

describe('backend failures', () => {
  it('a BackendError becomes ERR_BACKEND_FAILED with the same message, the backend and the cause', async () => {
    const thrown = new BackendError('model overloaded')
    registerBackend(new MockBackend('failing', () => Promise.reject(thrown)))
    const error = await relayError(relay({ prompt: 'p', repoPath: repo.path, backend: 'failing' }))
    expect(error).toMatchObject({ code: 'ERR_BACKEND_FAILED', message: 'model overloaded', backend: 'failing' })
    expect(error.cause).toBe(thrown)
  })

  it('a subclass of BackendError counts as one', async () => {
    class CustomBackendError extends BackendError {}
    registerBackend(new MockBackend('failing', () => { throw new CustomBackendError('custom') }))
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'failing' })).rejects.toMatchObject({ code: 'ERR_BACKEND_FAILED', message: 'custom' })
  })

  it.each([
    ['a TypeError', new TypeError('bug in backend')],
    ['a RelayError', new RelayError('already coded', 'ERR_BACKEND_NO_OUTPUT')],
    ['a string', 'just a string'],
    ['undefined', undefined],
  ])('anything else thrown (%s) reaches the caller as the very same value', async (_, thrown) => {
    registerBackend(new MockBackend('odd', () => Promise.reject(thrown)))
    const caught = await relay({ prompt: 'p', repoPath: repo.path, backend: 'odd' }).then(
      () => 'resolved',
      (e: unknown) => ({ e }),
    )
    expect(caught).toEqual({ e: thrown })
    expect((caught as { e: unknown }).e).toBe(thrown)
  })

  it('a synchronous throw from run() is caught the same way', async () => {
    const thrown = new RangeError('sync')
    registerBackend({ name: 'sync', allowedSandboxes: ['read-only'], run() { throw thrown } })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'sync' })).rejects.toBe(thrown)
  })

  it('a run() that resolves a non-string is ERR_BACKEND_FAILED naming what it got', async () => {
    registerBackend({ name: 'numeric', allowedSandboxes: ['read-only'], run: async () => 42 as unknown as string })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'numeric' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      backend: 'numeric',
      message: 'Backend numeric run() resolved with type number (42); expected a string',
    })
  })

  it('run() is called as a method of its backend', async () => {
    const backend = {
      name: 'self',
      allowedSandboxes: ['read-only'] as const,
      greeting: 'hello from this',
      async run() {
        return this.greeting
      },
    }
    registerBackend(backend)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'self' })).resolves.toBe('hello from this')
  })
})
