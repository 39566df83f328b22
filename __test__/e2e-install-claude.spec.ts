// End to end: `phone-a-friend install claude` in a throwaway HOME, then the real Claude Code
// (a devDependency) as the MCP client, with the config install wrote (user scope; no
// --mcp-config). The fake model server has claude's model call `mcp__phone-a-friend__relay`; the
// relay asks the ollama backend, a stub HTTP server; the friend's answer must come back to
// claude's model as the tool's result.
import { execFile } from 'node:child_process'
import { delimiter, dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { DEFAULT_ANSWER, claudeEnv, startFakeModelServer, type FakeModelServer } from './support/fake-model-server.js'
import { TempRepo } from './support/git-repo.js'
import { chatLine, startOllamaStub, type OllamaStub } from './support/ollama-stub.js'
import { runCli } from './support/run-cli.js'

const BIN = resolve(__dirname, '..', 'node_modules', '.bin')
const FRIEND_ANSWER = 'The friend says: a.txt looks right.'
let server: FakeModelServer
let ollama: OllamaStub

beforeAll(async () => {
  server = await startFakeModelServer()
  ollama = await startOllamaStub((res) => void res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(chatLine(FRIEND_ANSWER)))
})

afterAll(async () => {
  await server.close()
  await ollama.close()
})

it('after install claude, Claude Code calls relay and the friend’s answer reaches its model', async () => {
  const repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  try {
    const { CLAUDE_CONFIG_DIR: _dir, NAPI_RS_NATIVE_LIBRARY_PATH: _addon, ...inherited } = process.env
    const env = {
      ...inherited,
      ...(await claudeEnv(server)),
      PATH: `${BIN}${delimiter}${dirname(process.execPath)}${delimiter}/usr/bin${delimiter}/bin`,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      // Claude Code offers MCP tools only through its ToolSearch tool unless this is off: the
      // fake model calls the relay tool at once, as a model that was offered it.
      ENABLE_TOOL_SEARCH: 'false',
      OLLAMA_HOST: ollama.host,
      OLLAMA_MODEL: 'llama3.2',
    }
    const installed = await runCli(['install', 'claude'], { env, cwd: repo.path })
    expect(installed.stderr).toBe('')
    expect(installed.stdout).toContain('Installed phone-a-friend in claude (user scope')

    server.setTool({ name: 'mcp__phone-a-friend__relay', input: { prompt: 'Is a.txt right?', backend: 'ollama' } })
    const output = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      const child = execFile(join(BIN, 'claude'), ['-p', 'Ask a friend about a.txt', '--allowedTools', 'mcp__phone-a-friend__relay', '--output-format', 'text'], { cwd: repo.path, env, timeout: 90_000, killSignal: 'SIGKILL' }, (error, stdout, stderr) =>
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
      child.stdin?.end()
    })
    expect(output.stdout.trim(), output.stderr).toBe(DEFAULT_ANSWER)
    // The model offered the tool, called it, and got the friend's answer back as its result.
    const requests = server.modelRequests()
    expect(requests.some((request) => request.tools.includes('mcp__phone-a-friend__relay'))).toBe(true)
    expect(requests.at(-1)?.toolResults.join('\n')).toContain(FRIEND_ANSWER)
    // The friend got the envelope for the tool's prompt.
    expect(JSON.stringify(ollama.bodies.at(-1))).toContain('Is a.txt right?')
  } finally {
    server.setTool(null)
    repo.remove()
  }
}, 120_000)
