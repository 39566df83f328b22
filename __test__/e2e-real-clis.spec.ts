// End to end: the real codex and gemini CLIs from npm (devDependencies), pointed at a fake model
// server on 127.0.0.1, answering through relay() and reviewRelay().
import { resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { _resetRegistry, relay, reviewRelay } from '@phone-a-friend/relay'
import { DEFAULT_ANSWER, codexEnv, deadServerUrl, geminiEnv, startFakeModelServer, type FakeModelServer } from './support/fake-model-server.js'
import { TempRepo } from './support/git-repo.js'
import { processesWithEnv } from './support/processes.js'

const BIN = resolve(__dirname, '..', 'node_modules', '.bin')
let server: FakeModelServer
let repo: TempRepo
let restoreEnv: () => void

/** Adds variables to process.env (the relay snapshots it per call) until the test ends. */
function useEnv(vars: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((key) => [key, process.env[key]]))
  Object.assign(process.env, vars)
  const previous = restoreEnv
  restoreEnv = () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
    previous()
  }
}

const envelopeOf = (request: string): string =>
  'You are helping another coding agent by reviewing or advising on work in a local repository.\n' +
  `Repository path: ${repo.path}\nUse the repository files for context when needed.\n` +
  `Respond with concise, actionable feedback.\n\nRequest:\n${request}`

beforeAll(async () => {
  server = await startFakeModelServer()
})

afterAll(async () => {
  await server.close()
})

beforeEach(() => {
  _resetRegistry()
  restoreEnv = () => undefined
  useEnv({ PATH: `${BIN}:${process.env.PATH ?? ''}` })
  server.requests.length = 0
  server.setDelay(0)
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
})

afterEach(() => {
  restoreEnv()
  repo.remove()
})

describe('codex 0.169 for real', () => {
  beforeEach(async () => useEnv(await codexEnv(server)))

  it('answers a relay, the envelope reaching the model whole', async () => {
    await expect(relay({ prompt: 'Say hi', repoPath: repo.path, backend: 'codex' })).resolves.toBe(DEFAULT_ANSWER)
    const [request] = server.modelRequests()
    expect(request.protocol).toBe('codex')
    expect(request.prompt).toBe(envelopeOf('Say hi'))
  })

  it('a 300,000-byte prompt arrives whole through stdin', async () => {
    const prompt = `${'0123456789'.repeat(30_000)}`
    await expect(relay({ prompt, repoPath: repo.path, backend: 'codex' })).resolves.toBe(DEFAULT_ANSWER)
    expect(server.modelRequests()[0].prompt).toBe(envelopeOf(prompt))
  })

  it('answers a native review of the branch', async () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'feature work\n').commit('feature')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'codex' })).resolves.toBe(DEFAULT_ANSWER)
    const [request] = server.modelRequests()
    expect(request.protocol).toBe('codex')
    // codex's own review prompt, not our envelope: the native path ran.
    expect(request.prompt).not.toContain('Request:\n')
    expect(JSON.stringify(request.body)).toContain('main')
  })

  it('a review with instructions goes through the generic path', async () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'feature work\n').commit('feature')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'codex', prompt: 'Only naming' })).resolves.toBe(DEFAULT_ANSWER)
    const prompt = server.modelRequests()[0].prompt ?? ''
    expect(prompt).toContain('Request:\nOnly naming\n\nGit Diff:\ndiff --git a/b.txt b/b.txt')
  })
})

describe('gemini 0.61 for real', () => {
  beforeEach(async () => useEnv(await geminiEnv(server)))

  it('answers in a folder it was never told to trust', async () => {
    await expect(relay({ prompt: 'Say hi', repoPath: repo.path, backend: 'gemini' })).resolves.toBe(DEFAULT_ANSWER)
    const request = server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.prompt).toContain(envelopeOf('Say hi'))
  })

  it('a 300,000-byte prompt arrives whole through stdin', async () => {
    const prompt = `${'abcdefghij'.repeat(30_000)}`
    await expect(relay({ prompt, repoPath: repo.path, backend: 'gemini' })).resolves.toBe(DEFAULT_ANSWER)
    const request = server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.prompt).toContain(envelopeOf(prompt))
  })
})

describe('dead servers, timeouts and aborts', () => {
  it('codex against a dead server times out after 3 s and leaves no process behind', async () => {
    // codex reconnects to a dead server for ever: only the relay's timeout ends it.
    const vars = await codexEnv({ url: await deadServerUrl() })
    useEnv(vars)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'codex', timeoutSeconds: 3 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'codex exec timed out after 3s',
    })
    await vi.waitFor(() => expect(processesWithEnv(vars.CODEX_HOME)).toEqual([]), { timeout: 3_000 })
  })

  it('gemini against a dead server times out after 3 s and leaves no process behind', async () => {
    const vars = await geminiEnv({ url: await deadServerUrl() })
    useEnv(vars)
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'gemini', timeoutSeconds: 3 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'gemini timed out after 3s',
    })
    await vi.waitFor(() => expect(processesWithEnv(vars.GEMINI_CLI_HOME)).toEqual([]), { timeout: 3_000 })
  })

  it('an abort while codex waits on the model kills it at once', async () => {
    const vars = await codexEnv(server)
    useEnv(vars)
    server.setDelay(30_000)
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, backend: 'codex', signal: controller.signal })
    await vi.waitFor(() => expect(server.modelRequests()).toHaveLength(1), { timeout: 20_000 })
    expect(processesWithEnv(vars.CODEX_HOME).length).toBeGreaterThan(0)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    await vi.waitFor(() => expect(processesWithEnv(vars.CODEX_HOME)).toEqual([]), { timeout: 3_000 })
  })
})
