// Structured output and review verdicts (docs/CONTRACT.md §13): the schema reaches each backend (in
// the prompt, and natively for codex and Ollama), and every answer is checked against it in Rust.
import { join, resolve } from 'node:path'
import { writeFileSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, parseVerdict, registerBackend, relay, relayAll, relayStream, reviewRelay, type BackendRunOptions } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli'
import { claudeEnv, codexEnv, geminiEnv, startFakeModelServer, type FakeModelServer } from './support/fake-model-server'
import { TempRepo } from './support/git-repo'
import { chatLine, startOllamaStub, type OllamaStub } from './support/ollama-stub'
import { runCli } from './support/run-cli'

const SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['answer', 'tags'],
  properties: { answer: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
}
const SUFFIX = `\n\nRespond with JSON only. The response must match this JSON Schema exactly:\n${JSON.stringify(SCHEMA)}`

const verdictOf = (verdict: string, severities: string[]): string =>
  JSON.stringify({
    schema_version: 1,
    verdict,
    summary: 'Looks at the change.',
    findings: severities.map((severity, i) => ({ severity, title: `finding ${i}`, rationale: 'because', location: i === 0 ? 'a.txt:1' : null })),
  })

const savedEnv = { ...process.env }
let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
})

afterEach(() => {
  repo.remove()
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key]
  Object.assign(process.env, savedEnv)
})

/** A JS backend answering `answers` in turn, recording what run() got. */
function scripted(...answers: string[]): BackendRunOptions[] {
  const calls: BackendRunOptions[] = []
  registerBackend({
    name: 'scripted',
    allowedSandboxes: new Set(['read-only'] as const),
    run: async (options) => {
      calls.push(options)
      return answers[calls.length - 1] ?? 'no more answers'
    },
  })
  return calls
}

describe('a schema', () => {
  it('is asked for at the end of the prompt, passed to a JS backend, and the answer comes back as its JSON text', async () => {
    const calls = scripted(' {"answer": 42, "tags": ["a"]}\n', '```json\n{"answer": 1, "tags": []}\n```')
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'scripted', schema: SCHEMA })).resolves.toBe('{"answer": 42, "tags": ["a"]}')
    expect(calls[0].prompt.endsWith(`Request:\nCount${SUFFIX}`)).toBe(true)
    expect(JSON.parse(calls[0].schema ?? 'null')).toEqual(SCHEMA)
    // A string schema is the same schema; a fenced answer is read inside its fence.
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'scripted', schema: JSON.stringify(SCHEMA) })).resolves.toBe('{"answer": 1, "tags": []}')
  })

  it('an answer that breaks it is ERR_SCHEMA naming the first violation', async () => {
    scripted('{"answer": 42, "tags": ["a", 7]}', '{"tags": []}', 'forty-two')
    const call = () => relay({ prompt: 'Count', repoPath: repo.path, backend: 'scripted', schema: SCHEMA })
    // Each carries the backend that answered and its whole answer, and no cause: it did not fail.
    const mismatch = { code: 'ERR_SCHEMA', backend: 'scripted' }
    await expect(call()).rejects.toMatchObject({ ...mismatch, answer: '{"answer": 42, "tags": ["a", 7]}', message: 'Answer does not match the schema at /tags/1: 7 is not of type "string"' })
    await expect(call()).rejects.toMatchObject({ ...mismatch, answer: '{"tags": []}', message: 'Answer does not match the schema at /: "answer" is a required property' })
    await expect(call()).rejects.toMatchObject({
      ...mismatch,
      answer: 'forty-two',
      message: 'Answer is not JSON: it begins "forty-two", and is not JSON from line 1 column 2 on; the whole answer is the error\'s answer',
    })
    scripted('[]')
    const error = (await call().catch((e: unknown) => e)) as Error
    expect(error.cause).toBeUndefined()
  })

  it('that is not one is refused before any file is read or backend called', async () => {
    const calls = scripted('{}')
    const bad = { prompt: 'p', repoPath: repo.path, backend: 'scripted', contextFile: 'missing.txt' }
    await expect(relay({ ...bad, schema: '{"type": 12' })).rejects.toMatchObject({ code: 'ERR_SCHEMA', message: expect.stringMatching(/^Invalid JSON Schema: not JSON: /) })
    await expect(relay({ ...bad, schema: { type: 'no-such-type' } })).rejects.toMatchObject({ code: 'ERR_SCHEMA', message: expect.stringMatching(/^Invalid JSON Schema: /) })
    // After the backend and sandbox checks, before the context (its file is missing here).
    await expect(relay({ ...bad, backend: 'nope', schema: '{' })).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND' })
    await expect(relay({ ...bad, schema: 5 as unknown as object })).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
    expect(calls).toHaveLength(0)
  })

  it('a schema JSON cannot write (a BigInt, a cycle) is refused with a coded TypeError, by every call', async () => {
    const calls = scripted('{}')
    const cyclic: Record<string, unknown> = { type: 'object' }
    cyclic.self = cyclic
    const base = { prompt: 'Count', repoPath: repo.path, backend: 'scripted' }
    for (const schema of [{ type: 'integer', maximum: 10n }, cyclic]) {
      const refused = { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "options.schema" property must be JSON-serialisable. Received an instance of Object', cause: expect.any(TypeError) }
      await expect(relay({ ...base, schema })).rejects.toMatchObject(refused)
      await expect(reviewRelay({ repoPath: repo.path, backend: 'scripted', base: 'HEAD', schema })).rejects.toMatchObject(refused)
      await expect(relayAll({ prompt: 'Count', repoPath: repo.path, backends: ['scripted'], schema })).rejects.toMatchObject(refused)
      await expect(relayStream({ ...base, schema }).next()).rejects.toMatchObject(refused)
    }
    expect(calls).toHaveLength(0)
  })

  it('counts toward the prompt limit', async () => {
    scripted('{}')
    // Just under the limit without the schema's request, over it with it.
    const prompt = 'x'.repeat(499_700)
    await expect(relay({ prompt, repoPath: repo.path, backend: 'scripted' })).resolves.toBe('{}')
    await expect(relay({ prompt, repoPath: repo.path, backend: 'scripted', schema: SCHEMA })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE', message: expect.stringMatching(/^Relay prompt is too large/) })
  })
})

describe('a hostile schema', () => {
  it('larger than a prompt can hold is refused by its size, before it is parsed or compiled', async () => {
    const calls = scripted('{}')
    const huge = { type: 'object', description: 'd'.repeat(12_000_000) }
    const started = performance.now()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'scripted', schema: huge, timeoutSeconds: 0.5 })).rejects.toMatchObject({
      code: 'ERR_TOO_LARGE',
      message: `JSON Schema is too large (${JSON.stringify(huge).length} bytes; max 500000 bytes)`,
    })
    await expect(relayAll({ prompt: 'p', repoPath: repo.path, backends: ['scripted'], schema: huge })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE' })
    await expect(reviewRelay({ repoPath: repo.path, backend: 'scripted', base: 'HEAD', schema: huge })).rejects.toMatchObject({ code: 'ERR_TOO_LARGE' })
    // Generous: compiling it took seconds.
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(calls).toHaveLength(0)
  })

  it('with a pattern that backtracks is refused before the backend runs', async () => {
    // Over an answer of 100 such keys a backtracking engine takes seconds to hours.
    const keys = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`${'a'.repeat(30)}${i}!`, i]))
    const calls = scripted(JSON.stringify(keys))
    for (const schema of [
      { type: 'object', patternProperties: { '^(a|a)*(?!.)b': {} } },
      { type: 'object', propertyNames: { pattern: '^(a|a)*(?!.)b' } },
      { type: 'object', patternProperties: { '(a)\\1': {} } },
    ]) {
      await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'scripted', schema, timeoutSeconds: 0.5 })).rejects.toMatchObject({
        code: 'ERR_SCHEMA',
        message: expect.stringMatching(/is not a "regex" \(patterns must match in linear time: no lookaround or backreferences/),
      })
    }
    expect(calls).toHaveLength(0)
  })

  it('with a pattern a backtracking engine would take hours over: matched in linear time, within the timeout', async () => {
    const keys = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`${'a'.repeat(40)}${i}`, i]))
    scripted(JSON.stringify(keys), JSON.stringify({ ...keys, aaab: 'x' }))
    const schema = { type: 'object', patternProperties: { '^(a|a)*$': {}, '^(a+)+b$': { type: 'integer' } }, propertyNames: { pattern: '^(\\w+\\s?)+$' } }
    const call = () => relay({ prompt: 'p', repoPath: repo.path, backend: 'scripted', schema, timeoutSeconds: 5 })
    await expect(call()).resolves.toBe(JSON.stringify(keys))
    await expect(call()).rejects.toMatchObject({ code: 'ERR_SCHEMA', message: 'Answer does not match the schema at /aaab: "x" is not of type "integer"' })
  })
})

describe('Ollama', () => {
  let stub: OllamaStub

  beforeEach(async () => {
    stub = await startOllamaStub((res, count) => res.writeHead(200).end(chatLine('{"answer":7,"tags":[]}')))
    process.env.OLLAMA_HOST = stub.host
  })

  afterEach(() => stub.close())

  it('gets the schema as its format, and in the prompt', async () => {
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'ollama', schema: SCHEMA })).resolves.toBe('{"answer":7,"tags":[]}')
    expect(stub.bodies[0].format).toEqual(SCHEMA)
    expect((stub.bodies[0].messages as Array<{ content: string }>)[0].content.endsWith(SUFFIX)).toBe(true)
  })
})

describe('the real CLIs', () => {
  const BIN = resolve(__dirname, '..', 'node_modules', '.bin')
  let server: FakeModelServer

  beforeAll(async () => {
    server = await startFakeModelServer()
  })
  afterAll(async () => {
    await server.close()
  })
  beforeEach(() => {
    process.env.PATH = `${BIN}:${process.env.PATH ?? ''}`
    server.requests.length = 0
    server.setAnswer('{"answer": 3, "tags": ["x"]}')
  })

  it('codex 0.169 gets it through --output-schema: the model request carries it', async () => {
    Object.assign(process.env, await codexEnv(server))
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'codex', schema: SCHEMA })).resolves.toBe('{"answer": 3, "tags": ["x"]}')
    const [request] = server.modelRequests()
    expect(JSON.stringify(request.body)).toContain(JSON.stringify(SCHEMA.properties))
    expect(request.prompt?.endsWith(SUFFIX)).toBe(true)
    server.setAnswer('{"answer": "three", "tags": []}')
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'codex', schema: SCHEMA })).rejects.toMatchObject({ code: 'ERR_SCHEMA', message: 'Answer does not match the schema at /answer: "three" is not of type "integer"' })
  })

  it('gemini 0.61 gets it in the prompt', async () => {
    Object.assign(process.env, await geminiEnv(server))
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'gemini', schema: SCHEMA })).resolves.toBe('{"answer": 3, "tags": ["x"]}')
    const request = server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.prompt?.endsWith(SUFFIX)).toBe(true)
  })

  it('claude 2.1.330 gets it through --json-schema, and in the prompt', async () => {
    Object.assign(process.env, await claudeEnv(server))
    await expect(relay({ prompt: 'Count', repoPath: repo.path, backend: 'claude', schema: SCHEMA })).resolves.toBe('{"answer": 3, "tags": ["x"]}')
    const request = server.modelRequests().find((r) => r.protocol === 'anthropic')
    expect(request?.prompt?.endsWith(SUFFIX)).toBe(true)
    // claude offers the model a StructuredOutput tool whose input schema is ours.
    const tools = (request?.body as { tools?: Array<{ name?: string; input_schema?: unknown }> } | undefined)?.tools ?? []
    expect(tools.find((tool) => tool.name === 'StructuredOutput')?.input_schema).toEqual(SCHEMA)
  })

  it('codex: a verdict review takes the generic path, its schema through --output-schema', async () => {
    Object.assign(process.env, await codexEnv(server))
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('b.txt', 'feature work\n').commit('feature')
    server.setAnswer(verdictOf('iterate', ['important', 'nit']))
    const answer = await reviewRelay({ repoPath: repo.path, backend: 'codex', verdict: true })
    expect(parseVerdict(answer).verdict).toBe('iterate')
    const [request] = server.modelRequests()
    expect(request.prompt).toContain('Review request:\nReview the changes in this branch.')
    expect(request.prompt).toContain('Git Diff:\ndiff --git a/b.txt b/b.txt')
    expect(JSON.stringify(request.body)).toContain('"schema_version"')
  })
})

describe('verdicts', () => {
  it('a consistent verdict comes back as its compact JSON, what parseVerdict reads', async () => {
    const calls = scripted(`\`\`\`json\n${verdictOf('iterate', ['blocker', 'nit'])}\n\`\`\``)
    repo.write('a.txt', 'two\n').commit('second')
    const answer = await reviewRelay({ repoPath: repo.path, backend: 'scripted', base: 'HEAD~1', verdict: true, prompt: 'Only correctness' })
    expect(answer).toBe(verdictOf('iterate', ['blocker', 'nit']))
    expect(parseVerdict(answer)).toEqual(JSON.parse(answer))
    expect(calls[0].prompt).toContain('Review request:\nOnly correctness\n\nRespond with a JSON object matching this exact shape')
    expect(calls[0].prompt).toContain('Git Diff:\ndiff --git a/a.txt b/a.txt')
  })

  it('a verdict its findings contradict is ERR_SCHEMA', async () => {
    scripted(verdictOf('ship', ['blocker']), verdictOf('abstain', ['nit']))
    const review = () => reviewRelay({ repoPath: repo.path, backend: 'scripted', base: 'HEAD', verdict: true })
    await expect(review()).rejects.toMatchObject({ code: 'ERR_SCHEMA', message: 'verdict "ship" contradicts findings; severities=[blocker]' })
    await expect(review()).rejects.toMatchObject({ code: 'ERR_SCHEMA', message: 'verdict "abstain" contradicts findings; severities=[nit]' })
  })

  it('a verdict has its own schema: not with schema', async () => {
    scripted('{}')
    await expect(reviewRelay({ repoPath: repo.path, backend: 'scripted', base: 'HEAD', verdict: true, schema: SCHEMA })).rejects.toMatchObject({
      code: 'ERR_SCHEMA',
      message: 'Use either verdict or schema, not both: a verdict has its own schema',
    })
  })

  it('parseVerdict checks shape and consistency', () => {
    expect(parseVerdict(verdictOf('abstain', []))).toEqual({ schema_version: 1, verdict: 'abstain', summary: 'Looks at the change.', findings: [] })
    expect(() => parseVerdict(verdictOf('iterate', ['nit']))).toThrow(expect.objectContaining({ name: 'RelayError', code: 'ERR_SCHEMA', message: 'verdict "iterate" contradicts findings; severities=[nit]' }))
    expect(() => parseVerdict('{"schema_version":2}')).toThrow('verdict schema_version mismatch: expected 1, got 2')
    expect(() => parseVerdict(5 as unknown as string)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })

  it('parseVerdict refuses a flood of findings with a short message naming the count or size', () => {
    const refusal = (text: string): { name: string; code: string; message: string } => {
      try {
        parseVerdict(text)
      } catch (error) {
        return error as { name: string; code: string; message: string }
      }
      throw new Error('parseVerdict accepted it')
    }
    const flood = verdictOf('ship', Array<string>(300_000).fill('blocker'))
    expect(refusal(flood)).toMatchObject({ name: 'RelayError', code: 'ERR_SCHEMA', message: `verdict response is too large (${Buffer.byteLength(flood)} bytes; max 8388608 bytes)` })
    expect(refusal(verdictOf('ship', Array<string>(1_001).fill('nit')))).toMatchObject({ code: 'ERR_SCHEMA', message: 'verdict has 1001 findings; at most 1000 are read' })
    // A contradiction lists 20 severities at most.
    const contradiction = refusal(verdictOf('ship', Array<string>(1_000).fill('blocker')))
    expect(contradiction).toMatchObject({ code: 'ERR_SCHEMA', message: `verdict "ship" contradicts findings; severities=[${Array(20).fill('blocker').join(', ')}, \u2026 980 more]` })
  })
})

describe('the CLI', () => {
  let clis: FakeClis
  beforeEach(() => (clis = new FakeClis(['gemini']).mode('stdout-env-answer')))
  afterEach(() => clis.restore())

  const cli = (args: string[], answer: string) => runCli(['--to', 'gemini', ...args], { cwd: repo.path, env: { ...process.env, FAKE_ANSWER: answer } })

  it('--schema takes inline JSON or a file; the answer is its JSON text', async () => {
    await expect(cli(['--prompt', 'Count', '--schema', JSON.stringify(SCHEMA)], '{"answer":1,"tags":[]}')).resolves.toMatchObject({ code: 0, stdout: '{"answer":1,"tags":[]}\n' })
    expect(clis.read('stdin').endsWith(SUFFIX)).toBe(true)
    const file = join(repo.path, 'schema.json')
    writeFileSync(file, JSON.stringify(SCHEMA))
    await expect(cli(['--prompt', 'Count', '--schema', 'schema.json'], '{"answer":"x","tags":[]}')).resolves.toMatchObject({
      code: 1,
      stderr: 'Error [ERR_SCHEMA] (gemini): Answer does not match the schema at /answer: "x" is not of type "integer"\n',
    })
    await expect(cli(['--prompt', 'Count', '--schema', 'missing.json'], '{}')).resolves.toMatchObject({ code: 2 })
  })

  it('--verdict exits 0 ship, 4 iterate, 3 abstain', async () => {
    for (const [verdict, severities, code] of [['ship', ['nit'], 0], ['iterate', ['blocker'], 4], ['abstain', [], 3]] as const) {
      const result = await cli(['--verdict', '--base', 'HEAD'], verdictOf(verdict, [...severities]))
      expect(result, verdict).toMatchObject({ code, stdout: `${verdictOf(verdict, [...severities])}\n` })
    }
    await expect(cli(['--verdict', '--base', 'HEAD'], verdictOf('ship', ['important']))).resolves.toMatchObject({ code: 1, stderr: expect.stringContaining('Error [ERR_SCHEMA] (gemini): verdict "ship" contradicts findings') })
    await expect(cli(['--verdict', '--schema', '{}'], '{}')).resolves.toMatchObject({ code: 2 })
  })
})
