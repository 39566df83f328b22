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
import { mcpServerSuite } from './support/mcp-server.js'
import { processesWithEnv } from './support/processes.js'
import { CLI } from './support/run-cli.js'

const suite = mcpServerSuite()
const REVISION = '2026-07-28'
const TASKS = 'io.modelcontextprotocol/tasks'
const CLIENT_INFO = { name: 'relay-v2-tests', version: '0.0.0' }

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
    expect(lines.find((m) => m.id === cancel.id && 'result' in m)?.result).toEqual({ resultType: 'complete' })
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
