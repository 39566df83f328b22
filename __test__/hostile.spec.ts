// Hostile input through the public API and the CLI: every option of the wrong type, odd numbers,
// NUL bytes and lone surrogates, context files that are not files, repositories that are not
// work trees, odd bases and backend names, JS backends that misbehave. Each case asserts the
// exact coded error (or answer); the last test checks that nothing was left behind.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, existsSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  BackendError,
  RelayError,
  _resetRegistry,
  detectDefaultBranch,
  gitDiffBase,
  registerBackend,
  relay,
  reviewRelay,
  type RelayErrorCode,
  type RelayOptions,
  type ReviewRelayOptions,
} from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { childrenOf, isAlive, processesWithEnv } from './support/processes.js'
import { TempRepo, tempDir } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'
import { runCli, type CliResult } from './support/run-cli.js'

// ---------------------------------------------------------------------------------------------
// Fixtures. Everything lives under ROOT. The relay's TMPDIR (RELAY_TMP) is used by nothing but the
// relay (and the CLIs it starts), so it must be empty at the end; fixtures are made with TMPDIR
// pointing at FIXTURES instead.

const ROOT = mkdtempSync(join(tmpdir(), 'paf-hostile-'))
const FIXTURES = join(ROOT, 'fixtures')
const RELAY_TMP = join(ROOT, 'relay-tmp')
/** Put in the environment of every process this file starts, so they can be found in /proc. */
const MARK_KEY = 'PAF_HOSTILE_MARK'
const MARK = `${process.pid}-${Date.now()}`
const SAVED_ENV = { ...process.env }

function fixture<T>(make: () => T): T {
  const saved = process.env.TMPDIR
  process.env.TMPDIR = FIXTURES
  try {
    return make()
  } finally {
    process.env.TMPDIR = saved
  }
}

let fake: FakeClis
let repo: TempRepo
let files: string
let mock: MockBackend
let childrenBefore: number[]
const uncaught: unknown[] = []
const onUncaught = (error: unknown): void => {
  uncaught.push(error)
}

beforeAll(() => {
  mkdirSync(FIXTURES)
  mkdirSync(RELAY_TMP)
  for (const key of Object.keys(process.env)) if (key.startsWith('PHONE_A_FRIEND_')) delete process.env[key]
  process.env[MARK_KEY] = MARK
  process.env.TMPDIR = RELAY_TMP
  fake = fixture(() => new FakeClis())
  repo = fixture(() => new TempRepo().write('a.txt', 'one\n').commit('first'))
  files = fixture(() => tempDir('paf-files-'))
  process.on('uncaughtException', onUncaught)
  process.on('unhandledRejection', onUncaught)
  childrenBefore = childrenOf(process.pid)
})

afterAll(() => {
  process.off('uncaughtException', onUncaught)
  process.off('unhandledRejection', onUncaught)
  fake.restore()
  _resetRegistry()
  for (const key of Object.keys(process.env)) if (!(key in SAVED_ENV)) delete process.env[key]
  Object.assign(process.env, SAVED_ENV)
  rmSync(ROOT, { recursive: true, force: true })
})

beforeEach(() => {
  _resetRegistry()
  mock = new MockBackend('mock')
  registerBackend(mock)
})

// ---------------------------------------------------------------------------------------------
// helpers

const HEADER =
  'You are helping another coding agent by reviewing or advising on work in a local repository.\n' +
  'Repository path: %REPO%\nUse the repository files for context when needed.\n' +
  'Respond with concise, actionable feedback.\n\nRequest:\n'

function envelope(repoPath: string, request: string, context = '', diff = ''): string {
  let text = HEADER.replace('%REPO%', repoPath) + request
  if (context) text += `\n\nAdditional Context:\n${context}`
  if (diff) text += `\n\nGit Diff:\n${diff}`
  return text
}

type Settled = { ok: true; value: string } | { ok: false; error: unknown }

/** Calls `start`, asserting it does not throw synchronously, and waits for the outcome. */
async function settle(start: () => Promise<string>): Promise<Settled> {
  let pending: Promise<string> | undefined
  expect(() => {
    pending = start()
  }).not.toThrow()
  expect(pending).toBeInstanceOf(Promise)
  return (pending as Promise<string>).then(
    (value): Settled => ({ ok: true, value }),
    (error: unknown): Settled => ({ ok: false, error }),
  )
}

async function rejection(start: () => Promise<string>): Promise<unknown> {
  const settled = await settle(start)
  if (settled.ok) expect.fail(`expected a rejection, got the answer ${JSON.stringify(settled.value)}`)
  return settled.error
}

async function expectTypeError(start: () => Promise<string>, message: string): Promise<void> {
  const error = await rejection(start)
  expect(error).toBeInstanceOf(TypeError)
  expect(error).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message })
}

async function expectRelayError(start: () => Promise<string>, code: RelayErrorCode, message: string, backend?: string): Promise<RelayError> {
  const error = await rejection(start)
  expect(error).toBeInstanceOf(RelayError)
  expect(error).toMatchObject({ name: 'RelayError', code, message })
  expect((error as RelayError).backend).toBe(backend)
  return error as RelayError
}

async function expectAnswer(start: () => Promise<string>, answer: string): Promise<void> {
  const settled = await settle(start)
  expect(settled).toEqual({ ok: true, value: answer })
}

/** What `run` throws (it must throw). */
function thrownBy(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return expect.fail('expected a synchronous throw')
}

/** `git -C repo <args>`'s stderr, trimmed: what the relay must quote as git's own words. */
function gitStderr(repoPath: string, args: string[]): string {
  const result = spawnSync('git', ['-C', repoPath, ...args], { encoding: 'utf8' })
  expect(result.status).not.toBe(0)
  return result.stderr.trim()
}

/** Live processes (not zombies) other than this one whose environment carries MARK. */
function markedProcesses(): number[] {
  return processesWithEnv(`${MARK_KEY}=${MARK}`)
}

type AnyRelayOptions = RelayOptions
type AnyReviewOptions = ReviewRelayOptions
const callRelay = (options: unknown) => (): Promise<string> => relay(options as AnyRelayOptions)
const callReview = (options: unknown) => (): Promise<string> => reviewRelay(options as AnyReviewOptions)

// ---------------------------------------------------------------------------------------------
// 1. wrong types

/** Values of the wrong type, with how the TypeError describes them. */
const WRONG_TYPES: Array<[label: string, value: unknown, shown: string]> = [
  ['a number', 5, 'type number (5)'],
  ['an object', { a: 1 }, 'an instance of Object'],
  ['an array', ['read-only'], 'an instance of Array'],
  ['a null-prototype object', Object.create(null) as unknown, 'an object'],
  ['a boxed string', new String('p'), 'an instance of String'],
  ['a symbol', Symbol('hostile'), 'type symbol (Symbol(hostile))'],
  ['a bigint', 7n, 'type bigint (7n)'],
  ['a named function', function hostileFn(): void {}, 'function hostileFn'],
  ['an anonymous function', [(): number => 1][0], 'function <anonymous>'],
  ['a boolean', true, 'type boolean (true)'],
]

const NOT_A_STRING = WRONG_TYPES
const NOT_A_NUMBER = WRONG_TYPES.filter(([label]) => label !== 'a number')
const NOT_A_BOOLEAN = [...WRONG_TYPES.filter(([label]) => label !== 'a boolean'), ['a string', 'true', 'type string ("true")'] as [string, unknown, string]]
const NOT_A_SIGNAL = [...WRONG_TYPES, ['an AbortController', new AbortController(), 'an instance of AbortController'] as [string, unknown, string]]

const RELAY_STRING_OPTIONS = ['prompt', 'repoPath', 'backend', 'contextFile', 'contextText', 'model', 'sandbox'] as const
const REVIEW_STRING_OPTIONS = ['repoPath', 'backend', 'base', 'prompt', 'model', 'sandbox'] as const

function cross<K extends string>(keys: readonly K[], values: Array<[string, unknown, string]>): Array<[K, string, unknown, string]> {
  return keys.flatMap((key) => values.map(([label, value, shown]): [K, string, unknown, string] => [key, label, value, shown]))
}

describe('relay(): every option of the wrong type rejects with ERR_INVALID_ARG_TYPE, never throws', () => {
  const valid = (): RelayOptions => ({ prompt: 'p', repoPath: repo.path, backend: 'mock' })

  it.each(cross(RELAY_STRING_OPTIONS, NOT_A_STRING))('options.%s as %s', async (key, _label, value, shown) => {
    await expectTypeError(callRelay({ ...valid(), [key]: value }), `The "options.${key}" property must be of type string. Received ${shown}`)
    expect(mock.runs).toHaveLength(0)
  })

  it.each(NOT_A_BOOLEAN)('options.includeDiff as %s', async (_label, value, shown) => {
    await expectTypeError(callRelay({ ...valid(), includeDiff: value }), `The "options.includeDiff" property must be of type boolean. Received ${shown}`)
    expect(mock.runs).toHaveLength(0)
  })

  it.each(NOT_A_SIGNAL)('options.signal as %s', async (_label, value, shown) => {
    await expectTypeError(callRelay({ ...valid(), signal: value }), `The "options.signal" property must be an instance of AbortSignal. Received ${shown}`)
    expect(mock.runs).toHaveLength(0)
  })

  it.each([...NOT_A_NUMBER, ['a numeric string', '10', '']] as Array<[string, unknown, string]>)(
    'options.timeoutSeconds as %s is ERR_INVALID_TIMEOUT (a RelayError), checked before the repository',
    async (_label, value) => {
      await expectRelayError(callRelay({ ...valid(), repoPath: '/no/such/dir', timeoutSeconds: value }), 'ERR_INVALID_TIMEOUT', 'Timeout must be greater than zero')
      expect(mock.runs).toHaveLength(0)
    },
  )

  it('a type error wins over every RelayError check (blank prompt, bad timeout, missing repo)', async () => {
    await expectTypeError(
      callRelay({ prompt: ' ', repoPath: '/no/such/dir', timeoutSeconds: -1, backend: 'nope', model: 5 }),
      'The "options.model" property must be of type string. Received type number (5)',
    )
  })

  it('null counts as absent for every optional option', async () => {
    const nulls = { backend: null, contextFile: null, contextText: null, includeDiff: null, timeoutSeconds: null, model: null, sandbox: null, signal: null }
    registerBackend(new MockBackend('codex'))
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, ...nulls }), 'mock answer')
  })

  it.each([
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['a string', 'prompt', 'type string ("prompt")'],
    ['a number', 5, 'type number (5)'],
    ['a boolean', false, 'type boolean (false)'],
    ['a bigint', 1n, 'type bigint (1n)'],
    ['a symbol', Symbol('o'), 'type symbol (Symbol(o))'],
    ['a function', function options(): void {}, 'function options'],
  ] as Array<[string, unknown, string]>)('options as %s', async (_label, value, shown) => {
    const message = `The "options" argument must be of type object. Received ${shown}`
    await expectTypeError(callRelay(value), message)
    await expectTypeError(callReview(value), message)
  })

  it('an array as options is an object without a repoPath', async () => {
    await expectTypeError(callRelay([]), 'The "options.repoPath" property must be of type string. Received undefined')
  })

  it('a getter that throws rejects with the very same value', async () => {
    const thrown = new RangeError('getter exploded')
    const options = {
      repoPath: repo.path,
      get prompt(): string {
        throw thrown
      },
    }
    expect(await rejection(callRelay(options))).toBe(thrown)
    expect(await rejection(callReview({ get repoPath(): string { throw thrown } }))).toBe(thrown)
  })
})

describe('reviewRelay(): every option of the wrong type rejects with ERR_INVALID_ARG_TYPE', () => {
  const valid = (): ReviewRelayOptions => ({ repoPath: repo.path, backend: 'mock', base: 'HEAD' })

  it.each(cross(REVIEW_STRING_OPTIONS, NOT_A_STRING))('options.%s as %s', async (key, _label, value, shown) => {
    await expectTypeError(callReview({ ...valid(), [key]: value }), `The "options.${key}" property must be of type string. Received ${shown}`)
    expect(mock.runs).toHaveLength(0)
  })

  it.each(NOT_A_SIGNAL)('options.signal as %s', async (_label, value, shown) => {
    await expectTypeError(callReview({ ...valid(), signal: value }), `The "options.signal" property must be an instance of AbortSignal. Received ${shown}`)
  })

  it.each(NOT_A_NUMBER)('options.timeoutSeconds as %s is ERR_INVALID_TIMEOUT', async (_label, value) => {
    await expectRelayError(callReview({ ...valid(), repoPath: '/no/such/dir', timeoutSeconds: value }), 'ERR_INVALID_TIMEOUT', 'Timeout must be greater than zero')
    expect(mock.runs).toHaveLength(0)
  })
})

// Node's own ERR_INVALID_ARG_TYPE, which the message copies, says "Received type number (NaN)";
// JSON.stringify would have said "(null)".
describe('numbers that JSON cannot show, in a TypeError message', () => {
  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
    ['-0', -0],
  ] as Array<[string, number]>)('options.prompt as %s says so', async (shown, value) => {
    await expectTypeError(callRelay({ prompt: value, repoPath: repo.path }), `The "options.prompt" property must be of type string. Received type number (${shown})`)
  })

  it('whatever it shows, a NaN prompt is still a TypeError with the right code', async () => {
    const error = await rejection(callRelay({ prompt: Number.NaN, repoPath: repo.path, backend: 'mock' }))
    expect(error).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
    expect((error as Error).message).toMatch(/^The "options\.prompt" property must be of type string\. Received type number \(/)
    expect(mock.runs).toHaveLength(0)
  })
})

// ---------------------------------------------------------------------------------------------
// 2. numbers

describe('timeouts', () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -0, -1, -Number.MIN_VALUE, -1e300])(
    'timeoutSeconds %s is ERR_INVALID_TIMEOUT for relay() and reviewRelay(), before the repository',
    async (timeoutSeconds) => {
      await expectRelayError(callRelay({ prompt: 'p', repoPath: '/no/such/dir', timeoutSeconds }), 'ERR_INVALID_TIMEOUT', 'Timeout must be greater than zero')
      await expectRelayError(callReview({ repoPath: '/no/such/dir', timeoutSeconds }), 'ERR_INVALID_TIMEOUT', 'Timeout must be greater than zero')
    },
  )

  it.each([1e300, Number.MAX_VALUE, 0.25, 1 / 3, 600.5])('timeoutSeconds %s is accepted and reaches the backend unchanged', async (timeoutSeconds) => {
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', timeoutSeconds }), 'mock answer')
    await expectAnswer(callReview({ repoPath: repo.path, backend: 'mock', base: 'HEAD', timeoutSeconds }), 'mock answer')
    expect(mock.runs.map((run) => run.timeoutSeconds)).toEqual([timeoutSeconds, timeoutSeconds])
  })

  // The deadline bounds preparation too: a review's generic path runs git, which no timeout this
  // short leaves time for; a relay without a diff or a context file has nothing to prepare.
  it.each([
    [1e-7, '1e-7'],
    [Number.MIN_VALUE, '5e-324'],
  ])('timeoutSeconds %s is accepted: it reaches a relay’s backend unchanged, a review’s git times out', async (timeoutSeconds, printed) => {
    // Its answer comes after the deadline: too late, whatever it says.
    await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', timeoutSeconds }), 'ERR_BACKEND_TIMEOUT', `mock timed out after ${printed}s`, 'mock')
    await expectRelayError(
      callReview({ repoPath: repo.path, backend: 'mock', base: 'HEAD', timeoutSeconds }),
      'ERR_TIMEOUT',
      `Relay timed out after ${printed}s while running git diff`,
    )
    expect(mock.runs.map((run) => run.timeoutSeconds)).toEqual([timeoutSeconds])
  })

  it('a timeout of 1e-7 s ends a CLI at once, printed as JavaScript prints it, and removes the temp folder', async () => {
    fake.mode('hang-with-grandchild')
    await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, timeoutSeconds: 1e-7 }), 'ERR_BACKEND_TIMEOUT', 'codex exec timed out after 1e-7s', 'codex')
    expect(readdirSync(RELAY_TMP)).toEqual([])
  })

  it('a fractional timeout is printed in full (0.1 + 0.2)', async () => {
    fake.mode('hang-with-grandchild')
    const started = Date.now()
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, backend: 'gemini', timeoutSeconds: 0.1 + 0.2 }),
      'ERR_BACKEND_TIMEOUT',
      'gemini timed out after 0.30000000000000004s',
      'gemini',
    )
    expect(Date.now() - started).toBeLessThan(3_000)
  })
})

// ---------------------------------------------------------------------------------------------
// 3. NUL bytes and lone surrogates

describe('NUL bytes and lone surrogates', () => {
  const PROMPT = 'a\0b\uD800c\uDC00d \uD83D\uDE00 \uDBFF'
  const RECEIVED = 'a\0b\uFFFDc\uFFFDd \uD83D\uDE00 \uFFFD'

  it('a JS backend receives NUL unchanged and each lone surrogate as U+FFFD (prompt, context, model)', async () => {
    await expectAnswer(callRelay({ prompt: `\n${PROMPT}\n`, repoPath: repo.path, backend: 'mock', contextText: '\0\uDFFF', model: 'm\uD800\0' }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(repo.path, RECEIVED, '\0\uFFFD'))
    expect(mock.runs[0].model).toBe('m\uFFFD\0')
  })

  it('a prompt of a NUL alone, or of U+0085 (not JS white space), is not blank', async () => {
    await expectAnswer(callRelay({ prompt: '\0', repoPath: repo.path, backend: 'mock' }), 'mock answer')
    await expectAnswer(callRelay({ prompt: ' \u0085 ', repoPath: repo.path, backend: 'mock' }), 'mock answer')
    expect(mock.runs.map((run) => run.prompt)).toEqual([envelope(repo.path, '\0'), envelope(repo.path, '\u0085')])
  })

  it('a CLI backend gets the same bytes on stdin: 0x00 kept, EF BF BD for each lone surrogate', async () => {
    fake.mode('answer')
    await expectAnswer(callRelay({ prompt: PROMPT, repoPath: repo.path }), 'file answer')
    const stdin = readFileSync(join(fake.log, 'stdin'))
    expect(stdin.equals(Buffer.from(envelope(repo.path, RECEIVED)))).toBe(true)
    expect(stdin.includes(Buffer.from([0x61, 0x00, 0x62, 0xef, 0xbf, 0xbd, 0x63]))).toBe(true)
    expect(readdirSync(RELAY_TMP)).toEqual([])
  })

  it('an answer from a JS backend comes back with NUL kept and lone surrogates replaced', async () => {
    registerBackend(new MockBackend('echo', () => 'x\0y\uD800'))
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'echo' }), 'x\0y\uFFFD')
  })

  it('a NUL in a path is a missing repository or context file, named with the NUL', async () => {
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: `${repo.path}\0`, backend: 'mock' }),
      'ERR_INVALID_REPO',
      `Repository path does not exist or is not a directory: ${repo.path}\0`,
    )
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: `${repo.path}/a.txt\0` }),
      'ERR_CONTEXT_FILE',
      `Context file does not exist: ${repo.path}/a.txt\0`,
    )
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: `${repo.path}/\uD800`, backend: 'mock' }),
      'ERR_INVALID_REPO',
      `Repository path does not exist or is not a directory: ${repo.path}/\uFFFD`,
    )
  })

  it('a NUL in a CLI argument (the model) fails the spawn as ERR_BACKEND_FAILED and leaves no temp folder', async () => {
    fake.mode('answer')
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, model: 'gpt\0x' }),
      'ERR_BACKEND_FAILED',
      'codex exec could not be run: nul byte found in provided data',
      'codex',
    )
    expect(readdirSync(RELAY_TMP)).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------
// 4. context files

describe('context files that are not plain files', () => {
  it('a FIFO is refused as not a file, without opening it (no hang), also through a symlink', async () => {
    const fifo = join(files, 'fifo')
    execFileSync('mkfifo', [fifo])
    symlinkSync(fifo, join(files, 'fifo-link'))
    for (const contextFile of [fifo, join(files, 'fifo-link')]) {
      const started = Date.now()
      await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile }), 'ERR_CONTEXT_FILE', `Context path is not a file: ${contextFile}`)
      expect(Date.now() - started).toBeLessThan(2_000)
    }
    expect(mock.runs).toHaveLength(0)
  }, 5_000)

  it.each([
    ['/dev/zero', (): string => '/dev/zero', 'Context path is not a file: /dev/zero'],
    ['/dev/null', (): string => '/dev/null', 'Context path is not a file: /dev/null'],
    ['a directory', (): string => files, 'Context path is not a file: %P'],
    ['a dangling symlink', (): string => link('dangling', join(files, 'nowhere')), 'Context file does not exist: %P'],
    ['a symlink loop', (): string => link('loop', join(files, 'loop')), 'Context file does not exist: %P'],
    ['a regular file whose read fails (/proc/self/clear_refs: EINVAL, even for root)', (): string => '/proc/self/clear_refs', 'Failed reading context file: Invalid argument (os error 22): /proc/self/clear_refs'],
    ["/proc/self/mem (a process's memory)", (): string => '/proc/self/mem', "Context file refused: it is a process's environment or memory, which is never sent: /proc/self/mem"],
    ["a link to /proc/self/environ (a process's environment)", (): string => link('environ', '/proc/self/environ'), "Context file refused: it is a process's environment or memory, which is never sent: %P"],
  ] as Array<[string, () => string, string]>)('%s is ERR_CONTEXT_FILE', async (_label, make, message) => {
    const contextFile = make()
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile }),
      'ERR_CONTEXT_FILE',
      message.replace('%P', contextFile),
    )
    expect(mock.runs).toHaveLength(0)
  })

  it('a path is resolved lexically, as path.resolve() does: "a.txt/" and "x/../a.txt" read a.txt', async () => {
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: `${repo.path}/a.txt/` }), 'mock answer')
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: `${repo.path}/nowhere/../a.txt` }), 'mock answer')
    expect(mock.runs.map((run) => run.prompt)).toEqual([envelope(repo.path, 'p', 'one'), envelope(repo.path, 'p', 'one')])
  })

  it('a relative context path is resolved against the working directory in the message', async () => {
    const cwd = process.cwd()
    process.chdir(files)
    try {
      await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: 'sub/../nowhere.txt' }), 'ERR_CONTEXT_FILE', `Context file does not exist: ${files}/nowhere.txt`)
    } finally {
      process.chdir(cwd)
    }
  })
})

function link(name: string, target: string): string {
  const path = join(files, name)
  if (!existsSync(path)) symlinkSync(target, path)
  return path
}

function contextFile(name: string, bytes: Buffer | string): string {
  const path = join(files, name)
  writeFileSync(path, bytes)
  return path
}

describe('context files with odd bytes, read as JavaScript would read them', () => {
  it.each([
    ['invalid UTF-8 sequences', Buffer.from([0x20, 0x68, 0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82, 0x20, 0xed, 0xa0, 0x80, 0x21, 0xf0, 0x9f, 0x98])],
    ['a BOM then text', Buffer.from('\uFEFF\uFEFF  # Notes \u3000\n')],
    ['NUL bytes', Buffer.from('\0a\0b\0')],
    ['a 4-byte character across the 64 KiB read boundary', Buffer.from(`${'a'.repeat(65_534)}\uD83D\uDE00b`)],
    ['a truncated sequence at the 64 KiB read boundary', Buffer.concat([Buffer.alloc(65_535, 'a'), Buffer.from([0xf0, 0x9f]), Buffer.from('z')])],
  ] as Array<[string, Buffer]>)('%s: the envelope holds what Buffer#toString() gives, trimmed', async (label, bytes) => {
    const path = contextFile(label.replace(/\W+/g, '-'), bytes)
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: path }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(repo.path, 'p', bytes.toString('utf8').trim()))
  })

  it('a file of a BOM and white space only adds no context section', async () => {
    const path = contextFile('bom-only', '\uFEFF \n\t\u2028')
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: path }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(repo.path, 'p'))
  })

  it('sizes count the decoded text: 66,666 bytes of 0xFF pass (199,998), 66,667 do not (200,001)', async () => {
    const fits = Buffer.alloc(66_666, 0xff)
    const over = Buffer.alloc(66_667, 0xff)
    expect(Buffer.byteLength(fits.toString('utf8'))).toBe(199_998)
    expect(Buffer.byteLength(over.toString('utf8'))).toBe(200_001)
    await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: contextFile('ff-fits', fits) }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(repo.path, 'p', '\uFFFD'.repeat(66_666)))
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextFile: contextFile('ff-over', over) }),
      'ERR_TOO_LARGE',
      'Context file is too large (200001 bytes; max 200000 bytes)',
    )
    // The same rule for inline text: each lone surrogate counts as the 3 bytes of U+FFFD.
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, backend: 'mock', contextText: '\uDC00'.repeat(66_667) }),
      'ERR_TOO_LARGE',
      'Context text is too large (200001 bytes; max 200000 bytes)',
    )
  })
})

// ---------------------------------------------------------------------------------------------
// 5. repositories

describe('repositories that are not ordinary work trees', () => {
  let plain: string
  let bare: string
  let detached: TempRepo

  beforeAll(() => {
    plain = fixture(() => tempDir('paf-plain-'))
    bare = fixture(() => tempDir('paf-bare-'))
    execFileSync('git', ['init', '-q', '--bare', bare])
    detached = fixture(() => new TempRepo().write('a.txt', 'one\n').commit('first'))
    detached.git('checkout', '-q', '--detach')
    detached.write('b.txt', 'on a detached head\n').commit('detached')
  })

  afterAll(() => {
    detached.remove()
  })

  it('a file (absolute or relative) is ERR_INVALID_REPO naming the absolute path', async () => {
    const file = join(repo.path, 'a.txt')
    await expectRelayError(callRelay({ prompt: 'p', repoPath: file, backend: 'mock' }), 'ERR_INVALID_REPO', `Repository path does not exist or is not a directory: ${file}`)
    await expectRelayError(callReview({ repoPath: file, backend: 'mock' }), 'ERR_INVALID_REPO', `Repository path does not exist or is not a directory: ${file}`)
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: '/dev/null/x', backend: 'mock' }),
      'ERR_INVALID_REPO',
      'Repository path does not exist or is not a directory: /dev/null/x',
    )
  })

  it('a folder that is not a repository works; includeDiff adds no diff section', async () => {
    await expectAnswer(callRelay({ prompt: 'p', repoPath: plain, backend: 'mock', includeDiff: true }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(plain, 'p'))
  })

  it('a bare repository works for relay() without a diff, and reviewRelay() fails with git’s words', async () => {
    await expectAnswer(callRelay({ prompt: 'p', repoPath: bare, backend: 'mock', includeDiff: true }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(bare, 'p'))
    expect(detectDefaultBranch(bare)).toBe('HEAD~1')
    await expectRelayError(
      callReview({ repoPath: bare, backend: 'mock' }),
      'ERR_GIT_DIFF',
      `Failed to collect git diff against HEAD~1: ${gitStderr(bare, ['diff', 'HEAD~1...HEAD', '--'])}`,
    )
    expect(mock.runs).toHaveLength(1)
  })

  it('a detached HEAD: relay() diffs the last commit, reviewRelay() diffs against main', async () => {
    const lastCommit = detached.git('diff', 'HEAD~1', 'HEAD', '--').trim()
    expect(lastCommit).toContain('+on a detached head')
    await expectAnswer(callRelay({ prompt: 'p', repoPath: detached.path, backend: 'mock', includeDiff: true }), 'mock answer')
    expect(mock.runs[0].prompt).toBe(envelope(detached.path, 'p', '', lastCommit))
    expect(detectDefaultBranch(detached.path)).toBe('main')
    await expectAnswer(callReview({ repoPath: detached.path, backend: 'mock' }), 'mock answer')
    expect(mock.runs[1].prompt).toBe(envelope(detached.path, 'Review the following changes.', '', detached.git('diff', 'main...HEAD', '--').trim()))
  })
})

describe('review bases', () => {
  it.each(['no-such-branch', 'has space', 'ünïcödé', 'HEAD~99', 'main..HEAD'])('a base that does not resolve (%j) is ERR_GIT_DIFF with git’s words', async (base) => {
    const message = `Failed to collect git diff against ${base}: ${gitStderr(repo.path, ['diff', `${base}...HEAD`, '--'])}`
    await expectRelayError(callReview({ repoPath: repo.path, backend: 'mock', base }), 'ERR_GIT_DIFF', message)
    expect(thrownBy(() => gitDiffBase(repo.path, base))).toMatchObject({ name: 'RelayError', code: 'ERR_GIT_DIFF', message })
    expect(mock.runs).toHaveLength(0)
  })

  it.each(['-', '-p', '--no-index', '--output=%F'])('a base starting with "-" (%s) is refused before git or review() runs', async (pattern) => {
    const target = join(files, `clobbered-${pattern.length}`)
    const base = pattern.replace('%F', target)
    const message = `Failed to collect git diff against ${base}: a base must not begin with '-' (git would read it as an option)`
    const native = new MockBackend('native', undefined, { review: () => 'should not run' })
    registerBackend(native)
    await expectRelayError(callReview({ repoPath: repo.path, backend: 'native', base }), 'ERR_GIT_DIFF', message)
    await expectRelayError(callReview({ repoPath: repo.path, backend: 'mock', base, prompt: 'x' }), 'ERR_GIT_DIFF', message)
    expect(thrownBy(() => gitDiffBase(repo.path, base))).toMatchObject({ name: 'RelayError', code: 'ERR_GIT_DIFF', message })
    expect(native.reviews).toHaveLength(0)
    expect(native.runs).toHaveLength(0)
    expect(mock.runs).toHaveLength(0)
    expect(existsSync(target)).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------
// 6. backend names

describe('backend names with odd characters', () => {
  const ODD = ['', ' ', 'two words', 'bäckend', 'ｃｏｄｅｘ', '🤖', '../x', '../../bin/sh', 'CODEX', 'codex ', 'a\0b', '\u200Bcodex']

  it.each(ODD)('%j is ERR_UNSUPPORTED_BACKEND listing the names, for relay() and reviewRelay()', async (backend) => {
    const message = `Unsupported relay backend: ${backend}. Supported: antigravity, claude, codex, gemini, mock, ollama, opencode`
    await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend }), 'ERR_UNSUPPORTED_BACKEND', message)
    await expectRelayError(callReview({ repoPath: repo.path, backend }), 'ERR_UNSUPPORTED_BACKEND', message)
    expect(mock.runs).toHaveLength(0)
  })

  it('odd names can be registered, are reached exactly, and sort by UTF-16 code units', async () => {
    for (const name of ['🤖', 'ｚ', ' ', '../x', 'two words']) registerBackend(new MockBackend(name, () => `answer of ${name}`))
    for (const name of ['🤖', 'ｚ', ' ', '../x', 'two words']) await expectAnswer(callRelay({ prompt: 'p', repoPath: repo.path, backend: name }), `answer of ${name}`)
    await expectRelayError(
      callRelay({ prompt: 'p', repoPath: repo.path, backend: '🤖 ' }),
      'ERR_UNSUPPORTED_BACKEND',
      'Unsupported relay backend: 🤖 . Supported:  , ../x, antigravity, claude, codex, gemini, mock, ollama, opencode, two words, 🤖, ｚ',
    )
    expect(thrownBy(() => registerBackend(new MockBackend('')))).toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
      message: 'The "backend.name" property must be a non-empty string. Received type string ("")',
    })
  })
})

// ---------------------------------------------------------------------------------------------
// 7. JS backends that misbehave

describe('JS backends that misbehave', () => {
  it.each([
    ['a number', 42, 'type number (42)'],
    ['an object', { answer: 'x' }, 'an instance of Object'],
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['a boxed string', new String('x'), 'an instance of String'],
    ['a symbol', Symbol('answer'), 'type symbol (Symbol(answer))'],
    ['a bigint', 9n, 'type bigint (9n)'],
  ] as Array<[string, unknown, string]>)('run() resolving %s is ERR_BACKEND_FAILED naming what it got', async (_label, value, shown) => {
    registerBackend(new MockBackend('odd', () => value as string))
    await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'odd' }), 'ERR_BACKEND_FAILED', `Backend odd run() resolved with ${shown}; expected a string`, 'odd')
    // The generic review path goes through run() too.
    await expectRelayError(callReview({ repoPath: repo.path, backend: 'odd', base: 'HEAD' }), 'ERR_BACKEND_FAILED', `Backend odd run() resolved with ${shown}; expected a string`, 'odd')
  })

  it('run() that never settles is given up 1 s after its timeout (0.2 s) with ERR_BACKEND_TIMEOUT', async () => {
    registerBackend(new MockBackend('hang', () => new Promise<string>(() => undefined)))
    const started = Date.now()
    const [viaRelay, viaReview] = await Promise.all([
      expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'hang', timeoutSeconds: 0.2 }), 'ERR_BACKEND_TIMEOUT', 'hang timed out after 0.2s', 'hang'),
      expectRelayError(callReview({ repoPath: repo.path, backend: 'hang', base: 'HEAD', timeoutSeconds: 0.2 }), 'ERR_BACKEND_TIMEOUT', 'hang timed out after 0.2s', 'hang'),
    ])
    const elapsed = Date.now() - started
    expect(elapsed).toBeGreaterThanOrEqual(1_150)
    expect(elapsed).toBeLessThan(3_000)
    expect(viaRelay.cause).toMatchObject({ name: 'BackendError', message: 'hang timed out after 0.2s' })
    expect(viaReview.cause).toMatchObject({ name: 'BackendError', message: 'hang timed out after 0.2s' })
  })

  it('run() that throws synchronously: a BackendError is coded, anything else comes back as the same value', async () => {
    const backendError = new BackendError('sync backend error')
    registerBackend({ name: 'sync-backend-error', allowedSandboxes: ['read-only'], run(): Promise<string> { throw backendError } })
    const coded = await expectRelayError(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'sync-backend-error' }), 'ERR_BACKEND_FAILED', 'sync backend error', 'sync-backend-error')
    expect(coded.cause).toBe(backendError)
    for (const thrown of [new TypeError('sync type error'), 42, null, Symbol('thrown')]) {
      registerBackend({ name: 'sync-other', allowedSandboxes: ['read-only'], run(): Promise<string> { throw thrown } })
      expect(await rejection(callRelay({ prompt: 'p', repoPath: repo.path, backend: 'sync-other' }))).toBe(thrown)
    }
  })

})

// ---------------------------------------------------------------------------------------------
// 8. the same through the CLI

describe('the CLI, for a representative subset', () => {
  const cli = (args: string[], options: { cwd?: string; input?: string; env?: Record<string, string> } = {}): Promise<CliResult> =>
    runCli(args, { env: { ...process.env, ...options.env }, cwd: options.cwd, input: options.input })
  /** What the CLI prints for a failure; a backend's names it after the code. */
  const failed = (code: string, message: string, backend?: string, hint?: string): CliResult => ({
    code: 1,
    signal: null,
    stdout: '',
    stderr: `Error [${code}]${backend === undefined ? '' : ` (${backend})`}: ${message}\n${hint === undefined ? '' : `Hint: ${hint}\n`}`,
  })
  const SECONDS_HINT = "timeoutSeconds (the CLI's --timeout) takes a number of seconds greater than zero, such as 30 or 2.5; a string such as '30', NaN or Infinity is not one"

  it.each([['0'], ['=-0'], ['1e999'], ['=-5']])('--timeout%s is ERR_INVALID_TIMEOUT', async (value) => {
    const args = value.startsWith('=') ? [`--timeout${value}`] : ['--timeout', value]
    expect(await cli(['--prompt', 'p', '--repo', '/no/such/dir', ...args])).toEqual(failed('ERR_INVALID_TIMEOUT', 'Timeout must be greater than zero', undefined, SECONDS_HINT))
  })

  it.each([['NaN'], ['Infinity'], ['=-Infinity'], [''], ['soon']])('--timeout%s, not a number, is a usage error', async (value) => {
    const args = value.startsWith('=') ? [`--timeout${value}`] : ['--timeout', value]
    const result = await cli(['--prompt', 'p', '--repo', '/no/such/dir', ...args])
    expect(result).toMatchObject({ code: 2, stdout: '' })
    expect(result.stderr.split('\n')[0]).toBe(`phone-a-friend: invalid --timeout value ${JSON.stringify(value.replace(/^=/, ''))}: expected a number of seconds, like 30 or 2.5`)
  })

  it.each(['1e300', '0.25', '600.5'])('--timeout %s is accepted', async (value) => {
    fake.mode('answer')
    expect(await cli(['--prompt', 'p', '--repo', repo.path, '--timeout', value])).toEqual({ code: 0, signal: null, stdout: 'file answer\n', stderr: '' })
  })

  it('a prompt on stdin keeps its NUL bytes and turns broken text into U+FFFD; so does a lone surrogate in argv', async () => {
    fake.mode('answer')
    expect(await cli(['--prompt', '-', '--repo', repo.path], { input: 'a\0b\uD800c\n' })).toMatchObject({ code: 0, stdout: 'file answer\n' })
    expect(readFileSync(join(fake.log, 'stdin')).equals(Buffer.from(envelope(repo.path, 'a\0b\uFFFDc')))).toBe(true)
    expect(await cli(['--prompt', 'x\uDC00y', '--repo', repo.path])).toMatchObject({ code: 0, stdout: 'file answer\n' })
    expect(fake.read('stdin')).toBe(envelope(repo.path, 'x\uFFFDy'))
  })

  it.each([
    ['a FIFO', (): string => fifoFor('cli-fifo'), 'Context path is not a file: %P'],
    ['/dev/zero', (): string => '/dev/zero', 'Context path is not a file: /dev/zero'],
    ['a directory', (): string => files, 'Context path is not a file: %P'],
    ['a dangling symlink', (): string => link('cli-dangling', join(files, 'nothing')), 'Context file does not exist: %P'],
    ['/proc/self/clear_refs', (): string => '/proc/self/clear_refs', 'Failed reading context file: Invalid argument (os error 22): /proc/self/clear_refs'],
    ['/proc/self/mem', (): string => '/proc/self/mem', "Context file refused: it is a process's environment or memory, which is never sent: /proc/self/mem"],
  ] as Array<[string, () => string, string]>)('--context-file %s is ERR_CONTEXT_FILE', async (_label, make, message) => {
    const path = make()
    expect(await cli(['--prompt', 'p', '--repo', repo.path, '--context-file', path])).toEqual(failed('ERR_CONTEXT_FILE', message.replace('%P', path)))
  })

  it('--context-file with non-UTF-8 bytes and a BOM reaches the backend decoded and trimmed', async () => {
    fake.mode('answer')
    const bytes = Buffer.concat([Buffer.from('\uFEFF ctx '), Buffer.from([0xff, 0xc3]), Buffer.from(' end\n')])
    const path = contextFile('cli-bytes', bytes)
    expect(await cli(['--prompt', 'p', '--repo', repo.path, '--context-file', path])).toMatchObject({ code: 0, stdout: 'file answer\n' })
    expect(fake.read('stdin')).toBe(envelope(repo.path, 'p', 'ctx \uFFFD\uFFFD end'))
  })

  it('--repo that is a file is ERR_INVALID_REPO; --json reports it as data', async () => {
    const file = join(repo.path, 'a.txt')
    expect(await cli(['--prompt', 'p', '--repo', file])).toEqual(failed('ERR_INVALID_REPO', `Repository path does not exist or is not a directory: ${file}`))
    const json = await cli(['--prompt', 'p', '--repo', file, '--json'])
    expect(json).toMatchObject({ code: 1, signal: null, stderr: '' })
    expect(JSON.parse(json.stdout)).toEqual({ ok: false, error: { code: 'ERR_INVALID_REPO', message: `Repository path does not exist or is not a directory: ${file}` } })
  })

  it('a bare repository with --include-diff relays without a diff', async () => {
    fake.mode('answer')
    const bare = fixture(() => tempDir('paf-cli-bare-'))
    execFileSync('git', ['init', '-q', '--bare', bare])
    expect(await cli(['--prompt', 'p', '--repo', bare, '--include-diff'])).toMatchObject({ code: 0, stdout: 'file answer\n' })
    expect(fake.read('stdin')).toBe(envelope(bare, 'p'))
  })

  it('--base that does not exist, or that starts with "-", is ERR_GIT_DIFF', async () => {
    const missing = await cli(['--base', 'no-such-branch', '--prompt', 'p', '--to', 'gemini', '--repo', repo.path])
    expect(missing).toEqual(failed('ERR_GIT_DIFF', `Failed to collect git diff against no-such-branch: ${gitStderr(repo.path, ['diff', 'no-such-branch...HEAD', '--'])}`))
    const target = join(files, 'cli-clobbered')
    const dashed = await cli([`--base=--output=${target}`, '--repo', repo.path])
    expect(dashed).toEqual(failed('ERR_GIT_DIFF', `Failed to collect git diff against --output=${target}: a base must not begin with '-' (git would read it as an option)`))
    expect(existsSync(target)).toBe(false)
  })

  it.each([
    ['', ''],
    ['../x', ''],
    ['🤖 bot', ''],
    ['CODEX', 'Did you mean codex?'],
  ])('--to %j is ERR_UNSUPPORTED_BACKEND listing the built-ins', async (backend, hint) => {
    expect(await cli(['--prompt', 'p', '--repo', repo.path, '--to', backend])).toEqual(
      failed('ERR_UNSUPPORTED_BACKEND', `Unsupported relay backend: ${backend}. Supported: antigravity, claude, codex, gemini, ollama, opencode`, undefined, hint === '' ? undefined : hint),
    )
  })

  it('a CLI backend that hangs is killed on timeout; the CLI exits 1 and leaves no temp folder', async () => {
    fake.mode('hang-with-grandchild')
    rmSync(join(fake.log, 'grandchild'), { force: true })
    const result = await cli(['--prompt', 'p', '--repo', repo.path, '--timeout', '1'])
    expect(result).toEqual(failed('ERR_BACKEND_TIMEOUT', 'codex exec timed out after 1s', 'codex'))
    const grandchild = Number(fake.read('grandchild'))
    await vi.waitFor(() => expect(isAlive(grandchild)).toBe(false), { timeout: 3_000 })
    expect(readdirSync(RELAY_TMP)).toEqual([])
  })
})

function fifoFor(name: string): string {
  const path = join(files, name)
  if (!existsSync(path)) execFileSync('mkfifo', [path])
  return path
}

// ---------------------------------------------------------------------------------------------
// 9. afterwards (runs last: vitest runs a file's tests in order)

describe('afterwards', () => {
  it('nothing is left behind and the process is intact', async () => {
    // No child of ours, zombie or not, beyond those there were before the first test.
    await vi.waitFor(() => expect(childrenOf(process.pid)).toEqual(childrenBefore), { timeout: 5_000, interval: 50 })
    // No process started by this file (the fake CLIs, their `sleep 30` grandchildren, CLI runs).
    await vi.waitFor(() => expect(markedProcesses()).toEqual([]), { timeout: 5_000, interval: 50 })
    // No temp folder of the relay's.
    expect(readdirSync(RELAY_TMP)).toEqual([])
    // No uncaught exception or unhandled rejection, and the addon still answers.
    expect(uncaught).toEqual([])
    await expectAnswer(callRelay({ prompt: 'still alive?', repoPath: repo.path, backend: 'mock' }), 'mock answer')
  })
})
