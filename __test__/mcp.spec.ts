// `phone-a-friend mcp` (docs/CONTRACT.md §16) driven by the official MCP TypeScript SDK's client,
// as Claude Code, Codex or Gemini CLI would drive it: a real server process on stdio, fake backend
// CLIs.
import { execFileSync, spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { FakeMode } from './support/fake-cli.js'
import { mcpServerSuite, startServerProcess } from './support/mcp-server.js'
import { startOllamaStub } from './support/ollama-stub.js'
import { processesWithEnv } from './support/processes.js'
import { CLI } from './support/run-cli.js'

const suite = mcpServerSuite()

/** Starts the server in the repository and connects the SDK's client; resolves with the time it took. */
async function connect(mode: FakeMode, extra: Record<string, string> = {}, clientName = 'relay-tests'): Promise<number> {
  const started = performance.now()
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: suite.repo.path, env: suite.env(mode, extra), stderr: 'pipe' })
  suite.client = new Client({ name: clientName, version: '0.0.0' })
  await suite.client.connect(transport)
  return performance.now() - started
}

describe('phone-a-friend mcp', () => {
  it('initializes and lists relay, review and backends with schemas from the option types', async () => {
    const startup = await connect('answer')
    expect(startup).toBeLessThan(5000)
    expect(suite.client?.getServerVersion()).toMatchObject({ name: 'phone-a-friend' })
    const { tools } = await suite.client!.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual(['backends', 'relay', 'review'])
    const relay = tools.find((tool) => tool.name === 'relay')!
    expect(relay.inputSchema).toMatchObject({ type: 'object', required: ['prompt'], additionalProperties: false })
    expect(Object.keys(relay.inputSchema.properties ?? {}).sort()).toEqual(
      ['backend', 'backendSession', 'contextFile', 'contextText', 'fallback', 'fit', 'idleTimeoutSeconds', 'includeDiff', 'maxPromptBytes', 'model', 'prompt', 'repoPath', 'sandbox', 'schema', 'session', 'timeoutSeconds'],
    )
    expect(relay.inputSchema.properties?.sandbox).toMatchObject({ enum: ['read-only', 'workspace-write', 'danger-full-access', null] })
    expect(relay.outputSchema?.properties).toHaveProperty('answer')
    const review = tools.find((tool) => tool.name === 'review')!
    expect(Object.keys(review.inputSchema.properties ?? {}).sort()).toEqual(['backend', 'base', 'fit', 'idleTimeoutSeconds', 'maxPromptBytes', 'model', 'prompt', 'repoPath', 'sandbox', 'schema', 'timeoutSeconds', 'verdict'])
  })

  it('asks, when no backend is named, a ready friend of another maker than the calling agent', async () => {
    // The fake codex and gemini are on the PATH; the client names are the real hosts' (docs/HOSTS.md).
    const askedBy = async (clientName: string, extra: Record<string, string> = {}): Promise<unknown> => {
      await connect('answer', extra, clientName)
      const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p' } })
      await suite.client!.close()
      const { backend, ok, answer } = result.structuredContent as { backend: string; ok: boolean; answer: string }
      // Each fake answers in its CLI's way: the one that answered is the one named.
      expect({ ok, answer }).toEqual({ ok: true, answer: backend === 'codex' ? 'file answer' : 'stdout answer' })
      return backend
    }
    expect(await askedBy('codex-mcp-client')).toBe('gemini')
    expect(await askedBy('claude-code')).toBe('codex')
    expect(await askedBy('gemini-cli-mcp-client')).toBe('codex')
    expect(await askedBy('relay-tests')).toBe('codex')
    // The server's PHONE_A_FRIEND_BACKEND decides instead, as for the CLI.
    expect(await askedBy('codex-mcp-client', { PHONE_A_FRIEND_BACKEND: 'codex' })).toBe('codex')
  })

  it('says which model answered and what it cost in the structured content', async () => {
    const stub = await startOllamaStub((res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ model: 'llama3:8b-q4', message: { role: 'assistant', content: 'counted' }, done: true, prompt_eval_count: 26, eval_count: 282 }))
    })
    try {
      await connect('answer', { OLLAMA_HOST: stub.host })
      const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'ollama', model: 'llama3' } })
      expect(result.structuredContent).toEqual({ backend: 'ollama', ok: true, answer: 'counted', model: 'llama3:8b-q4', usage: { inputTokens: 26, outputTokens: 282 } })
    } finally {
      await stub.close()
    }
  })

  it('relays to a backend (repoPath defaulting to its cwd) and answers as text and structured content', async () => {
    // Signed in by their variables (doctor's sign-in check), so the fakes are ready.
    await connect('answer', { GEMINI_API_KEY: 'k', CODEX_API_KEY: 'k' })
    const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'Check it', backend: 'codex' } })
    expect(result.isError).toBe(false)
    expect(result.content).toEqual([{ type: 'text', text: 'file answer' }])
    expect(result.structuredContent).toEqual({ backend: 'codex', ok: true, answer: 'file answer' })
    expect(suite.fake.read('cwd').trim()).toBe(suite.repo.path)
    expect(suite.fake.read('stdin')).toContain(`Repository path: ${suite.repo.path}\n`)
    const backends = await suite.client!.callTool({ name: 'backends', arguments: {} })
    const report = backends.structuredContent as { backends: Array<{ name: string; ready: boolean; path?: string }> }
    expect(report.backends.map((backend) => [backend.name, backend.ready])).toEqual([
      ['codex', true],
      ['gemini', true],
      // Found or not as the test's PATH has them (npm test puts node_modules/.bin on it).
      ['claude', expect.any(Boolean)],
      ['opencode', expect.any(Boolean)],
      ['antigravity', false],
      ['ollama', expect.any(Boolean)],
    ])
    expect(report.backends[0].path).toBe(`${suite.fake.bin}/codex`)
  })

  it('takes a schema as the schema itself (as models write it) or as its JSON text', async () => {
    await connect('stdout-env-answer', { FAKE_ANSWER: '{"tags":["a",7]}' })
    const schema = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } }, required: ['tags'] }
    for (const given of [schema, JSON.stringify(schema)]) {
      const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'gemini', schema: given } })
      expect(result.isError).toBe(true)
      expect(result.structuredContent).toMatchObject({ ok: false, error: { code: 'ERR_SCHEMA', message: 'Answer does not match the schema at /tags/1: 7 is not of type "string"' } })
      // Either form reached the prompt as written, key order kept (not sorted: type came first).
      expect(suite.fake.read('stdin')).toContain(JSON.stringify(schema))
    }
    const loose = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'gemini', schema: { type: 'object' } } })
    expect(loose.structuredContent).toEqual({ backend: 'gemini', ok: true, answer: '{"tags":["a",7]}' })
    const notASchema = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'gemini', schema: 5 } })
    expect(notASchema.isError).toBe(true)
  })

  it('an empty prompt is an isError result carrying ERR_PROMPT_REQUIRED', async () => {
    await connect('answer')
    const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: '' } })
    expect(result.isError).toBe(true)
    expect(result.content).toEqual([{ type: 'text', text: 'Error [ERR_PROMPT_REQUIRED]: Prompt is required' }])
    expect(result.structuredContent).toEqual({ backend: 'codex', ok: false, error: { code: 'ERR_PROMPT_REQUIRED', message: 'Prompt is required' } })
    // A mistyped backend: the name meant, where the calling agent reads it.
    const typo = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'Gemni' } })
    expect(typo.content).toEqual([{ type: 'text', text: expect.stringMatching(/^Error \[ERR_UNSUPPORTED_BACKEND\]: Unsupported relay backend: Gemni\. Supported: .*\nHint: Did you mean gemini\?$/) }])
    expect(typo.structuredContent).toMatchObject({ ok: false, error: { code: 'ERR_UNSUPPORTED_BACKEND', hint: 'Did you mean gemini?' } })
  })

  it('streams the answer as progress notifications when the client asks for progress', async () => {
    await connect('events')
    // Read every progress notification as it arrives. (The SDK's own `onprogress` handler runs a
    // microtask after the notification is read but the result is handled at once: notifications
    // that reach the client in the same read as the result find their handler gone and are
    // dropped, so it would see some of them only, depending on timing.)
    const progress: Array<{ progress: number; message?: string; progressToken: unknown; _meta?: Record<string, unknown> }> = []
    suite.client!.setNotificationHandler(ProgressNotificationSchema, ({ params }) => void progress.push(params))
    const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'gemini' } }, undefined, {
      onprogress: () => undefined, // makes the SDK send a progress token
    })
    expect(result.structuredContent).toEqual({ backend: 'gemini', ok: true, answer: 'Hello, wörld 😀!' })
    await new Promise((resolve) => setImmediate(resolve))
    expect(new Set(progress.map((note) => note.progressToken)).size).toBe(1)
    const kind = (note: (typeof progress)[number]) => note._meta?.['io.github.phone-a-friend/progress'] as { kind: string; answerBytes: number; phase?: string; backend?: string }
    const text = progress.filter((note) => kind(note).kind === 'text')
    expect(text.map((note) => note.message)).toEqual(['Hel', 'lo, wörld 😀', '!\n'])
    // answerBytes counts the UTF-8 bytes so far.
    expect(text.map((note) => kind(note).answerBytes)).toEqual([3, 3 + Buffer.byteLength('lo, wörld 😀'), 3 + Buffer.byteLength('lo, wörld 😀') + 2])
    // The relay's status on each change of phase, made from the backend's events.
    const status = progress.filter((note) => kind(note).kind === 'status')
    expect(status.length).toBeGreaterThan(0)
    expect(status.every((note) => kind(note).backend === 'gemini' && /^gemini: (starting|thinking|writing the answer) \(\d+s, \d+ bytes of the answer so far\)$/.test(note.message ?? ''))).toBe(true)
    // progress grows with every note, as the protocol wants: the bytes, plus one a status note.
    expect(progress.every((note, i) => i === 0 || note.progress > progress[i - 1].progress)).toBe(true)
    expect(progress.at(-1)?.progress).toBe(Buffer.byteLength('Hello, wörld 😀!\n') + status.length)
  })

  it('a cancelled call stops its backend: no process of it is left', async () => {
    await connect('hang-with-grandchild')
    const server = processesWithEnv(suite.mark)
    expect(server).toHaveLength(1)
    const controller = new AbortController()
    const call = suite.client!.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'gemini' } }, undefined, { signal: controller.signal })
    // The CLI and its grandchild run beside the server.
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    const cancelled = performance.now()
    controller.abort('enough')
    await expect(call).rejects.toThrow()
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 2000 }).toEqual(server)
    expect(performance.now() - cancelled).toBeLessThan(2000)
    // The server goes on serving.
    const result = await suite.client!.callTool({ name: 'relay', arguments: { prompt: ' ' } })
    expect(result.isError).toBe(true)
  })
})

describe('the server process', () => {
  const start = (mode: FakeMode) => startServerProcess(suite, mode)

  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } }

  it('answers on stdout only, and exits 0 soon after stdin closes', async () => {
    const server = start('answer')
    const started = performance.now()
    server.send(initialize)
    await expect.poll(() => server.lines().length, { timeout: 5000 }).toBe(1)
    const startup = performance.now() - started
    expect(server.lines()[0]).toMatchObject({ id: 1, result: { serverInfo: { name: 'phone-a-friend' } } })
    server.child.stdin.end()
    const closed = performance.now()
    expect(await server.exited).toBe(0)
    expect(performance.now() - closed).toBeLessThan(1500)
    expect(server.stderr()).toBe('')
    console.info(`mcp: initialize answered ${startup.toFixed(0)} ms after spawn; exit ${(performance.now() - closed).toFixed(0)} ms after stdin closed`)
  })

  it('on a terminal, says first on stderr that it speaks MCP over stdio and how to add it to a client', async () => {
    // script gives the server a pty for stdin, stdout and stderr; what the server writes comes out of script's stdout.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} mcp`
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: suite.repo.path, env: suite.env('answer'), stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    try {
      await expect.poll(() => out, { timeout: 10_000 }).toContain('phone-a-friend install claude')
      // First of all it prints: before the server reads anything.
      expect(out).toMatch(/^phone-a-friend mcp: speaks MCP over stdin\/stdout, for an MCP client to start/)
      expect(out).toContain('phone-a-friend mcp --help')
    } finally {
      // Ctrl-D at the terminal: stdin ends, and the server with it.
      child.stdin.write('\x04')
      child.stdin.end()
    }
    await exited
  })

  it('on a terminal, Ctrl-D before any request ends it quietly: exit 0, after the note only', async () => {
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} mcp`
    // -e: script exits with the server's exit code.
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: suite.repo.path, env: suite.env('answer'), stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    await expect.poll(() => out, { timeout: 10_000 }).toContain('phone-a-friend mcp --help')
    child.stdin.write('\x04')
    child.stdin.end()
    expect(await exited).toBe(0)
    expect(out).not.toContain('initialization failed')
    expect(out).not.toContain('connection closed')
  })

  it('mcp --help gives each client config a tool-call timeout: a relay takes minutes', async () => {
    const help = execFileSync(process.execPath, [CLI, 'mcp', '--help'], { encoding: 'utf8' })
    expect(help).toContain('MCP_TOOL_TIMEOUT=900000')
    expect(help).toContain('tool_timeout_sec = 900')
    expect(help).toContain('"timeout": 900000')
  })

  it('a line that is not JSON gets -32700, one too long -32600 with its id, and the next lines are served', async () => {
    const server = start('answer')
    server.send(initialize)
    await expect.poll(() => server.lines().length, { timeout: 5000 }).toBe(1)
    server.child.stdin.write('this is not json\n')
    await expect.poll(() => server.lines().length, { timeout: 5000 }).toBe(2)
    expect(server.lines()[1]).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: expected ident at line 1 column 2' } })
    // Over the server's limit (8 MiB), under rmcp's (16 MiB), and over both.
    for (const [id, size] of [[3, 10 * 2 ** 20], [4, 20 * 2 ** 20]]) {
      const before = server.lines().length
      server.send({ jsonrpc: '2.0', id, method: 'ping', params: { pad: 'x'.repeat(size) } })
      await expect.poll(() => server.lines().length, { timeout: 10_000 }).toBe(before + 1)
      expect(server.lines()[before]).toEqual({ jsonrpc: '2.0', id, error: { code: -32600, message: 'Invalid Request: a message must be at most 8388608 bytes, on one line' } })
    }
    // As the TypeScript SDK writes a request: its id last, after 50 MB of params.
    const before = server.lines().length
    server.send({ method: 'tools/call', params: { name: 'relay', arguments: { prompt: 'x'.repeat(50 * 2 ** 20) } }, jsonrpc: '2.0', id: 'last' })
    await expect.poll(() => server.lines().length, { timeout: 10_000 }).toBe(before + 1)
    expect(server.lines()[before]).toMatchObject({ jsonrpc: '2.0', id: 'last', error: { code: -32600 } })
    // params rmcp would answer without the id, or as an unknown method.
    for (const [id, method, params] of [
      [6, 'tools/call', [1]],
      [7, 'ping', 'x'],
      [8, 'tools/call', { name: 'relay', arguments: [] }],
      [9, 'resources/read', { uri: 5 }],
    ] as const) {
      const count = server.lines().length
      server.send({ jsonrpc: '2.0', id, method, params })
      await expect.poll(() => server.lines().length, { timeout: 5000 }).toBe(count + 1)
      expect(server.lines()[count]).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32602 } })
    }
    server.send({ jsonrpc: '2.0', id: 5, method: 'ping' })
    await expect.poll(() => server.lines().at(-1), { timeout: 5000 }).toEqual({ jsonrpc: '2.0', id: 5, result: {} })
    server.child.stdin.end()
    expect(await server.exited).toBe(0)
    expect(server.stderr()).toBe('')
  })

  it('stdin closing mid-relay stops the backend and the server exits, leaving no process', async () => {
    const server = start('hang-with-grandchild')
    server.send(initialize)
    server.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
    server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'relay', arguments: { prompt: 'p', backend: 'codex' } } })
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    server.child.stdin.end()
    expect(await server.exited).toBe(0)
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 2000 }).toEqual([])
  })
})
