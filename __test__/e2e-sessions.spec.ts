// Sessions with the real CLIs (docs/CONTRACT.md §12), against the fake model server: the second
// relay of a session continues the backend's own session, so the model request carries the first
// turn.
import { resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, listSessions, relay, type RelayOptions } from '@phone-a-friend/relay'
import { claudeEnv, codexEnv, geminiEnv, opencodeEnv, startFakeModelServer, type FakeModelServer } from './support/fake-model-server'
import { TempRepo, tempDir } from './support/git-repo'

const BIN = resolve(__dirname, '..', 'node_modules', '.bin')
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const savedEnv = { ...process.env }
let server: FakeModelServer
let repo: TempRepo

beforeAll(async () => {
  server = await startFakeModelServer()
})

afterAll(async () => {
  await server.close()
})

beforeEach(() => {
  _resetRegistry()
  process.env.PATH = `${BIN}:${process.env.PATH ?? ''}`
  process.env.PHONE_A_FRIEND_HOME = tempDir('paf-sessions-')
  server.requests.length = 0
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
})

afterEach(() => {
  repo.remove()
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key]
  Object.assign(process.env, savedEnv)
})

/** Two relays in one session: the second model request must hold the first prompt and answer. */
async function twoTurns(backend: string, extra: Partial<RelayOptions> = {}): Promise<string> {
  const warnings: string[] = []
  const options = { repoPath: repo.path, backend, session: 'talk', onWarning: (w: string) => warnings.push(w), ...extra }
  server.setAnswer('FIRST_ANSWER')
  await expect(relay({ ...options, prompt: 'First question' })).resolves.toBe('FIRST_ANSWER')
  server.setAnswer('SECOND_ANSWER')
  await expect(relay({ ...options, prompt: 'Second question' })).resolves.toBe('SECOND_ANSWER')
  expect(warnings).toEqual([`[phone-a-friend] new session talk (${backend} in ${repo.path})`])
  const requests = server.modelRequests()
  const last = JSON.stringify(requests[requests.length - 1].body)
  expect(last).toContain('Second question')
  expect(last).toContain('First question')
  expect(last).toContain('FIRST_ANSWER')
  const [session] = await listSessions()
  expect(session).toMatchObject({ label: 'talk', backend, repoPath: repo.path })
  return session.backendSessionId ?? ''
}

describe('native sessions of the real CLIs', () => {
  it('codex 0.169: exec resume <thread id>, the repository and sandbox kept', async () => {
    Object.assign(process.env, await codexEnv(server))
    const id = await twoTurns('codex', { sandbox: 'workspace-write' })
    expect(id).toMatch(UUID)
    expect(JSON.stringify(server.modelRequests().at(-1)?.body)).toContain(repo.path)
  })

  it('gemini 0.61: --session-id <uuid>, then --resume <uuid>', async () => {
    Object.assign(process.env, await geminiEnv(server))
    expect(await twoTurns('gemini')).toMatch(UUID)
  })

  it('claude 2.1.330: --session-id <uuid>, then --resume <uuid>', async () => {
    Object.assign(process.env, await claudeEnv(server))
    expect(await twoTurns('claude')).toMatch(UUID)
  })

  it('opencode 1.18.33: --session <id from its events>', async () => {
    Object.assign(process.env, await opencodeEnv(server))
    expect(await twoTurns('opencode')).toMatch(/^ses_/)
  }, 90_000)
})
