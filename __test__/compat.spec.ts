// Written the way callers of the original TypeScript relay wrote their tests: nothing here knows
// the implementation is native.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { BACKEND_ENV_VAR } from '../lib/internal/limits.js'
import {
  BackendError,
  DEFAULT_BACKEND,
  DEFAULT_SANDBOX,
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  MAX_CONTEXT_FILE_BYTES,
  MAX_DIFF_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_PROMPT_BYTES,
  MAX_RELAY_DEPTH,
  RelayError,
  _resetRegistry,
  registerBackend,
  relay,
  reviewRelay,
  type Backend,
  type RelayOptions,
} from '@phone-a-friend/relay'

describe('a caller of the original relay', () => {
  let dir: string
  const run = vi.fn(async () => 'mock feedback')
  const mockBackend: Backend = {
    name: 'mock',
    allowedSandboxes: new Set(['read-only', 'workspace-write', 'danger-full-access'] as const),
    run,
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-compat-'))
    run.mockClear()
    _resetRegistry()
    registerBackend(mockBackend)
  })

  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('sees the core’s own constants (the wrapper writes them out to load no native code at import)', async () => {
    const native = await import('../binding.js')
    const written = { DEFAULT_TIMEOUT_SECONDS, DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_BACKEND, DEFAULT_SANDBOX, MAX_RELAY_DEPTH, MAX_CONTEXT_FILE_BYTES, MAX_DIFF_BYTES, MAX_PROMPT_BYTES, MAX_OUTPUT_BYTES }
    expect(written).toEqual(Object.fromEntries(Object.keys(written).map((name) => [name, native[name as keyof typeof native]])))
    // And the one the CLI reads, written out in the same module.
    expect(BACKEND_ENV_VAR).toBe(native.BACKEND_ENV_VAR)
  })

  it('sees the same constants', () => {
    expect([DEFAULT_TIMEOUT_SECONDS, DEFAULT_BACKEND, DEFAULT_SANDBOX, MAX_RELAY_DEPTH]).toEqual([600, 'codex', 'read-only', 1])
    expect([MAX_CONTEXT_FILE_BYTES, MAX_DIFF_BYTES, MAX_PROMPT_BYTES, MAX_OUTPUT_BYTES]).toEqual([200_000, 300_000, 500_000, 8_388_608])
  })

  it('rejects an empty prompt', async () => {
    await expect(relay({ prompt: '', repoPath: dir, backend: 'mock' })).rejects.toThrow('Prompt is required')
    await expect(relay({ prompt: '   ', repoPath: dir, backend: 'mock' })).rejects.toThrow(RelayError)
    expect(run).not.toHaveBeenCalled()
  })

  it('relays to the mock backend', async () => {
    const options: RelayOptions = { prompt: 'Review this', repoPath: dir, backend: 'mock', timeoutSeconds: 30 }
    await expect(relay(options)).resolves.toBe('mock feedback')
    expect(run).toHaveBeenCalledWith(expect.objectContaining({ repoPath: dir, timeoutSeconds: 30, sandbox: 'read-only', model: null }))
  })

  it('wraps a BackendError in a RelayError', async () => {
    run.mockRejectedValueOnce(new BackendError('backend exploded'))
    const error = await relay({ prompt: 'x', repoPath: dir, backend: 'mock' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toBeInstanceOf(Error)
    expect((error as RelayError).name).toBe('RelayError')
    expect((error as RelayError).message).toBe('backend exploded')
  })

  it('falls back for review without a native review()', async () => {
    await expect(reviewRelay({ repoPath: dir, backend: 'mock', base: 'main' })).rejects.toThrow(/Failed to collect git diff against main/)
  })

  it('BackendError and RelayError are ordinary Error classes', () => {
    const backendError = new BackendError('b')
    expect(backendError).toBeInstanceOf(Error)
    expect(backendError.name).toBe('BackendError')
    const relayError = new RelayError('r', 'ERR_TOO_LARGE')
    expect(relayError).toMatchObject({ name: 'RelayError', code: 'ERR_TOO_LARGE', message: 'r' })
    expect(String(relayError)).toBe('RelayError: r')
  })
})
