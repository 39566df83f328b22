import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { BackendError, RelayError, _resetRegistry, registerBackend, reviewRelay } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo.js'
import { MockBackend } from './support/mock-backend.js'

const WARNING = '[phone-a-friend] review() failed, falling back to generic relay: '

let repo: TempRepo
let errorSpy: ReturnType<typeof vi.spyOn>

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  repo.git('checkout', '-q', '-b', 'feature')
  repo.write('b.txt', 'feature work\n').commit('feature')
  errorSpy = vi.spyOn(console, 'error').mockImplementation(() => undefined)
})

afterEach(() => {
  repo.remove()
  errorSpy.mockRestore()
  delete process.env.PHONE_A_FRIEND_DEPTH
})

describe('reviewRelay with a native review()', () => {
  it('answers with review() and passes base, options and the raised depth', async () => {
    const mock = new MockBackend('native', undefined, { review: () => 'native review' })
    registerBackend(mock)
    await expect(reviewRelay({ repoPath: repo.path, backend: 'native', model: 'm', timeoutSeconds: 5 })).resolves.toBe('native review')
    expect(mock.reviews).toHaveLength(1)
    expect(mock.reviews[0]).toMatchObject({ repoPath: repo.path, base: 'main', model: 'm', timeoutSeconds: 5, sandbox: 'read-only' })
    expect(mock.reviews[0].env.PHONE_A_FRIEND_DEPTH).toBe('1')
    expect('prompt' in mock.reviews[0]).toBe(false)
    expect(mock.runs).toHaveLength(0)
    expect(errorSpy).not.toHaveBeenCalled()
  })

  it('passes the caller’s instructions on', async () => {
    const mock = new MockBackend('native', undefined, { review: () => 'ok' })
    registerBackend(mock)
    await reviewRelay({ repoPath: repo.path, backend: 'native', base: 'HEAD~1', prompt: 'Look at naming' })
    expect(mock.reviews[0]).toMatchObject({ base: 'HEAD~1', prompt: 'Look at naming' })
  })

  it.each([
    ['a BackendError', new BackendError('native review broke'), 'native review broke'],
    ['a TypeError', new TypeError('undefined is not a function'), 'undefined is not a function'],
    ['a string', 'plain failure', 'plain failure'],
  ])('falls back to the generic path with a warning when review() throws %s', async (_, thrown, message) => {
    const mock = new MockBackend('native', () => 'generic answer', { review: () => Promise.reject(thrown) })
    registerBackend(mock)
    await expect(reviewRelay({ repoPath: repo.path, backend: 'native' })).resolves.toBe('generic answer')
    expect(errorSpy).toHaveBeenCalledTimes(1)
    expect(errorSpy).toHaveBeenCalledWith(WARNING + message)
    expect(mock.runs).toHaveLength(1)
    const diff = repo.git('diff', 'main...HEAD', '--').trim()
    expect(mock.runs[0].prompt).toContain(`Request:\nReview the following changes.\n\nGit Diff:\n${diff}`)
  })

  it('rethrows a RelayError from review() without falling back', async () => {
    const thrown = new RelayError('coded', 'ERR_BACKEND_TIMEOUT')
    const mock = new MockBackend('native', () => 'generic', { review: () => Promise.reject(thrown) })
    registerBackend(mock)
    await expect(reviewRelay({ repoPath: repo.path, backend: 'native' })).rejects.toBe(thrown)
    expect(mock.runs).toHaveLength(0)
    expect(errorSpy).not.toHaveBeenCalled()
  })
})

describe('reviewRelay without a native review()', () => {
  it('runs the generic path with the diff and the default request, no warning', async () => {
    const mock = new MockBackend('plain', () => 'generic answer')
    registerBackend(mock)
    await expect(reviewRelay({ repoPath: repo.path, backend: 'plain' })).resolves.toBe('generic answer')
    expect(mock.runs[0].prompt).toMatch(/Request:\nReview the following changes\.\n\nGit Diff:\ndiff --git a\/b\.txt b\/b\.txt[\s\S]*\+feature work$/)
    expect(errorSpy).not.toHaveBeenCalled()
  })

  it('uses the caller’s prompt as the request', async () => {
    const mock = new MockBackend('plain')
    registerBackend(mock)
    await reviewRelay({ repoPath: repo.path, backend: 'plain', prompt: 'Only security issues' })
    expect(mock.runs[0].prompt).toContain('Request:\nOnly security issues\n\nGit Diff:\n')
  })

  it('detects master, then HEAD~1, when there is no main', async () => {
    const mock = new MockBackend('plain')
    registerBackend(mock)
    // A second commit on the branch: against master the diff holds both, against HEAD~1 only it.
    repo.write('c.txt', 'last commit\n').commit('last')
    repo.git('branch', '-m', 'main', 'master')
    await reviewRelay({ repoPath: repo.path, backend: 'plain' })
    repo.git('branch', '-m', 'master', 'trunk')
    await reviewRelay({ repoPath: repo.path, backend: 'plain' })
    expect(mock.runs).toHaveLength(2)
    const [againstMaster, againstParent] = mock.runs.map((run) => run.prompt.slice(run.prompt.indexOf('Git Diff:\n')))
    expect(againstMaster).toBe(`Git Diff:\n${repo.git('diff', 'trunk...HEAD', '--').trim()}`)
    expect(againstMaster).toContain('+feature work')
    expect(againstMaster).toContain('+last commit')
    expect(againstParent).toBe(`Git Diff:\n${repo.git('diff', 'HEAD~1...HEAD', '--').trim()}`)
    expect(againstParent).toContain('+last commit')
    expect(againstParent).not.toContain('+feature work')
  })

  it('a diff that fails is ERR_GIT_DIFF with git’s words', async () => {
    registerBackend(new MockBackend('plain'))
    const error = await reviewRelay({ repoPath: repo.path, backend: 'plain', base: 'no-such-branch' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'ERR_GIT_DIFF' })
    expect((error as Error).message).toMatch(/^Failed to collect git diff against no-such-branch: fatal: /)
  })

  it('a base that starts with "-" never reaches git', async () => {
    const mock = new MockBackend('native', undefined, { review: () => 'should not run' })
    registerBackend(mock)
    const target = `${repo.path}/clobbered`
    await expect(reviewRelay({ repoPath: repo.path, backend: 'native', base: `--output=${target}` })).rejects.toMatchObject({
      code: 'ERR_GIT_DIFF',
      message: `Failed to collect git diff against --output=${target}: a base must not begin with '-' (git would read it as an option)`,
    })
    expect(mock.reviews).toHaveLength(0)
  })

  it('the generic prompt is limited to 500,000 bytes', async () => {
    registerBackend(new MockBackend('plain'))
    repo.write('big.txt', `${'b'.repeat(299_000)}\n`).commit('big')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'plain', prompt: 'x'.repeat(250_000) })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE' })
  })
})

describe('reviewRelay checks', () => {
  it('checks timeout, repository, backend and sandbox in that order, then the depth', async () => {
    registerBackend(new MockBackend('plain', undefined, { allowed: ['read-only'] }))
    await expect(reviewRelay({ repoPath: '/no/such', timeoutSeconds: -1, backend: 'nope' })).rejects.toMatchObject({ code: 'ERR_INVALID_TIMEOUT' })
    await expect(reviewRelay({ repoPath: '/no/such', backend: 'nope' })).rejects.toMatchObject({ code: 'ERR_INVALID_REPO' })
    await expect(reviewRelay({ repoPath: repo.path, backend: 'nope', sandbox: 'x' as never })).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND' })
    await expect(reviewRelay({ repoPath: repo.path, backend: 'plain', sandbox: 'workspace-write' })).rejects.toMatchObject({ code: 'ERR_INVALID_SANDBOX' })
    process.env.PHONE_A_FRIEND_DEPTH = '1'
    await expect(reviewRelay({ repoPath: repo.path, backend: 'plain' })).rejects.toMatchObject({ code: 'ERR_DEPTH_LIMIT' })
  })

  it('a BackendError from run() on the generic path becomes ERR_BACKEND_FAILED', async () => {
    registerBackend(new MockBackend('plain', () => Promise.reject(new BackendError('generic broke'))))
    await expect(reviewRelay({ repoPath: repo.path, backend: 'plain' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'generic broke',
      backend: 'plain',
    })
  })
})
