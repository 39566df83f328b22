/**
 * A relay over MCP 2026-07-28 (docs/MCP.md, "MCP 2026-07-28"), driven by the official TypeScript
 * SDK v2 client (@modelcontextprotocol/client): with `versionNegotiation: { mode: 'auto' }` it
 * asks the server with `server/discover` which revisions it speaks and, the server offering
 * 2026-07-28, sends every request on its own (no `initialize`), with the protocol version and its
 * capabilities in the request's `_meta`.
 *
 * Run from the command line (see README.md beside this file):
 *   node examples/dist/mcp-v2-client.js [repo] [--to codex] [--prompt "…"]
 */
import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'

/** The server: this repository's CLI (in your project: `npx -y @phone-a-friend/relay mcp`). */
const SERVER = { command: process.execPath, args: [resolve(__dirname, '..', '..', 'bin', 'phone-a-friend.js'), 'mcp'] }

export async function relayOverMcp(repoPath: string, backend: string, prompt: string): Promise<{ protocolVersion: string | undefined; answer: string }> {
  const client = new Client({ name: 'mcp-v2-example', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } })
  // The SDK hands a server only a few variables (HOME, PATH…) unless told: the backends need the
  // rest (API keys, their configuration).
  const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined))
  await client.connect(new StdioClientTransport({ ...SERVER, cwd: repoPath, env }))
  try {
    const result = await client.callTool({ name: 'relay', arguments: { prompt, backend, repoPath } })
    const text = result.content.find((block) => block.type === 'text')
    if (result.isError) throw new Error(text?.text ?? 'the relay failed')
    // '2026-07-28' from this server; a server that does not answer server/discover gets
    // initialize instead, and this says the 2025 revision it agreed to.
    return { protocolVersion: client.getNegotiatedProtocolVersion(), answer: text?.text ?? '' }
  } finally {
    await client.close()
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { to: { type: 'string' }, prompt: { type: 'string' } },
  })
  const { protocolVersion, answer } = await relayOverMcp(resolve(positionals[0] ?? '.'), values.to ?? 'codex', values.prompt ?? 'Review the uncommitted changes: is anything wrong?')
  process.stderr.write(`MCP ${protocolVersion}\n`)
  process.stdout.write(`${answer}\n`)
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  })
}
