// The one Ollama stand-in of the JS suites: a real HTTP server on 127.0.0.1.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * How to answer a chat (any request but `GET /api/tags`): `count` is how many came so far, this
 * one included; `body` its JSON.
 */
export type OllamaReply = (res: ServerResponse, count: number, body: Record<string, unknown>, req: IncomingMessage) => void

export interface OllamaStub {
  /** The JSON bodies of the chats received, in order. */
  readonly bodies: Array<Record<string, unknown>>
  /** `<method> <url>` of every request received, `GET /api/tags` included, in order. */
  readonly asked: string[]
  /** `127.0.0.1:<port>`, for OLLAMA_HOST. */
  readonly host: string
  readonly port: number
  /** What `GET /api/tags` lists. */
  models: string[]
  reply: OllamaReply
  /** TCP connections accepted so far. */
  connections(): number
  close(): Promise<void>
}

/** One NDJSON line of a finished chat answer. */
export function chatLine(content: string): string {
  return `${JSON.stringify({ message: { content }, done: true })}\n`
}

export async function startOllamaStub(reply: OllamaReply, models: string[] = []): Promise<OllamaStub> {
  const bodies: Array<Record<string, unknown>> = []
  const asked: string[] = []
  let connections = 0
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`)
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/api/tags') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ models: stub.models.map((name) => ({ name })) }))
        return
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>
      bodies.push(body)
      stub.reply(res, bodies.length, body, req)
    })
  })
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const stub: OllamaStub = {
    bodies,
    asked,
    host: `127.0.0.1:${port}`,
    port,
    models,
    reply,
    connections: () => connections,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  return stub
}

/** `127.0.0.1:<port>` of a port nothing listens on (it was free a moment ago). */
export async function closedHost(): Promise<string> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return `127.0.0.1:${port}`
}
