// `phone-a-friend mcp` and the MCP 2026-07-28 revision (docs/MCP.md, "MCP 2026-07-28"): the
// official TypeScript SDK v2 client (@modelcontextprotocol/client) with `versionNegotiation:
// { mode: 'auto' }` against the real server process and fake backend CLIs; its tasks through the
// extension's own client (@modelcontextprotocol/ext-tasks); the v1 SDK on the same server; and
// the revision's behaviours as raw JSON-RPC lines on the server's stdio.
import { afterEach, describe, expect, it } from 'vitest'
import { Client, type JSONRPCMessage } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { FakeMode } from './support/fake-cli.js'
import { mcpServerSuite, startServerProcess } from './support/mcp-server.js'
import { processesWithEnv } from './support/processes.js'
import { CLI } from './support/run-cli.js'

const suite = mcpServerSuite()
const REVISION = '2026-07-28'
const TASKS = 'io.modelcontextprotocol/tasks'
const CLIENT_INFO = { name: 'relay-v2-tests', version: '0.0.0' }
const { version } = require('../package.json') as { version: string }
/** A tasks/cancel acknowledged, as the extension answers it, naming the server as every 2026-07-28 result does. */
const ACKNOWLEDGED = { resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'phone-a-friend', version } } }

/**
 * The part of @modelcontextprotocol/ext-tasks/client used here. Its own declarations do not
 * compile with this repository's TypeScript (5.9, `skipLibCheck: false`: tsconfig.build.json), so
 * it is imported untyped.
 */
interface TaskOutcome {
  status: 'completed' | 'failed' | 'cancelled'
}
interface TaskEnabledSession {
  callTool(name: string, args: Record<string, unknown>): Promise<{ kind: 'task' | 'immediate'; settle(): Promise<{ outcome: TaskOutcome }>; cancel(): Promise<void> }>
  close(): Promise<void>
}
interface ExtTasksClient {
  createTaskSessionFromClient(client: Client, options: {
    endpointId: string
    rawDispatch: (request: object) => Promise<{ kind: 'result'; result: unknown } | { kind: 'error'; error: unknown }>
    v2RequestFraming: { protocolVersion: string; clientInfo: object; clientCapabilities: object }
  }): TaskEnabledSession
  resultFromTaskOutcome(outcome: TaskOutcome): unknown
}
const EXT_TASKS_CLIENT: string = '@modelcontextprotocol/ext-tasks/client'
const extTasks = (): Promise<ExtTasksClient> => import(EXT_TASKS_CLIENT) as Promise<ExtTasksClient>

/** The v2 client, its transport, and every message either side sent, in order. */
interface V2 {
  client: Client
  wire: Array<{ dir: 'out' | 'in'; message: JSONRPCMessage }>
  close(): Promise<void>
}
let opened: V2 | undefined
let session: TaskEnabledSession | undefined
afterEach(async () => {
  await session?.close()
  session = undefined
  await opened?.close()
  opened = undefined
})

/** Connects the v2 client in `auto` mode (it probes with server/discover first), recording the wire. */
async function connectV2(mode: FakeMode, capabilities: Record<string, unknown> = {}): Promise<V2> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: suite.repo.path, env: suite.env(mode), stderr: 'pipe' })
  const wire: V2['wire'] = []
  const send = transport.send.bind(transport)
  transport.send = (message) => {
    wire.push({ dir: 'out', message })
    return send(message)
  }
  const client = new Client(CLIENT_INFO, { capabilities, versionNegotiation: { mode: 'auto' } })
  // The client sets onmessage when it starts the transport; record what arrives before it reads it.
  const start = transport.start.bind(transport)
  transport.start = async () => {
    const read = transport.onmessage
    transport.onmessage = (message) => {
      wire.push({ dir: 'in', message })
      read?.(message)
    }
    await start()
  }
  await client.connect(transport)
  opened = { client, wire, close: () => client.close() }
  return opened
}

/**
 * A task session of the extension's client over a connected v2 client. The v2 client rejects a
 * `tools/call` answered with `resultType: "task"` (its codec knows `complete` and
 * `input_required` only), so the extension asks its host for a raw request path (README of
 * @modelcontextprotocol/ext-tasks): here, lines written to the same transport, their answers taken
 * off it before the client sees them.
 */
async function taskSession(v2: V2): Promise<TaskEnabledSession> {
  const { createTaskSessionFromClient } = await extTasks()
  const transport = v2.client.transport!
  const waiting = new Map<string, (response: Record<string, unknown>) => void>()
  const read = transport.onmessage!
  transport.onmessage = (message, extra) => {
    const id = (message as { id?: unknown }).id
    if (typeof id === 'string' && waiting.has(id)) {
      v2.wire.push({ dir: 'in', message })
      waiting.get(id)!(message as Record<string, unknown>)
      waiting.delete(id)
    } else read(message, extra)
  }
  let next = 0
  session = createTaskSessionFromClient(v2.client, {
    endpointId: 'phone-a-friend',
    rawDispatch: (request) =>
      new Promise((resolve, reject) => {
        const id = `raw-${next++}`
        waiting.set(id, (response) =>
          resolve('error' in response ? { kind: 'error', error: response.error } : { kind: 'result', result: response.result }),
        )
        transport.send({ ...request, jsonrpc: '2.0', id } as JSONRPCMessage).catch(reject)
      }),
    v2RequestFraming: { protocolVersion: REVISION, clientInfo: CLIENT_INFO, clientCapabilities: { extensions: { [TASKS]: {} } } },
  })
  return session
}

describe('the v2 SDK client, versionNegotiation auto', () => {
  it('negotiates 2026-07-28 through server/discover, without initialize, and lists the tools', async () => {
    const { client, wire } = await connectV2('answer')
    expect(client.getProtocolEra()).toBe('modern')
    expect(client.getNegotiatedProtocolVersion()).toBe(REVISION)
    expect(client.getServerVersion()).toEqual({ name: 'phone-a-friend', version: expect.any(String) })
    expect(client.getDiscoverResult()).toMatchObject({ supportedVersions: expect.arrayContaining(['2025-11-25', REVISION]) })
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, extensions: { [TASKS]: {} } })
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual(['backends', 'relay', 'review'])
    // On this connection (the probe ran on a sibling process): no initialize, and every request
    // carries the revision's per-request _meta.
    const requests = wire.filter((m) => m.dir === 'out' && 'method' in m.message).map((m) => m.message as { method: string; params?: { _meta?: Record<string, unknown> } })
    expect(requests.map((r) => r.method)).toEqual(['tools/list'])
    expect(requests[0].params?._meta).toMatchObject({
      'io.modelcontextprotocol/protocolVersion': REVISION,
      'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
      'io.modelcontextprotocol/clientCapabilities': {},
    })
  })

  it('a plain relay call is answered by the friend', async () => {
    const { client, wire } = await connectV2('answer')
    const result = await client.callTool({ name: 'relay', arguments: { prompt: 'Check it', backend: 'codex' } })
    expect(result.isError).toBe(false)
    expect(result.content).toEqual([{ type: 'text', text: 'file answer' }])
    expect(result.structuredContent).toEqual({ backend: 'codex', ok: true, answer: 'file answer' })
    expect(suite.fake.read('stdin')).toContain('Request:\nCheck it')
    // The client lifts resultType off; on the wire it is there.
    const answer = wire.find((m) => m.dir === 'in' && 'result' in m.message)?.message as { result: Record<string, unknown> }
    expect(answer.result.resultType).toBe('complete')
  })

  it('relay as a task of the extension: created, polled to its end, its result fetched', async () => {
    const v2 = await connectV2('answer', { extensions: { [TASKS]: {} } })
    const tasks = await taskSession(v2)
    const execution = await tasks.callTool('relay', { prompt: 'Check it', backend: 'codex' })
    expect(execution.kind).toBe('task')
    const { outcome } = await execution.settle()
    expect(outcome.status).toBe('completed')
    expect((await extTasks()).resultFromTaskOutcome(outcome)).toMatchObject({ isError: false, structuredContent: { backend: 'codex', ok: true, answer: 'file answer' } })
    // On the wire: the call answered with a task, then tasks/get until it carried the result.
    const lines = v2.wire.map((m) => m.message as { method?: string; id?: unknown; result?: Record<string, unknown> })
    const call = lines.find((m) => m.method === 'tools/call')!
    const created = lines.find((m) => m.id === call.id && m.result)!.result!
    expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 1000 })
    const gets = lines.filter((m) => m.method === 'tasks/get')
    expect(gets.length).toBeGreaterThanOrEqual(1)
    const last = lines.find((m) => m.id === gets.at(-1)!.id && m.result)!.result!
    expect(last).toMatchObject({ resultType: 'complete', taskId: created.taskId, status: 'completed', result: { structuredContent: { answer: 'file answer' } } })
    // Polled, never told: no notifications/tasks (docs/MCP.md, "Tasks").
    expect(lines.filter((m) => m.method?.startsWith('notifications/tasks'))).toEqual([])
  })

  it('cancelling a running task: acknowledged, the task ends cancelled, the backend stops', async () => {
    const v2 = await connectV2('hang-with-grandchild', { extensions: { [TASKS]: {} } })
    // The probe's sibling process has gone; the server is the one left.
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBe(1)
    const server = processesWithEnv(suite.mark)
    const tasks = await taskSession(v2)
    const execution = await tasks.callTool('relay', { prompt: 'p', backend: 'gemini' })
    expect(execution.kind).toBe('task')
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    await execution.cancel()
    const { outcome } = await execution.settle()
    expect(outcome.status).toBe('cancelled')
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 2000 }).toEqual(server)
    const lines = v2.wire.map((m) => m.message as { method?: string; id?: unknown; result?: Record<string, unknown> })
    const cancel = lines.find((m) => m.method === 'tasks/cancel')!
    expect(lines.find((m) => m.id === cancel.id && 'result' in m)?.result).toEqual(ACKNOWLEDGED)
  })

  it('the v1 SDK (2025-11-25, initialize) still works against the same server', async () => {
    const transport = new V1StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: suite.repo.path, env: suite.env('answer'), stderr: 'pipe' })
    suite.client = new V1Client({ name: 'relay-v1-tests', version: '0.0.0' })
    await suite.client.connect(transport)
    expect(suite.client.getServerVersion()).toMatchObject({ name: 'phone-a-friend' })
    const result = await suite.client.callTool({ name: 'relay', arguments: { prompt: 'Check it', backend: 'codex' } })
    expect(result.structuredContent).toEqual({ backend: 'codex', ok: true, answer: 'file answer' })
  })
})

describe('2026-07-28 as raw JSON-RPC lines', () => {
  type Line = { jsonrpc: string; id?: unknown; method?: string; result?: Record<string, any>; error?: { code: number; message: string; data?: any } }

  /** Starts `phone-a-friend mcp` by hand: newline-delimited JSON on its stdin and stdout. */
  function start(mode: FakeMode) {
    const server = startServerProcess(suite, mode)
    const { child, exited } = server
    const lines = (): Line[] => server.lines<Line>()
    let next = 1
    /** Sends a request with the revision's per-request _meta (`capabilities` its client's); resolves with its answer. */
    const request = async (method: string, params: Record<string, unknown> = {}, capabilities: Record<string, unknown> | null = {}): Promise<Line> => {
      const id = next++
      const _meta = { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO, 'io.modelcontextprotocol/clientCapabilities': capabilities }
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: capabilities === null ? params : { ...params, _meta } })}\n`)
      await expect.poll(() => lines().some((line) => line.id === id), { timeout: 5000 }).toBe(true)
      return lines().find((line) => line.id === id)!
    }
    const stop = async (): Promise<number | null> => {
      child.stdin.end()
      return exited
    }
    return { lines, request, stop, stderr: server.stderr }
  }
  const EXTENSION = { extensions: { [TASKS]: {} } }

  /** tasks/get (as a client of the extension) until the task is no longer working. */
  async function settled(server: ReturnType<typeof start>, taskId: string): Promise<Line> {
    let got = await server.request('tasks/get', { taskId }, EXTENSION)
    await expect.poll(async () => (got = await server.request('tasks/get', { taskId }, EXTENSION)).result?.status, { timeout: 10_000, interval: 50 }).not.toBe('working')
    return got
  }

  it('no initialize: the first request carries its protocol version and capabilities, and is answered', async () => {
    const server = start('answer')
    const bare = { code: -32602, message: 'request _meta is missing or has malformed required fields: io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities' }
    // Without them (and no initialize before) a request is refused, and the server waits on.
    expect((await server.request('tools/list', {}, null)).error).toEqual(bare)
    const list = await server.request('tools/list')
    expect(list.error).toBeUndefined()
    expect(list.result).toMatchObject({ resultType: 'complete' })
    expect(list.result!.tools.map((tool: { name: string }) => tool.name)).toEqual(['backends', 'relay', 'review'])
    const call = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'Check it', backend: 'codex' } })
    expect(call.result).toMatchObject({ resultType: 'complete', isError: false, structuredContent: { backend: 'codex', ok: true, answer: 'file answer' } })
    // The connection is in the revision now: every request carries them.
    expect((await server.request('tools/list', {}, null)).error).toEqual(bare)
    // Nothing came unasked: no initialize result, no notification.
    expect(server.lines().map((line) => line.id)).toEqual([1, 2, 3, 4])
    expect(await server.stop()).toBe(0)
  })

  it('server/discover: the versions, the capabilities with the tasks extension, resultType', async () => {
    const server = start('answer')
    const discover = await server.request('server/discover')
    expect(discover.result).toEqual({
      resultType: 'complete',
      supportedVersions: ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', REVISION],
      capabilities: { extensions: { [TASKS]: {} }, resources: {}, tools: {} },
      instructions: expect.stringMatching(/^Phone a friend: /),
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'phone-a-friend', version } },
    })
    // A probe opens no session: the next request is served as a first one.
    expect((await server.request('tools/list')).result).toMatchObject({ resultType: 'complete' })
    expect(await server.stop()).toBe(0)
  })

  // The v2 client's `auto` probe
  // does exactly this on a sibling process, each connect (it discards that process's stderr).
  it('a client that only discovers, then closes stdin: the server exits 0 without a word, as after any client', async () => {
    const server = start('answer')
    expect((await server.request('server/discover')).result).toMatchObject({ resultType: 'complete' })
    // Today: exit 1, stderr "phone-a-friend mcp: MCP initialization failed: connection closed: initialize request".
    expect(await server.stop()).toBe(0)
    expect(server.stderr()).toBe('')
  })

  it('a client of the tasks extension: tools/call answers resultType task; tasks/get carries the result; no notifications/tasks', async () => {
    const server = start('answer')
    const created = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'Check it', backend: 'codex' } }, EXTENSION)
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 900_000, pollIntervalMs: 1000, taskId: expect.any(String) })
    const got = await settled(server, created.result!.taskId)
    expect(got.result).toMatchObject({
      resultType: 'complete',
      taskId: created.result!.taskId,
      status: 'completed',
      result: { isError: false, structuredContent: { backend: 'codex', ok: true, answer: 'file answer' } },
    })
    // The extension's notifications go on a subscriptions/listen stream only (docs/MCP.md, "Tasks").
    expect(server.lines().filter((line) => line.method !== undefined)).toEqual([])
    expect(await server.stop()).toBe(0)
  })

  it('tasks/cancel: a running task is acknowledged with resultType complete and its backend stops; one that ended is acknowledged too', async () => {
    const server = start('hang-with-grandchild')
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBe(1)
    const alone = processesWithEnv(suite.mark)
    const created = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'p', backend: 'gemini' } }, EXTENSION)
    const { taskId } = created.result as { taskId: string }
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    expect((await server.request('tasks/cancel', { taskId }, EXTENSION)).result).toEqual(ACKNOWLEDGED)
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 2000 }).toEqual(alone)
    expect((await server.request('tasks/get', { taskId }, EXTENSION)).result).toMatchObject({ resultType: 'complete', taskId, status: 'cancelled' })
    // Ended: cancelling is cooperative in the extension, so it is acknowledged again, not refused.
    expect((await server.request('tasks/cancel', { taskId }, EXTENSION)).result).toEqual(ACKNOWLEDGED)
    expect(server.lines().filter((line) => line.method !== undefined)).toEqual([])
    expect(await server.stop()).toBe(0)
  })

  it('a completed task: tasks/cancel is acknowledged with resultType complete, and it stays completed', async () => {
    const server = start('answer')
    const created = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'p', backend: 'codex' } }, EXTENSION)
    const { taskId } = created.result as { taskId: string }
    expect((await settled(server, taskId)).result?.status).toBe('completed')
    expect((await server.request('tasks/cancel', { taskId }, EXTENSION)).result).toEqual(ACKNOWLEDGED)
    expect((await server.request('tasks/get', { taskId }, EXTENSION)).result).toMatchObject({ status: 'completed', result: { structuredContent: { answer: 'file answer' } } })
    expect(await server.stop()).toBe(0)
  })

  it('tasks/get and tasks/cancel from a client that did not declare the tasks extension: -32021, the capability it lacks in data', async () => {
    const server = start('answer')
    // The task exists (a request that declared the extension made it): the refusal is about the capability.
    const created = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'p', backend: 'codex' } }, EXTENSION)
    const { taskId } = created.result as { taskId: string }
    // As rmcp words it (ErrorData::missing_required_client_capability) and the v2 SDK reads it
    // (MissingRequiredClientCapabilityError: data.requiredCapabilities, a ClientCapabilities).
    const missing = { code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } }
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const refused = await server.request(method, { taskId })
      expect(refused.result).toBeUndefined()
      expect(refused.error).toEqual(missing)
    }
    // Nothing was cancelled: the task ends as it would.
    expect((await settled(server, taskId)).result?.status).toBe('completed')
    expect(await server.stop()).toBe(0)
  })

  it('every result of a 2026-07-28 request names the server: _meta["io.modelcontextprotocol/serverInfo"]', async () => {
    const server = start('answer')
    const serverInfo = { name: 'phone-a-friend', version }
    const list = await server.request('tools/list')
    const call = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'p', backend: 'codex' } })
    const created = await server.request('tools/call', { name: 'relay', arguments: { prompt: 'p', backend: 'codex' } }, EXTENSION)
    const got = await settled(server, created.result!.taskId)
    const cancel = await server.request('tasks/cancel', { taskId: created.result!.taskId }, EXTENSION)
    for (const answer of [list, call, created, got, cancel]) expect(answer.result?._meta?.['io.modelcontextprotocol/serverInfo'], JSON.stringify(answer).slice(0, 200)).toEqual(serverInfo)
    expect(await server.stop()).toBe(0)
  })
})
