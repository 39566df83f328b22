// MCP tasks (docs/MCP.md, "Tasks"): `phone-a-friend mcp` driven by the official TypeScript SDK's
// client, which implements tasks as the 2025-11-25 specification has them, with fake backend
// CLIs. A relay run as a task outlives any tool-call timeout: the client gets the task at once,
// polls it, and fetches the result; cancelling it, or closing the connection, stops its backend.
import { describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { CallToolResultSchema, CreateTaskResultSchema, McpError, ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { FakeMode } from './support/fake-cli.js'
import { mcpServerSuite } from './support/mcp-server.js'
import { processesWithEnv } from './support/processes.js'
import { CLI } from './support/run-cli.js'

const suite = mcpServerSuite()

async function connect(mode: FakeMode, extra: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: suite.repo.path, env: suite.env(mode, extra), stderr: 'pipe' })
  suite.client = new Client({ name: 'relay-task-tests', version: '0.0.0' })
  await suite.client.connect(transport)
  // The SDK learns which tools run as tasks from the list.
  await suite.client.listTools()
  return suite.client
}

/** Asks for a relay as a task; resolves with its id once the server answered. */
async function startTask(c: Client, backend = 'gemini', ttl = 60_000): Promise<string> {
  const created = await c.request({ method: 'tools/call', params: { name: 'relay', arguments: { prompt: 'p', backend } } }, CreateTaskResultSchema, { task: { ttl } })
  return created.task.taskId
}

describe('MCP tasks with the TypeScript SDK', () => {
  it('declares tasks; relay and review are task-capable, backends is not', async () => {
    const c = await connect('answer')
    expect(c.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } })
    const { tools } = await c.listTools()
    expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]))).toEqual({ backends: undefined, relay: 'optional', review: 'optional' })
    // A client without tasks still calls the tools as before.
    const result = await c.callTool({ name: 'relay', arguments: { prompt: 'Check it', backend: 'codex' } })
    expect(result.structuredContent).toEqual({ backend: 'codex', ok: true, answer: 'file answer' })
  })

  it('a 5 s relay as a task: the task at once, progress and status while it runs, then the result', async () => {
    // gemini's events, 0.75 s apart: the relay takes over 5 s.
    const c = await connect('events', { FAKE_GAP: '0.75' })
    const progress: string[] = []
    const status: string[] = []
    c.setNotificationHandler(ProgressNotificationSchema, ({ params }) => {
      const kind = (params._meta?.['io.github.phone-a-friend/progress'] as { kind?: string } | undefined)?.kind
      ;(kind === 'text' ? progress : status).push(String(params.message))
    })
    const started = performance.now()
    const seen: Array<{ type: string; at: number; status?: string; statusMessage?: string }> = []
    let result: unknown
    const stream = c.experimental.tasks.callToolStream({ name: 'relay', arguments: { prompt: 'p', backend: 'gemini' } }, CallToolResultSchema, {
      task: { ttl: 60_000 },
      onprogress: () => undefined, // makes the SDK send a progress token, kept for the task's life
    })
    for await (const message of stream) {
      const at = performance.now() - started
      if (message.type === 'taskCreated') seen.push({ type: message.type, at, status: message.task.status })
      else if (message.type === 'taskStatus') seen.push({ type: message.type, at, status: message.task.status, statusMessage: message.task.statusMessage })
      else if (message.type === 'result') {
        seen.push({ type: message.type, at })
        result = message.result
      } else throw message.error
    }
    const elapsed = performance.now() - started
    console.info(`task: created after ${seen[0].at.toFixed(0)} ms; result after ${elapsed.toFixed(0)} ms; ${seen.filter((m) => m.type === 'taskStatus').length} polls; ${progress.length} progress notes`)
    expect(seen[0]).toMatchObject({ type: 'taskCreated', status: 'working' })
    expect(seen[0].at).toBeLessThan(1000)
    expect(elapsed).toBeGreaterThan(5000)
    // Polled while it ran: the status says how far the answer got.
    const working = seen.filter((m) => m.type === 'taskStatus' && m.status === 'working')
    expect(working.length).toBeGreaterThanOrEqual(3)
    expect(working.some((m) => /^gemini: (thinking|writing the answer) \(\d+s, \d+ bytes of the answer so far\)$/.test(m.statusMessage ?? ''))).toBe(true)
    expect(seen.at(-2)).toMatchObject({ type: 'taskStatus', status: 'completed' })
    expect(result).toMatchObject({ isError: false, structuredContent: { backend: 'gemini', ok: true, answer: 'Hello, wörld 😀!' } })
    // The answer streamed as progress under the call's token, before the end.
    expect(progress).toEqual(['Hel', 'lo, wörld 😀', '!\n'])
    // Between its pieces, the relay's status: each change of phase, and every 5 s without one.
    expect(status.length).toBeGreaterThanOrEqual(2)
  }, 20_000)

  it('tasks/cancel stops the backend: no process of it is left', async () => {
    const c = await connect('hang-with-grandchild')
    const server = processesWithEnv(suite.mark)
    expect(server).toHaveLength(1)
    const taskId = await startTask(c)
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    const cancelled = performance.now()
    const task = await c.experimental.tasks.cancelTask(taskId)
    expect(task).toMatchObject({ taskId, status: 'cancelled' })
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 2000 }).toEqual(server)
    console.info(`task: backend gone ${(performance.now() - cancelled).toFixed(0)} ms after tasks/cancel`)
    expect(await c.experimental.tasks.getTask(taskId)).toMatchObject({ status: 'cancelled' })
    await expect(c.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/was cancelled/)
    await expect(c.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/already ended/)
  })

  it('the client closing the connection stops every task backend, and the server exits', async () => {
    const c = await connect('hang-with-grandchild')
    await startTask(c)
    await startTask(c)
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(5)
    const closing = performance.now()
    // close() ends the server's stdin and gives it 2 s before a SIGTERM.
    await c.close()
    suite.client = undefined
    const closed = performance.now() - closing
    expect(closed).toBeLessThan(2000)
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 2000 }).toEqual([])
  })

  it('the server stopping (SIGTERM) leaves no task backend', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: suite.repo.path, env: suite.env('hang-with-grandchild'), stderr: 'pipe' })
    const c = new Client({ name: 'relay-task-tests', version: '0.0.0' })
    suite.client = c
    await c.connect(transport)
    await startTask(c)
    await expect.poll(() => processesWithEnv(suite.mark).length, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    const pid = transport.pid
    expect(pid).toBeTypeOf('number')
    process.kill(pid!, 'SIGTERM')
    await expect.poll(() => processesWithEnv(suite.mark), { timeout: 3000 }).toEqual([])
  })

  it('past four running tasks the next is refused with a clear error; a cancelled one frees its slot', async () => {
    const c = await connect('hang-with-grandchild')
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push(await startTask(c))
    const refused = await startTask(c).then(() => undefined, (error: unknown) => error)
    expect(refused).toBeInstanceOf(McpError)
    expect(refused).toMatchObject({ code: -32000, data: { limit: 4 } })
    expect((refused as Error).message).toContain('4 tasks are running, the server\'s limit: wait for one to end, or cancel one (tasks/cancel)')
    expect((await c.experimental.tasks.listTasks()).tasks.map((task) => task.taskId)).toEqual(ids)
    await c.experimental.tasks.cancelTask(ids[0])
    await expect.poll(() => startTask(c).then(() => true, () => false), { timeout: 3000 }).toBe(true)
    for (const id of ids.slice(1)) await c.experimental.tasks.cancelTask(id)
  })

  it('an ended task is dropped after its ttl', async () => {
    const c = await connect('answer')
    const taskId = await startTask(c, 'codex', 1000)
    const result = await c.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)
    expect(result.structuredContent).toEqual({ backend: 'codex', ok: true, answer: 'file answer' })
    const task = await c.experimental.tasks.getTask(taskId)
    expect(task.status).toBe('completed')
    // Kept until its ttl from creation, and at least its ttl (1 s here) after its end.
    await expect
      .poll(() => c.experimental.tasks.getTask(taskId).then(() => 'kept', (error: Error) => error.message), { timeout: 5000, interval: 200 })
      .toMatch(/no task .* \(unknown, or dropped after its ttl\)/)
  })
})

describe('long answers', () => {
  it('an answer past 100 000 bytes is cut with a note; the whole is a resource to read', async () => {
    // 8 000 000 bytes on codex's stdout.
    const c = await connect('big-answer')
    const result = await c.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'codex' } })
    const structured = result.structuredContent as { answer: string; truncated: { answerBytes: number; resource: string } }
    expect(structured.answer).toBe('a'.repeat(100_000))
    expect(structured.truncated.answerBytes).toBe(8_000_000)
    expect(structured.truncated.resource).toMatch(/^phone-a-friend:\/\/answers\/[0-9a-f-]{36}$/)
    const text = (result.content as Array<{ text: string }>)[0].text
    expect(text.length).toBeLessThan(100_400)
    expect(text.slice(100_000)).toContain(`the answer is 8000000 bytes; the first 100000 are above. The whole answer is the resource ${structured.truncated.resource}: read it with resources/read`)
    const read = await c.readResource({ uri: structured.truncated.resource })
    expect(read.contents).toHaveLength(1)
    expect((read.contents[0] as { text: string }).text).toBe('a'.repeat(8_000_000))
  })
})
