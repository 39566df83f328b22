// The ollama backend against a real HTTP server started by the test, which streams NDJSON as a
// real Ollama does for `"stream": true` (a relay nobody streams asks for `"stream": false`; the
// same NDJSON is read then too).
import { once } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, relay, relayDetailed, relayStream, reviewRelay, type RelayError } from '@phone-a-friend/relay'
import { TempRepo } from './support/git-repo.js'
import { runCli } from './support/run-cli.js'
import { closedHost, startOllamaStub, type OllamaStub } from './support/ollama-stub.js'

type Handler = (body: Record<string, unknown>, res: ServerResponse, req: IncomingMessage) => void

let stub: OllamaStub
let handler: Handler
let repo: TempRepo
const saved = { OLLAMA_HOST: process.env.OLLAMA_HOST, OLLAMA_MODEL: process.env.OLLAMA_MODEL }

const json = (res: ServerResponse, status: number, value: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One line as a real Ollama streams it. */
const line = (content: string): string =>
  `${JSON.stringify({ model: 'llama3.2', created_at: new Date().toISOString(), message: { role: 'assistant', content }, done: false })}\n`

/** A real Ollama's last line: empty content, done, statistics. */
const doneLine = (): string =>
  `${JSON.stringify({
    model: 'llama3.2',
    created_at: new Date().toISOString(),
    message: { role: 'assistant', content: '' },
    done: true,
    done_reason: 'stop',
    total_duration: 4883583458,
    eval_count: 282,
  })}\n`

const ndjson = (res: ServerResponse): ServerResponse => res.writeHead(200, { 'content-type': 'application/x-ndjson' })

/** When `streamTokens` last began writing its final token (ms since the epoch). */
let lastTokenAt = 0

/** Streams `tokens`, one write each `gapMs` apart, then the done line. */
const streamTokens = (tokens: string[], gapMs: number): Handler => async (_, res) => {
  ndjson(res)
  for (const [i, token] of tokens.entries()) {
    await sleep(gapMs)
    if (i === tokens.length - 1) lastTokenAt = Date.now()
    res.write(line(token))
  }
  await sleep(gapMs)
  res.end(doneLine())
}

async function collect(stream: AsyncGenerator<string, string, undefined>, started: number) {
  const chunks: Array<{ text: string; at: number }> = []
  for (;;) {
    const step = await stream.next()
    if (step.done) return { chunks, answer: step.value, endedAt: Date.now() - started }
    chunks.push({ text: step.value, at: Date.now() - started })
  }
}

beforeEach(async () => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  handler = (_, res) => json(res, 200, { message: { role: 'assistant', content: '  ollama says hi \n' }, done: true })
  stub = await startOllamaStub((res, _, body, req) => handler(body, res, req))
  process.env.OLLAMA_HOST = `http://${stub.host}`
  delete process.env.OLLAMA_MODEL
})

afterEach(async () => {
  await stub.close()
  repo.remove()
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

describe('ollama', () => {
  it('posts the envelope to /api/chat and answers the trimmed content', async () => {
    await expect(relay({ prompt: 'Hello', repoPath: repo.path, backend: 'ollama', model: 'llama3' })).resolves.toBe('ollama says hi')
    expect(stub.bodies).toHaveLength(1)
    const body = stub.bodies[0]
    // As upstream's relay(): nobody streams this call, so one JSON answer is asked for.
    expect(body).toMatchObject({ model: 'llama3', stream: false })
    const messages = body.messages as Array<{ role: string; content: string }>
    expect(messages).toHaveLength(1)
    expect(messages[0].role).toBe('user')
    expect(messages[0].content).toMatch(/^You are helping another coding agent[\s\S]*Request:\nHello$/)
  })

  it('with fit, fits the envelope to the model’s window from /api/show and asks a num_ctx that holds it', async () => {
    // An 8,192-token model: 2,048 tokens kept for the answer, 2 bytes a token for the prompt.
    handler = (body, res, req) => {
      if (req.url === '/api/show') return json(res, 200, { parameters: 'stop "<|eot|>"', model_info: { 'general.architecture': 'llama', 'llama.context_length': 8192 } })
      json(res, 200, { message: { role: 'assistant', content: 'fitted' }, done: true })
    }
    const options = { prompt: 'Review', repoPath: repo.path, backend: 'ollama', model: 'small', contextText: 'x'.repeat(40_000) }
    const dryRun = await relay({ ...options, fit: true, dryRun: true, onWarning: () => {} })
    expect(dryRun.maxPromptBytes).toBe((8192 - 2048) * 2)
    expect(dryRun.envelopeBytes).toBeLessThanOrEqual(dryRun.maxPromptBytes)
    expect(dryRun.envelope).toContain('[phone-a-friend: the context was cut to fit the envelope: ')
    expect(dryRun.action).toMatchObject({ kind: 'http', body: { model: 'small', options: { num_ctx: 8192 } } })
    await expect(relay({ ...options, fit: true })).resolves.toBe('fitted')
    expect(stub.asked).toEqual(['POST /api/show', 'POST /api/show', 'POST /api/chat'])
    expect(stub.bodies[0]).toEqual({ model: 'small' })
    const chat = stub.bodies[2]
    expect(chat.options).toEqual({ num_ctx: 8192 })
    expect((chat.messages as Array<{ content: string }>)[0].content).toBe(dryRun.envelope)
    // Without fit nothing is asked and nothing added: the drop-in request.
    await relay({ ...options, prompt: 'short', contextText: 'ctx' })
    expect(stub.asked.slice(3)).toEqual(['POST /api/chat'])
    expect(stub.bodies[3].options).toBeUndefined()
  })

  it('with fit, a small prompt keeps the model’s default context, and an unknown model its whole budget', async () => {
    handler = (body, res, req) => {
      if (req.url === '/api/show') return body.model === 'big' ? json(res, 200, { model_info: { 'qwen2.context_length': 32768 } }) : json(res, 404, { error: `model '${String(body.model)}' not found` })
      json(res, 200, { message: { role: 'assistant', content: 'ok' }, done: true })
    }
    const small = await relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'big', fit: true, dryRun: true })
    expect(small.maxPromptBytes).toBe((32768 - 4096) * 2)
    expect(small.action).toMatchObject({ kind: 'http' })
    expect((small.action as { body: Record<string, unknown> }).body.options).toBeUndefined()
    const unknown = await relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'missing', fit: true, dryRun: true })
    expect(unknown.maxPromptBytes).toBe(500_000)
  })

  it('reports prompt_eval_count and eval_count as usage, and the model of the answer, streamed or not', async () => {
    handler = (body, res) => {
      const done = { model: 'llama3:8b-q4', message: { role: 'assistant', content: body.stream === true ? '' : 'whole' }, done: true, prompt_eval_count: 26, eval_count: 282 }
      if (body.stream !== true) return json(res, 200, done)
      ndjson(res).write(line('streamed'))
      res.end(`${JSON.stringify(done)}\n`)
    }
    const whole = await relayDetailed({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'llama3' })
    expect(whole).toMatchObject({ answer: 'whole', model: 'llama3:8b-q4', usage: { inputTokens: 26, outputTokens: 282 } })
    const chunks: string[] = []
    const streamed = await relayDetailed({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'llama3', onChunk: (text) => chunks.push(text) })
    expect(streamed).toMatchObject({ answer: 'streamed', model: 'llama3:8b-q4', usage: { inputTokens: 26, outputTokens: 282 } })
    expect(chunks).toEqual(['streamed'])
    // The CLI: in --json, and in --verbose's line on stderr.
    const env = { ...process.env, OLLAMA_HOST: stub.host }
    const printed = await runCli(['--prompt', 'p', '--to', 'ollama', '--model', 'llama3', '--json'], { cwd: repo.path, env })
    expect(JSON.parse(printed.stdout)).toMatchObject({ ok: true, answer: 'streamed', model: 'llama3:8b-q4', usage: { inputTokens: 26, outputTokens: 282 } })
    const verbose = await runCli(['--prompt', 'p', '--to', 'ollama', '--model', 'llama3', '--verbose'], { cwd: repo.path, env })
    expect(verbose.stdout).toBe('streamed\n')
    // After the phases (progress.spec.ts), the summary.
    expect(verbose.stderr).toMatch(/\n\[phone-a-friend\] ollama \(llama3:8b-q4\) answered in \d+\.\ds; 26 input tokens, 282 output\n$/)
    // A server that counts nothing: no usage, and the model the call named.
    handler = (_, res) => json(res, 200, { message: { role: 'assistant', content: 'plain' }, done: true })
    expect(await relayDetailed({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'llama3' })).toMatchObject({ model: 'llama3', usage: null })
  })

  it('takes the model from OLLAMA_MODEL, and reads a host without a scheme', async () => {
    process.env.OLLAMA_MODEL = 'from-env'
    process.env.OLLAMA_HOST = stub.host
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })
    expect(stub.bodies[0].model).toBe('from-env')
  })

  it('reviews through the generic path with the diff', async () => {
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'new\n').commit('feature')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'ollama' })).resolves.toBe('ollama says hi')
    const messages = stub.bodies[0].messages as Array<{ content: string }>
    expect(messages[0].content).toContain('Git Diff:\ndiff --git a/b.txt b/b.txt')
  })

  it.each<[string, Handler, string, string]>([
    ['an HTTP error', (_, res) => res.writeHead(500).end('x'.repeat(300)), 'ERR_BACKEND_FAILED', `Ollama returned HTTP 500: ${'x'.repeat(200)}`],
    ['invalid JSON', (_, res) => res.writeHead(200).end('{not json'), 'ERR_BACKEND_FAILED', 'Ollama returned invalid JSON (HTTP 200)'],
    ['an error field', (_, res) => json(res, 200, { error: 'model "nope" not found' }), 'ERR_BACKEND_FAILED', 'Ollama error: model "nope" not found'],
    ['an empty answer', (_, res) => json(res, 200, { message: { content: ' \n' } }), 'ERR_BACKEND_NO_OUTPUT', 'Ollama completed without producing output'],
    ['an empty stream', (_, res) => ndjson(res).end(line(' \n') + doneLine()), 'ERR_BACKEND_NO_OUTPUT', 'Ollama completed without producing output'],
    ['an error line mid-stream', (_, res) => ndjson(res).end(`${line('partial')}{"error":"unexpected EOF"}\n`), 'ERR_BACKEND_FAILED', 'Ollama error: unexpected EOF'],
    // Each U+0001 is six bytes of JSON (`\u0001`): a 17 MiB body for a 3 MB answer.
    ['an over-long answer', (_, res) => ndjson(res).end(line('\u0001'.repeat(3_000_000))), 'ERR_BACKEND_FAILED', 'Ollama returned an answer longer than 17825792 bytes (HTTP 200)'],
  ])('reports %s', async (_, reply, code, message) => {
    handler = reply
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).rejects.toMatchObject({ code, message, backend: 'ollama' })
  })

  it.each<[string, number, string, string, number | undefined]>([
    ['a missing key', 401, '{"error":"unauthorized"}', 'auth', undefined],
    ['a refused key', 403, '{"error":"forbidden"}', 'auth', undefined],
    ['an unknown model', 404, `{"error":"model 'nope' not found"}`, 'model-not-found', undefined],
    ['a rate limit that says when to come back', 429, '{"error":"rate limit exceeded, retry after 7s"}', 'rate-limit', 7],
    ['a spent quota', 429, '{"error":"you have reached your usage limit"}', 'quota', undefined],
    ['a server error', 500, '{"error":"boom"}', 'crashed', undefined],
  ])('says why for %s: its reason from the status and the body', async (_, status, body, reason, retryAfterSeconds) => {
    handler = (__, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(body)
    const error = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'nope' }).catch((e: unknown) => e)) as RelayError
    expect(error).toMatchObject({ code: 'ERR_BACKEND_FAILED', backend: 'ollama', reason, message: `Ollama returned HTTP ${status}: ${body}` })
    expect(error.retryAfterSeconds).toBe(retryAfterSeconds)
  })

  it('takes when to come back from a Retry-After header, the message staying the original’s', async () => {
    handler = (__, res) => res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '42' }).end('{"error":"too many requests"}')
    const error = (await relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', model: 'm' }).catch((e: unknown) => e)) as RelayError
    expect(error).toMatchObject({ reason: 'rate-limit', retryAfterSeconds: 42, message: 'Ollama returned HTTP 429: {"error":"too many requests"}', backendOutput: 'Retry-After: 42' })
  })

  it('refuses a streamed line over 1 MiB, which a relay nobody streams reads whole', async () => {
    handler = (_, res) => ndjson(res).end(line('x'.repeat(1024 * 1024)) + doneLine())
    const chunks: string[] = []
    const streamed = (async () => {
      for await (const chunk of relayStream({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })) chunks.push(chunk)
    })()
    await expect(streamed).rejects.toMatchObject({ code: 'ERR_BACKEND_FAILED', message: 'Ollama returned an NDJSON line longer than 1048576 bytes (HTTP 200)' })
    expect(chunks).toEqual([])
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).resolves.toHaveLength(1024 * 1024)
  })

  it('a server that never answers times out', async () => {
    handler = () => undefined
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', timeoutSeconds: 0.5 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'Ollama timed out after 0.5s',
      reason: 'timeout',
    })
  })

  it('nothing listening is ERR_BACKEND_UNAVAILABLE naming the host', async () => {
    const host = await closedHost()
    process.env.OLLAMA_HOST = `http://${host}`
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_UNAVAILABLE',
      message: `Ollama server not reachable at http://${host}. Is Ollama running? Install: https://ollama.com/download`,
      reason: 'network',
    })
  })

  it('an abort drops the request at once', async () => {
    handler = () => undefined
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', signal: controller.signal })
    await expect.poll(() => stub.bodies.length).toBe(1)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
  })

  describe('streaming', () => {
    it('relayStream() yields the tokens as Ollama writes them and returns what relay() answers', async () => {
      const tokens = ['\n', '  The', ' sky', ' is', ' blue. \n']
      handler = streamTokens(tokens, 80)
      const started = Date.now()
      const { chunks, answer } = await collect(relayStream({ prompt: 'p', repoPath: repo.path, backend: 'ollama' }), started)
      // The whitespace before the first text is not streamed; the rest is, as it came.
      const streamed = ['The', ' sky', ' is', ' blue. \n']
      expect(chunks.map((c) => c.text)).toEqual(streamed)
      expect(answer).toBe('The sky is blue.')
      // The first token arrives as it is written: before the last one is.
      expect(started + chunks[0].at).toBeLessThan(lastTokenAt)
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).resolves.toBe(answer)
      const seen: string[] = []
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama', onChunk: (t) => seen.push(t) })).resolves.toBe(answer)
      expect(seen).toEqual(streamed)
      // Streamed calls ask for a stream; the plain relay() does not.
      expect(stub.bodies.map((b) => b.stream)).toEqual([true, false, true])
    })

    it('keeps a 4-byte character whole when it is split across two TCP writes', async () => {
      handler = async (_, res) => {
        const bytes = Buffer.from(line('a😀b'))
        const split = bytes.indexOf(Buffer.from('😀')) + 2
        ndjson(res).write(bytes.subarray(0, split))
        await sleep(30)
        res.write(bytes.subarray(split))
        res.end(doneLine())
      }
      const { chunks, answer } = await collect(relayStream({ prompt: 'p', repoPath: repo.path, backend: 'ollama' }), Date.now())
      expect(chunks.map((c) => c.text)).toEqual(['a😀b'])
      expect(answer).toBe('a😀b')
    })

    it('break after the first chunk drops the HTTP request within 1 s', async () => {
      let closedAt: number | undefined
      handler = (_, res, req) => {
        req.socket.once('close', () => (closedAt = Date.now()))
        ndjson(res).write(line('tick '))
        const timer = setInterval(() => res.write(line('tick ')), 50)
        res.once('close', () => clearInterval(timer))
      }
      let brokeAt = 0
      for await (const chunk of relayStream({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })) {
        expect(chunk).toBe('tick ')
        brokeAt = Date.now()
        break
      }
      await expect.poll(() => closedAt, { timeout: 1000, interval: 10 }).toBeDefined()
      expect(closedAt! - brokeAt).toBeLessThan(1000)
    })

    it('a consumer that never reads stops the body being read: the server’s writes stall', async () => {
      const token = line('z'.repeat(64 * 1024))
      let written = 0
      let stalledAt: number | undefined
      let closed = false
      handler = async (_, res) => {
        res.once('close', () => (closed = true))
        ndjson(res)
        while (written < 256 * 1024 * 1024 && !closed) {
          written += token.length
          if (!res.write(token)) {
            const drained = await Promise.race([once(res, 'drain').then(() => true), sleep(500).then(() => false)])
            if (!drained) {
              stalledAt = written
              return
            }
          }
        }
      }
      const stream = relayStream({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })
      await stream.next()
      await expect.poll(() => stalledAt, { timeout: 10_000, interval: 50 }).toBeDefined()
      // 1 MiB waits unread in the relay; the rest fills the client's and the kernel's buffers.
      expect(stalledAt).toBeLessThan(32 * 1024 * 1024)
      await stream.return(undefined as never)
      await expect.poll(() => closed, { timeout: 1000, interval: 10 }).toBe(true)
    })

    it('sequential relays reuse a kept-alive TCP connection: at most 1 new connection per 20 relays', async () => {
      handler = streamTokens(['re', 'used'], 0)
      for (let i = 0; i < 40; i++) {
        await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'ollama' })).resolves.toBe('reused')
      }
      expect(stub.bodies).toHaveLength(40)
      // Usually 1. A connection returns to the pool in a task of its own once its answer is read:
      // when the next relay checks the pool before that task has run (a busy machine), it opens
      // a second connection, and from then on one of the two is always idle.
      expect(stub.connections()).toBeLessThanOrEqual(2)
    })
  })
})
