import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { MAX_DIFF_BYTES, RelayError, detectDefaultBranch, gitDiffBase } from '@phone-a-friend/relay'
import { TempRepo, tempDir } from './support/git-repo.js'

let repo: TempRepo

beforeEach(() => {
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
})

afterEach(() => repo.remove())

describe('detectDefaultBranch', () => {
  it('prefers main, then master, else HEAD~1', () => {
    expect(detectDefaultBranch(repo.path)).toBe('main')
    repo.git('branch', '-m', 'main', 'master')
    expect(detectDefaultBranch(repo.path)).toBe('master')
    repo.git('branch', '-m', 'master', 'trunk')
    expect(detectDefaultBranch(repo.path)).toBe('HEAD~1')
    expect(detectDefaultBranch(tempDir())).toBe('HEAD~1')
  })
})

describe('gitDiffBase', () => {
  it('returns the trimmed diff against the base, synchronously', () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('a.txt', 'two\n').commit('second')
    const diff = gitDiffBase(repo.path, 'main')
    expect(diff).toBe(repo.git('diff', 'main...HEAD', '--').trim())
    expect(diff).toContain('-one\n+two')
  })

  it('throws ERR_GIT_DIFF with git’s stderr', () => {
    let caught: unknown
    try {
      gitDiffBase(repo.path, 'nope')
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(RelayError)
    expect(caught).toMatchObject({ name: 'RelayError', code: 'ERR_GIT_DIFF' })
    expect((caught as Error).message).toMatch(/^Failed to collect git diff against nope: fatal: .*nope/)
  })

  it('refuses a base that starts with "-" before git runs', () => {
    expect(() => gitDiffBase(repo.path, '--output=/tmp/paf-clobber')).toThrow(
      "Failed to collect git diff against --output=/tmp/paf-clobber: a base must not begin with '-' (git would read it as an option)",
    )
  })

  it('a diff over 300,000 bytes is ERR_TOO_LARGE with its exact size', () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('big.txt', `${'z'.repeat(MAX_DIFF_BYTES)}\n`).commit('big')
    const size = Buffer.byteLength(repo.git('diff', 'main...HEAD', '--').trim())
    expect(() => gitDiffBase(repo.path, 'main')).toThrow(`Git diff is too large (${size} bytes; max 300000 bytes)`)
  })

  it('a wrong argument type is a TypeError', () => {
    expect(() => gitDiffBase(repo.path, 3 as unknown as string)).toThrow(TypeError)
    expect(() => detectDefaultBranch(undefined as unknown as string)).toThrow(/The "repoPath" argument must be of type string/)
  })
})
