// The ollama backend against a real HTTP server started by the test.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, relay, reviewRelay } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo.js'

type Handler = (body: Record<string, unknown>, res: ServerResponse, req: IncomingMessage) => void

let server: Server
let port: number
let handler: Handler
let bodies: Array<Record<string, unknown>>
let repo: TempRepo
const saved = { OLLAMA_HOST: process.env.OLLAMA_HOST, OLLAMA_MODEL: process.env.OLLAMA_MODEL }

const json = (res: ServerResponse, status: number, value: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
}

beforeEach(async () => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  bodies = []
  handler = (_, res) => json(res, 200, { message: { role: 'assistant', content: '  ollama says hi \n' }, done: true })
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/api/tags') return json(res, 200, { models: [] })
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>
      bodies.push(body)
      handler(body, res, req)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
  process.env.OLLAMA_HOST = `http://127.0.0.1:${port}`
  delete process.env.OLLAMA_MODEL
})

afterEach(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  repo.remove()
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

describe('ollama', () => {
  it('posts the envelope to /api/chat and answers the trimmed content', async () => {
    await expect(relay({ prompt: 'Hello', repoPath: repo.path, backend: 'ollama', model: 'llama3' })).resolves.toBe('ollama says hi')
    expect(bodies).toHaveLength(1)
    const body = bodies[0]
    expect(body).toMatchObject({ model: 'llama3', stream: false })
    const messages = body.messages as Array<{ role: string; content: string }>
    expect(messages).toHaveLength(1)
    expect(messages[0].role).toBe('user')
    expect(messages[0].content).toMatch(/^You are helping another coding agent[\s\S]*Request:\nHello$/)
  })

  it('takes the model from OLLAMA_MODEL, and reads a host without a scheme', async () => {
    process.env.OLLAMA_MODEL = 'from-env'
    process.env.OLLAMA_HOST = `127.0.0.1:${port}`
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })
    expect(bodies[0].model).toBe('from-env')
  })

  it('reviews through the generic path with the diff', async () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'new\n').commit('feature')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'ollama' })).resolves.toBe('ollama says hi')
    const messages = bodies[0].messages as Array<{ content: string }>
    expect(messages[0].content).toContain('Git Diff:\ndiff --git a/b.txt b/b.txt')
  })

  it.each<[string, Handler, string, string]>([
    ['an HTTP error', (_, res) => res.writeHead(500).end('x'.repeat(300)), 'ERR_BACKEND_FAILED', `Ollama returned HTTP 500: ${'x'.repeat(200)}`],
    ['invalid JSON', (_, res) => res.writeHead(200).end('{not json'), 'ERR_BACKEND_FAILED', 'Ollama returned invalid JSON (HTTP 200)'],
    ['an error field', (_, res) => json(res, 200, { error: 'model "nope" not found' }), 'ERR_BACKEND_FAILED', 'Ollama error: model "nope" not found'],
    ['an empty answer', (_, res) => json(res, 200, { message: { content: ' \n' } }), 'ERR_BACKEND_NO_OUTPUT', 'Ollama completed without producing output'],
  ])('reports %s', async (_, reply, code, message) => {
    handler = reply
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).rejects.toMatchObject({ code, message, backend: 'ollama' })
  })

  it('a server that never answers times out', async () => {
    handler = () => undefined
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', timeoutSeconds: 0.5 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'Ollama timed out after 0.5s',
    })
  })

  it('nothing listening is ERR_BACKEND_UNAVAILABLE naming the host', async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    server = createServer()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_UNAVAILABLE',
      message: `Ollama server not reachable at http://127.0.0.1:${port}. Is Ollama running? Install: https://ollama.com/download`,
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  })

  it('an abort drops the request at once', async () => {
    handler = () => undefined
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', signal: controller.signal })
    await expect.poll(() => bodies.length).toBe(1)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
  })
})
