// Sessions with the real CLIs (docs/CONTRACT.md §12), against the fake model server: the second
// relay of a session continues the backend's own session, so the model request carries the first
// turn.
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, listSessions, relay, type RelayOptions, type SandboxMode } from '@phone-a-friend/relay'
import {
  claudeEnv,
  codexEnv,
  FAKE_GEMINI_MODEL,
  geminiEnv,
  opencodeEnv,
  startFakeModelServer,
  type FakeFunctionCall,
  type FakeModelServer,
  type FakeToolCall,
} from './support/fake-model-server'
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
    const resumed = JSON.stringify(server.modelRequests().at(-1)?.body)
    expect(resumed).toContain(repo.path)
    // codex tells its model the sandbox it runs the resumed turn in.
    expect(resumed).toContain('`sandbox_mode` is `workspace-write`')
    expect(resumed).not.toContain('`sandbox_mode` is `read-only`')
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

/**
 * For each call, a session of its own: a first turn without tools (under `first`), then a
 * resumed read-only turn in which the model calls a tool that would create `file` in the
 * repository (scripted with `setTool`, or `setToolCall` for gemini). The resumed turn must
 * answer, carry the first turn to the model, hand the model the tool's refusal (`refused`), and
 * leave no file.
 */
async function resumedWrites(
  backend: string,
  first: SandboxMode,
  calls: ({ file: string; refused: RegExp } & ({ tool: FakeToolCall } | { functionCall: FakeFunctionCall }))[],
  extra: Partial<RelayOptions> = {},
) {
  for (const [index, call] of calls.entries()) {
    const options = { repoPath: repo.path, backend, session: `talk-${index}`, onWarning: () => undefined, timeoutSeconds: 90, ...extra }
    server.setAnswer('FIRST_ANSWER')
    await expect(relay({ ...options, prompt: 'First question', sandbox: first })).resolves.toBe('FIRST_ANSWER')
    const before = server.modelRequests().length
    if ('tool' in call) server.setTool(call.tool)
    else server.setToolCall(call.functionCall)
    server.setAnswer('SECOND_ANSWER')
    try {
      await expect(relay({ ...options, prompt: `Create ${call.file}`, sandbox: 'read-only' })).resolves.toBe('SECOND_ANSWER')
    } finally {
      server.setTool(null)
      server.setToolCall(null)
    }
    const turn = server.modelRequests().slice(before)
    // Resumed: the turn's first request carries the first turn.
    expect(JSON.stringify(turn[0].body)).toContain('First question')
    expect(JSON.stringify(turn[0].body)).toContain('FIRST_ANSWER')
    // The model called the tool and was told it was refused, then answered.
    expect(turn.map((r) => r.toolResults.length)).toEqual([0, 1])
    expect(turn[1].toolResults[0]).toMatch(call.refused)
    expect(existsSync(join(repo.path, call.file))).toBe(false)
  }
  expect((await listSessions()).map((s) => s.label).sort()).toEqual(calls.map((_, index) => `talk-${index}`))
}

/** Whatever the first turn of a session was allowed, a read-only turn that resumes it writes nothing. */
describe.each(['read-only', 'workspace-write'] as const)('read-only holds on resumed turns of the real CLIs (first turn %s)', (first) => {
  const path = (file: string): string => join(repo.path, file)

  it('codex: neither its shell (sandboxed or escalated) nor apply_patch writes', async () => {
    Object.assign(process.env, await codexEnv(server))
    // codex's model calls `exec`, a JavaScript cell whose `tools` run codex's own tools.
    const script = [
      `try { text(JSON.stringify(await tools.exec_command({ cmd: "printf written > ${path('shell.txt')}" }))) } catch (e) { text(String(e)) }`,
      `try { text(JSON.stringify(await tools.exec_command({ cmd: "printf written > ${path('escalated.txt')}", sandbox_permissions: "require_escalated", justification: "needed" }))) } catch (e) { text(String(e)) }`,
      `try { text(JSON.stringify(await tools.apply_patch("*** Begin Patch\\n*** Add File: ${path('patch.txt')}\\n+written\\n*** End Patch\\n"))) } catch (e) { text(String(e)) }`,
    ].join('\n')
    await resumedWrites('codex', first, [
      {
        file: 'shell.txt',
        tool: { name: 'exec', input: script },
        refused: /shell\.txt: Read-only file system[\s\S]*reject command[\s\S]*patch rejected: writing is blocked by read-only sandbox/,
      },
    ])
    for (const file of ['escalated.txt', 'patch.txt']) expect(existsSync(path(file))).toBe(false)
  }, 120_000)

  it('gemini: neither write_file (offered in plan mode, for plans only) nor its shell writes', async () => {
    Object.assign(process.env, await geminiEnv(server))
    const calls = [
      { file: 'written.txt', refused: /Access denied: plan path/, functionCall: { name: 'write_file', args: { file_path: path('written.txt'), content: 'written\n' } } },
      { file: 'shell.txt', refused: /run_shell_command.{0,3} not found/, functionCall: { name: 'run_shell_command', args: { command: `printf written > ${path('shell.txt')}` }, unoffered: true } },
    ]
    // A named model: outside plan mode, gemini's "auto" model first asks a classifier for JSON,
    // which the fake server does not give (minutes of retries).
    await resumedWrites('gemini', first, calls, { model: FAKE_GEMINI_MODEL })
  }, 120_000)

  it('claude: neither Write nor Bash writes', async () => {
    Object.assign(process.env, await claudeEnv(server))
    await resumedWrites('claude', first, [
      { file: 'written.txt', refused: /No such tool available: Write/, tool: { name: 'Write', input: { file_path: path('written.txt'), content: 'written\n' }, unoffered: true } },
      { file: 'shell.txt', refused: /No such tool available: Bash/, tool: { name: 'Bash', input: { command: `printf written > ${path('shell.txt')}`, description: 'Write' }, unoffered: true } },
    ])
  }, 120_000)

  it('opencode: neither write nor bash writes', async () => {
    Object.assign(process.env, await opencodeEnv(server))
    await resumedWrites('opencode', first, [
      { file: 'written.txt', refused: /unavailable tool 'write'/, tool: { name: 'write', input: { filePath: path('written.txt'), content: 'written\n' }, unoffered: true } },
      { file: 'shell.txt', refused: /unavailable tool 'bash'/, tool: { name: 'bash', input: { command: `printf written > ${path('shell.txt')}`, description: 'Write' }, unoffered: true } },
    ])
  }, 180_000)
})
