import { describe, expect, it } from 'vitest'
import { registerBackend, relay, reviewRelay } from '@phone-a-friend/relay'

// Decision: relay() and reviewRelay() never throw synchronously. Wrong argument types reject with
// a TypeError (code ERR_INVALID_ARG_TYPE), the way the original async functions failed; the rest
// rejects with a RelayError. registerBackend(), detectDefaultBranch() and gitDiffBase() are
// synchronous and throw.

type AnyOptions = Parameters<typeof relay>[0]

describe('arguments of the wrong type', () => {
  it('reject, never throw', () => {
    let pending: Promise<unknown> | undefined
    expect(() => {
      pending = relay(undefined as unknown as AnyOptions)
    }).not.toThrow()
    return expect(pending).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
      message: 'The "options" argument must be of type object. Received undefined',
    })
  })

  it.each([
    [{ prompt: 5, repoPath: '.' }, 'The "options.prompt" property must be of type string. Received type number (5)'],
    [{ prompt: 'p' }, 'The "options.repoPath" property must be of type string. Received undefined'],
    [{ prompt: 'p', repoPath: '.', backend: 1 }, 'The "options.backend" property must be of type string. Received type number (1)'],
    [{ prompt: 'p', repoPath: '.', includeDiff: 'yes' }, 'The "options.includeDiff" property must be of type boolean. Received type string ("yes")'],
    [{ prompt: 'p', repoPath: '.', contextFile: {} }, 'The "options.contextFile" property must be of type string. Received an instance of Object'],
    [{ prompt: 'p', repoPath: '.', sandbox: ['read-only'] }, 'The "options.sandbox" property must be of type string. Received an instance of Array'],
    [{ prompt: 'p', repoPath: '.', model: 3n }, 'The "options.model" property must be of type string. Received type bigint (3n)'],
  ])('relay(%o) is a TypeError', async (options, message) => {
    await expect(relay(options as unknown as AnyOptions)).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message })
  })

  it('null counts as absent for optional options', async () => {
    await expect(relay({ prompt: '', repoPath: '.', backend: null, model: null, contextFile: null } as unknown as AnyOptions)).rejects.toMatchObject({
      code: 'ERR_PROMPT_REQUIRED',
    })
  })

  it('reviewRelay rejects the same way', async () => {
    await expect(reviewRelay(null as unknown as Parameters<typeof reviewRelay>[0])).rejects.toBeInstanceOf(TypeError)
    await expect(reviewRelay({ repoPath: 1 } as unknown as Parameters<typeof reviewRelay>[0])).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
  })

  it.each<[unknown, RegExp]>([
    [null, /"backend" argument must be of type object/],
    [{ name: '', allowedSandboxes: [], run: async () => '' }, /"backend\.name" property must be a non-empty string/],
    [{ name: 'x', allowedSandboxes: [], run: 'no' }, /"backend\.run" property must be of type function/],
    [{ name: 'x', allowedSandboxes: 'read-only', run: async () => '' }, /"backend\.allowedSandboxes" property must be an iterable of strings/],
    [{ name: 'x', allowedSandboxes: [1], run: async () => '' }, /"backend\.allowedSandboxes" property must be an iterable of strings/],
    [{ name: 'x', allowedSandboxes: [], run: async () => '', review: 1 }, /"backend\.review" property must be of type function/],
  ])('registerBackend(%o) throws a TypeError', (backend, message) => {
    expect(() => registerBackend(backend as never)).toThrow(message)
  })
})
