// End to end: a real agent CLI as the MCP client. gemini 0.61 (a devDependency) is configured
// with `phone-a-friend mcp` as an MCP server; the fake model server has the model call the relay
// tool; the relay's answer (from a fake codex) must reach the model in gemini's next request.
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { DEFAULT_ANSWER, geminiEnv, startFakeModelServer, type FakeModelServer } from './support/fake-model-server.js'
import { FakeClis } from './support/fake-cli.js'
import { TempRepo } from './support/git-repo.js'
import { CLI } from './support/run-cli.js'

const GEMINI = resolve(__dirname, '..', 'node_modules', '.bin', 'gemini')
let server: FakeModelServer

beforeAll(async () => {
  server = await startFakeModelServer()
})

afterAll(async () => {
  await server.close()
})

it('gemini calls the relay tool and the friend’s answer reaches its model', async () => {
  const repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  const fake = new FakeClis(['codex']).mode('answer')
  try {
    const env = await geminiEnv(server, { failFast: true })
    const settingsFile = join(env.GEMINI_CLI_HOME, '.gemini', 'settings.json')
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>
    settings.mcpServers = {
      friend: {
        command: process.execPath,
        args: [CLI, 'mcp'],
        cwd: repo.path,
        // The server's relays find the fake codex; gemini hands MCP servers a filtered environment.
        env: { PATH: process.env.PATH ?? '', FAKE_LOG: fake.log, FAKE_MODE: 'answer' },
        trust: true,
      },
    }
    writeFileSync(settingsFile, JSON.stringify(settings, null, 2))
    server.setToolCall({ name: 'relay', args: { prompt: 'Is a.txt right?', backend: 'codex' } })
    const output = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      const child = execFile(GEMINI, ['--approval-mode', 'yolo', '--skip-trust', '--output-format', 'text', '--prompt', 'Ask a friend about a.txt'], {
        cwd: repo.path,
        env: { ...process.env, ...env },
        timeout: 60_000,
      }, (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }))
      child.stdin?.end()
    })
    expect(output.stdout.trim(), output.stderr).toBe(DEFAULT_ANSWER)
    // The fake codex got the envelope for the tool's prompt, in the server's cwd.
    expect(fake.read('stdin')).toContain('Request:\nIs a.txt right?')
    expect(fake.read('cwd').trim()).toBe(repo.path)
    // gemini sent the relay's answer back to its model as the function's response.
    const followUp = server.modelRequests().find((request) => JSON.stringify(request.body).includes('functionResponse'))
    expect(JSON.stringify(followUp?.body)).toContain('file answer')
  } finally {
    server.setToolCall(null)
    fake.restore()
    repo.remove()
  }
}, 90_000)
