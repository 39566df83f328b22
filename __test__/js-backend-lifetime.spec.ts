// How long a backend's work may live: a JS backend is told (through its signal) when the relay
// gives up on it; what it throws comes back unchanged however hostile; a relay started from inside
// a JS backend is refused like one started from a relayed CLI; a terminated worker takes its
// backends with it; gemini gets the repository only as its working directory.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  BackendError,
  RelayError,
  _resetRegistry,
  registerBackend,
  relay,
  reviewRelay,
  type BackendRunOptions,
} from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli.js'
import { TempRepo } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'
import { isAlive, processesWithEnv } from './support/processes.js'

const ENTRY = resolve(__dirname, '..', 'index.js')

let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

/** Resolves with what the promise rejected with; fails the test if it resolved. */
async function rejectionOf(pending: Promise<unknown>): Promise<unknown> {
  return pending.then(
    (value) => expect.fail(`expected a rejection, got ${String(value)}`),
    (error: unknown) => error,
  )
}

/** A backend whose run() (and review()) wait for their signal and reject with its reason. */
function signalWaiter(name: string): { aborted: Array<{ at: number; reason: unknown; startedAt: number }>; signals: AbortSignal[] } {
  const seen = { aborted: [] as Array<{ at: number; reason: unknown; startedAt: number }>, signals: [] as AbortSignal[] }
  const wait = ({ signal }: { signal?: AbortSignal }): Promise<string> => {
    const startedAt = Date.now()
    if (!signal) return Promise.reject(new Error('no signal given'))
    seen.signals.push(signal)
    return new Promise((_, reject) => {
      signal.addEventListener('abort', () => {
        seen.aborted.push({ at: Date.now(), reason: signal.reason, startedAt })
        reject(signal.reason)
      }, { once: true })
    })
  }
  registerBackend({ name, allowedSandboxes: ['read-only'], run: wait, review: wait })
  return seen
}

describe('5. gemini runs in the repository without naming it in argv', () => {
  it('a repository path containing a comma reaches gemini only as its cwd', async () => {
    const fake = new FakeClis(['gemini']).mode('stdout-only')
    const parent = mkdtempSync(join(tmpdir(), 'paf-comma-'))
    const commaRepo = join(parent, 'proj,etc')
    mkdirSync(commaRepo)
    try {
      await expect(relay({ prompt: 'p', repoPath: commaRepo, backend: 'gemini' })).resolves.toBe('stdout answer')
      expect(fake.args()).toEqual(['--approval-mode', 'plan', '--skip-trust', '--output-format', 'text', '--prompt', ''])
      expect(fake.args().some((arg) => arg.includes(parent))).toBe(false)
      expect(fake.read('cwd').trim()).toBe(commaRepo)
    } finally {
      fake.restore()
      rmSync(parent, { recursive: true, force: true })
    }
  })
})
