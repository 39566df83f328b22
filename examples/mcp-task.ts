/**
 * A relay as an MCP task (docs/MCP.md, "Tasks"), driven by the official TypeScript MCP SDK: the
 * task comes back at once, its status is polled while the backend works, and the result is
 * fetched at the end, however long that takes: no tool-call timeout applies. Ctrl-C cancels the
 * task (tasks/cancel), which stops the backend.
 *
 * Run from the command line (see README.md beside this file):
 *   node examples/dist/mcp-task.js [repo] [--to codex] [--prompt "…"]
 */
import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'

/** The server: this repository's CLI (in your project: `npx -y @phone-a-friend/relay mcp`). */
const SERVER = { command: process.execPath, args: [resolve(__dirname, '..', '..', 'bin', 'phone-a-friend.js'), 'mcp'] }

export async function relayAsTask(repoPath: string, backend: string, prompt: string): Promise<string> {
  const client = new Client({ name: 'mcp-task-example', version: '1.0.0' })
  // The SDK hands a server only a few variables (HOME, PATH…) unless told: the backends need the
  // rest (API keys, their configuration).
  const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined))
  await client.connect(new StdioClientTransport({ ...SERVER, cwd: repoPath, env }))
  let taskId: string | undefined
  const cancel = (): void => {
    if (taskId !== undefined) void client.experimental.tasks.cancelTask(taskId).catch(() => undefined)
  }
  process.once('SIGINT', cancel)
  try {
    // The SDK learns from the list that relay runs as a task (execution.taskSupport).
    await client.listTools()
    const stream = client.experimental.tasks.callToolStream(
      { name: 'relay', arguments: { prompt, backend, repoPath } },
      CallToolResultSchema,
      { task: { ttl: 30 * 60_000 } },
    )
    for await (const message of stream) {
      switch (message.type) {
        case 'taskCreated':
          taskId = message.task.taskId
          process.stderr.write(`task ${taskId}: ${message.task.status}\n`)
          break
        case 'taskStatus':
          process.stderr.write(`task ${message.task.taskId}: ${message.task.status}${message.task.statusMessage ? ` (${message.task.statusMessage})` : ''}\n`)
          break
        case 'result': {
          const text = message.result.content.find((block) => block.type === 'text')
          if (message.result.isError) throw new Error(text?.text ?? 'the relay failed')
          return text?.text ?? ''
        }
        case 'error':
          throw message.error
      }
    }
    throw new Error('the task ended without a result')
  } finally {
    process.removeListener('SIGINT', cancel)
    await client.close()
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { to: { type: 'string' }, prompt: { type: 'string' } },
  })
  const answer = await relayAsTask(resolve(positionals[0] ?? '.'), values.to ?? 'codex', values.prompt ?? 'Review the uncommitted changes: is anything wrong?')
  process.stdout.write(`${answer}\n`)
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  })
}
