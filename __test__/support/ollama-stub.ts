import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A stand-in Ollama server on 127.0.0.1 that records each request's JSON body. */
export interface OllamaStub {
  /** The bodies received, in order. */
  readonly bodies: Array<Record<string, unknown>>
  /** `127.0.0.1:<port>`, for OLLAMA_HOST. */
  readonly host: string
  /** How to answer the next requests (`count`: how many came so far, this one included). */
  reply: (res: ServerResponse, count: number) => void
  close(): Promise<void>
}

/** One NDJSON line of a finished chat answer. */
export function chatLine(content: string): string {
  return `${JSON.stringify({ message: { content }, done: true })}\n`
}

export async function startOllamaStub(reply: OllamaStub['reply']): Promise<OllamaStub> {
  const bodies: Array<Record<string, unknown>> = []
  const stub = { bodies, host: '', reply, close: async () => undefined } as OllamaStub
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>)
      stub.reply(res, bodies.length)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return Object.assign(stub, {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  })
}
