// The AI SDK provider (@phone-a-friend/relay/ai-sdk) driven by the real AI SDK (`ai`, exact
// devDependency): generateText, streamText, structured output with zod, abort, warnings and
// errors, against the real codex, gemini and claude CLIs behind the fake model server, and
// against backends registered from JS.
import { readdirSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import { APICallError, InvalidArgumentError, InvalidPromptError, NoObjectGeneratedError, NoSuchModelError, Output, generateObject, generateText, jsonSchema, streamText, tool } from 'ai'
import { z } from 'zod'
import { BackendError, _resetRegistry, registerBackend, type BackendRunOptions } from '@phone-a-friend/relay'
import { SCHEMA_ERROR_HEADER, createPhoneAFriend, phoneAFriend } from '@phone-a-friend/relay/ai-sdk'
import { DEFAULT_ANSWER, FAKE_USAGE, claudeEnv, codexEnv, geminiEnv, splitAnswer } from './support/fake-model-server.js'
import { envelopeOf, useEnv } from './support/e2e.js'
import { realClisSuite } from './support/real-clis.js'
import { processesWithEnv } from './support/processes.js'

// The AI SDK prints every warning to the console by default; the tests read them from the results.
;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false

const suite = realClisSuite()

const { input, cached, output, reasoning } = FAKE_USAGE
/** The fake model server's counts as the AI SDK reports them (codex: all four; BACKENDS.md, "Usage"). */
const CODEX_USAGE = {
  inputTokens: input,
  inputTokenDetails: { noCacheTokens: input - cached, cacheReadTokens: cached },
  outputTokens: output,
  outputTokenDetails: { textTokens: output - reasoning, reasoningTokens: reasoning },
  totalTokens: input + output,
}

/** A JS backend that answers `answer(options)` and keeps every `run()` options it was given. */
function recordingBackend(name: string, answer: (options: BackendRunOptions) => string | Promise<string> = () => 'recorded') {
  const runs: BackendRunOptions[] = []
  registerBackend({
    name,
    allowedSandboxes: ['read-only', 'workspace-write'],
    run: async (options) => {
      runs.push(options)
      return answer(options)
    },
  })
  return runs
}

/** The request inside an envelope (what follows `Request:`, before any context or diff). */
const requestIn = (envelope: string): string => envelope.slice(envelope.indexOf('\n\nRequest:\n') + '\n\nRequest:\n'.length)

describe('generateText', () => {
  it('codex for real: the prompt is the relay’s request, the answer the text, the usage the server’s; no warning', async () => {
    useEnv(await codexEnv(suite.server))
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = await generateText({ model: friend('codex'), prompt: 'Say hi' })
    expect(result.text).toBe(DEFAULT_ANSWER)
    expect(suite.server.modelRequests()[0].prompt).toBe(envelopeOf(suite.repo.path, 'Say hi'))
    expect(result.finishReason).toBe('stop')
    expect(result.usage).toMatchObject(CODEX_USAGE)
    expect(result.warnings).toEqual([])
    const usage = { inputTokens: input, cachedInputTokens: cached, outputTokens: output, reasoningTokens: reasoning }
    expect(result.providerMetadata).toEqual({ phoneAFriend: { backend: 'codex', usage } })
    // codex names no model: the AI SDK shows the backend's name.
    expect(result.response.modelId).toBe('codex')
  })

  it('claude for real: friend(backend, { model }) reaches the model request', async () => {
    useEnv(await claudeEnv(suite.server))
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = await generateText({ model: friend('claude', { model: 'claude-fake-model' }), prompt: 'Say hi' })
    expect(result.text).toBe(DEFAULT_ANSWER)
    expect(suite.server.modelRequests()[0].body).toMatchObject({ model: 'claude-fake-model' })
    expect(result.response.modelId).toBe('claude-fake-model')
    expect(result.providerMetadata?.phoneAFriend).toMatchObject({ backend: 'claude', model: 'claude-fake-model', usage: { inputTokens: input, costUsd: expect.any(Number) } })
  })

  it('a registered JS backend, by name; the default provider relays in process.cwd()', async () => {
    const runs = recordingBackend('echo', (options) => `echo: ${requestIn(options.prompt)}`)
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    await expect(generateText({ model: friend('echo'), prompt: 'ping' })).resolves.toMatchObject({ text: 'echo: ping' })
    expect(runs[0].repoPath).toBe(suite.repo.path)
    await generateText({ model: phoneAFriend('echo'), prompt: 'ping' })
    expect(runs[1].repoPath).toBe(process.cwd())
    // The same model through the provider's own method, as the AI SDK's registries call it.
    await expect(generateText({ model: friend.languageModel('echo'), prompt: 'pong' })).resolves.toMatchObject({ text: 'echo: pong' })
  })

  it('settings: the provider’s, then the model’s, then the call’s providerOptions.phoneAFriend', async () => {
    const runs = recordingBackend('rec')
    suite.repo.write('a.txt', 'two\n')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path, sandbox: 'workspace-write', model: 'from-provider', timeoutSeconds: 100 })
    await generateText({
      model: friend('rec', { model: 'from-model' }),
      prompt: 'p',
      providerOptions: { phoneAFriend: { model: 'from-call', contextText: 'CONTEXT-TEXT', includeDiff: true, timeoutSeconds: 30 } },
    })
    const [run] = runs
    expect(run).toMatchObject({ model: 'from-call', sandbox: 'workspace-write' })
    expect(run.timeoutSeconds).toBeLessThanOrEqual(30)
    expect(run.prompt).toContain('Additional Context:\nCONTEXT-TEXT')
    expect(run.prompt).toContain('Git Diff:\ndiff --git a/a.txt b/a.txt')
    await generateText({ model: friend('rec', { model: 'from-model' }), prompt: 'p' })
    expect(runs[1]).toMatchObject({ model: 'from-model', sandbox: 'workspace-write' })
    expect(runs[1].prompt).not.toContain('Git Diff:')
  })

  it('several messages become one transcript; what text cannot carry is a warning', async () => {
    const runs = recordingBackend('rec')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = await generateText({
      model: friend('rec'),
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'What is in a.txt?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, { type: 'tool-call', toolCallId: 'call-1', toolName: 'read', input: { path: 'a.txt' } }] },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call-1', toolName: 'read', output: { type: 'text', value: 'one' } }] },
        { role: 'user', content: [{ type: 'text', text: 'And now?' }, { type: 'image', image: new Uint8Array([137, 80, 78, 71]), mediaType: 'image/png' }] },
      ],
    })
    expect(requestIn(runs[0].prompt)).toBe(
      [
        'The conversation so far, oldest message first. Answer its last message.',
        '### System\nBe brief.',
        '### User\nWhat is in a.txt?',
        '### Assistant\nLet me look.\n\n(called the tool read, call call-1, with {"path":"a.txt"})',
        '### Tool result (read, call call-1)\none',
        '### User\nAnd now?',
      ].join('\n\n'),
    )
    expect(result.warnings).toEqual([
      { type: 'compatibility', feature: 'tool calls and results in the prompt', details: expect.stringContaining('sent as text') },
      { type: 'unsupported', feature: 'file parts (image/png)', details: expect.stringContaining('left out') },
    ])
  })

  it('an image URL is left out with a warning, and never downloaded', async () => {
    const runs = recordingBackend('rec')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const image = new URL('/cat.png', suite.server.url)
    const result = await generateText({
      model: friend('rec'),
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe it' }, { type: 'image', image, mediaType: 'image/png' }] }],
    })
    expect(requestIn(runs[0].prompt)).toBe('Describe it')
    expect(result.warnings).toEqual([{ type: 'unsupported', feature: 'file parts (image/png)', details: expect.stringContaining('left out') }])
    expect(suite.server.requests.map((request) => request.path)).not.toContain('/cat.png')
  })

  it('every setting a relay cannot honour is a warning; the relay runs once all the same', async () => {
    const runs = recordingBackend('rec')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = await generateText({
      model: friend('rec'),
      prompt: 'p',
      maxOutputTokens: 100,
      temperature: 0.5,
      topP: 0.9,
      topK: 5,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
      seed: 7,
      stopSequences: ['STOP'],
      reasoning: 'high',
      headers: { 'x-team': 'blue' },
      tools: { weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async () => 'sunny' }) },
      providerOptions: { phoneAFriend: { verbose: true } },
    })
    expect(runs).toHaveLength(1)
    expect(result.text).toBe('recorded')
    expect(result.warnings?.map((warning) => (warning.type === 'unsupported' ? warning.feature : warning.type))).toEqual([
      'maxOutputTokens',
      'temperature',
      'topP',
      'topK',
      'presencePenalty',
      'frequencyPenalty',
      'seed',
      'stopSequences',
      'reasoning',
      'tools',
      'headers',
      'providerOptions.phoneAFriend.verbose',
    ])
  })

  it('the relay’s own warnings come back as the result’s warnings', async () => {
    recordingBackend('rec')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    // Nothing uncommitted: the envelope holds the last commit's diff, and the relay says so.
    const result = await generateText({ model: friend('rec'), prompt: 'p', providerOptions: { phoneAFriend: { includeDiff: true } } })
    expect(result.warnings).toEqual([{ type: 'other', message: expect.stringMatching(/last commit/) }])
  })
})

describe('errors', () => {
  it('a backend failure is an APICallError that is not retried: the backend ran once', async () => {
    let calls = 0
    registerBackend({
      name: 'broken',
      allowedSandboxes: ['read-only'],
      run: async () => {
        calls++
        throw new BackendError('quota exhausted')
      },
    })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const error = await generateText({ model: friend('broken'), prompt: 'p' }).catch((e: unknown) => e)
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ message: 'quota exhausted', isRetryable: false, url: 'phone-a-friend:broken', data: { code: 'ERR_BACKEND_FAILED', backend: 'broken' } })
    expect((error as APICallError).cause).toMatchObject({ name: 'RelayError', code: 'ERR_BACKEND_FAILED' })
    expect(calls).toBe(1)
  })

  it('a backend timeout (timeoutSeconds from providerOptions) is an APICallError, not retried', async () => {
    let calls = 0
    registerBackend({
      name: 'hang',
      allowedSandboxes: ['read-only'],
      run: (options) => {
        calls++
        return new Promise((_, reject) => options.signal.addEventListener('abort', () => reject(options.signal.reason)))
      },
    })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const error = await generateText({ model: friend('hang'), prompt: 'p', providerOptions: { phoneAFriend: { timeoutSeconds: 0.3 } } }).catch((e: unknown) => e)
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ isRetryable: false, data: { code: 'ERR_BACKEND_TIMEOUT' } })
    expect(calls).toBe(1)
  })

  it('an unknown backend is NoSuchModelError; an empty prompt InvalidPromptError; a bad setting InvalidArgumentError', async () => {
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const unknown = await generateText({ model: friend('nobody'), prompt: 'p' }).catch((e: unknown) => e)
    expect(NoSuchModelError.isInstance(unknown)).toBe(true)
    expect(unknown).toMatchObject({ modelId: 'nobody', modelType: 'languageModel', message: expect.stringMatching(/^Unsupported relay backend: nobody\./) })
    // Its cause is the RelayError, as for every mapped error.
    expect((unknown as Error).cause).toMatchObject({ name: 'RelayError', code: 'ERR_UNSUPPORTED_BACKEND' })
    const typo = await generateText({ model: friend('gemni'), prompt: 'p' }).catch((e: unknown) => e)
    expect((typo as Error).cause).toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND', hint: 'Did you mean gemini?' })
    recordingBackend('rec')
    const empty = await generateText({ model: friend('rec'), prompt: '   ' }).catch((e: unknown) => e)
    expect(InvalidPromptError.isInstance(empty)).toBe(true)
    expect(empty).toMatchObject({ message: 'Invalid prompt: Prompt is required', cause: { code: 'ERR_PROMPT_REQUIRED' } })
    const sandbox = await generateText({ model: friend('codex', { sandbox: 'root' as never }), prompt: 'p' }).catch((e: unknown) => e)
    expect(InvalidArgumentError.isInstance(sandbox)).toBe(true)
    expect(sandbox).toMatchObject({ argument: 'sandbox', cause: { code: 'ERR_INVALID_SANDBOX' } })
  })

  it('a setting that is not one (from JS, past the types) throws where it is given, before reaching relay()', () => {
    expect(() => createPhoneAFriend({ repoPath: suite.repo.path, dryRun: true } as never)).toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE', message: expect.stringMatching(/^The "settings\.dryRun" property is not a relay setting\. Settings: repoPath, /) }),
    )
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    expect(() => friend('codex', { onChunk: () => undefined } as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    expect(() => friend(42 as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })

  it('embedding and image models do not exist', () => {
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    expect(() => friend.embeddingModel('codex')).toThrow(expect.objectContaining({ name: 'AI_NoSuchModelError', modelType: 'embeddingModel' }))
    expect(() => friend.imageModel('codex')).toThrow(expect.objectContaining({ name: 'AI_NoSuchModelError', modelType: 'imageModel' }))
  })
})

describe('streamText', () => {
  const ANSWER = '  First, the setup. Then ünïcødé 😀 in the middle; and at last the conclusion.\n'

  it('gemini for real, behind a slow model: each part arrives while gemini still runs, in order, then finish', async () => {
    const vars = await geminiEnv(suite.server)
    useEnv(vars)
    suite.server.setAnswer(ANSWER)
    suite.server.setParts({ count: 4, gapMs: 400 })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = streamText({ model: friend('gemini'), prompt: 'Say hi' })
    const events: string[] = []
    const deltas: string[] = []
    let aliveAtFirstDelta = 0
    for await (const part of result.fullStream) {
      events.push(part.type)
      if (part.type === 'text-delta') {
        if (deltas.length === 0) aliveAtFirstDelta = processesWithEnv(vars.GEMINI_CLI_HOME).length
        deltas.push(part.text)
      }
      if (part.type === 'finish') expect(part.finishReason).toBe('stop')
    }
    // The first chunk came while the CLI was still running (three parts still to come), not at its end.
    expect(aliveAtFirstDelta).toBeGreaterThan(0)
    expect(events).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'text-delta', 'text-delta', 'text-delta', 'text-end', 'finish-step', 'finish'])
    expect(deltas).toEqual(splitAnswer(ANSWER, 4).map((part, i) => (i === 0 ? part.trimStart() : part)))
    expect(await result.text).toBe(deltas.join(''))
    // gemini reports no thoughts: the output is the candidates' alone, and its parts unknown.
    expect(await result.usage).toMatchObject({ inputTokens: input, inputTokenDetails: { cacheReadTokens: cached }, outputTokens: output - reasoning, outputTokenDetails: { reasoningTokens: undefined } })
    expect((await result.response).modelId).toMatch(/^gemini-/)
    expect(await result.warnings).toEqual([])
  })

  it('codex for real: the messages are streamed; the final answer (the last) is in providerMetadata', async () => {
    useEnv(await codexEnv(suite.server))
    suite.server.setAnswer(ANSWER)
    suite.server.setParts({ count: 3, gapMs: 200 })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = streamText({ model: friend('codex'), prompt: 'Say hi' })
    const messages = splitAnswer(ANSWER, 3).map((part) => part.trim())
    expect(await result.text).toBe(messages.join('\n\n'))
    const usage = { inputTokens: input, cachedInputTokens: cached, outputTokens: output, reasoningTokens: reasoning }
    expect(await result.providerMetadata).toEqual({ phoneAFriend: { backend: 'codex', usage, answer: messages[2] } })
    expect(await result.usage).toMatchObject(CODEX_USAGE)
  })

  it('a registered JS backend streams its runStream() chunks; warnings come with the stream’s start', async () => {
    registerBackend({
      name: 'chunky',
      allowedSandboxes: ['read-only'],
      run: async () => 'one two three',
      async *runStream() {
        yield 'one '
        yield 'two '
        yield 'three'
      },
    })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = streamText({ model: friend('chunky'), prompt: 'p', temperature: 1, includeRawChunks: true })
    const deltas: string[] = []
    for await (const part of result.fullStream) if (part.type === 'text-delta') deltas.push(part.text)
    expect(deltas).toEqual(['one ', 'two ', 'three'])
    expect((await result.warnings)?.map((warning) => (warning.type === 'unsupported' ? warning.feature : warning.type))).toEqual(['temperature', 'includeRawChunks'])
    expect(await result.providerMetadata).toEqual({ phoneAFriend: { backend: 'chunky' } })
  })

  it('a failure is an error part (the AI SDK’s error class) and a finish with the reason error', async () => {
    registerBackend({
      name: 'broken',
      allowedSandboxes: ['read-only'],
      run: async () => {
        throw new BackendError('no credits')
      },
    })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const errors: unknown[] = []
    const result = streamText({ model: friend('broken'), prompt: 'p', onError: ({ error }) => void errors.push(error) })
    const events: string[] = []
    for await (const part of result.fullStream) events.push(part.type === 'finish' ? `finish:${part.finishReason}` : part.type)
    expect(events).toEqual(['start', 'start-step', 'error', 'finish-step', 'finish:error'])
    expect(errors).toHaveLength(1)
    expect(APICallError.isInstance(errors[0])).toBe(true)
    expect(errors[0]).toMatchObject({ message: 'no credits', isRetryable: false, data: { code: 'ERR_BACKEND_FAILED' } })
  })
})

describe('structured output (a JSON response format becomes the relay’s schema)', () => {
  const Answer = z.object({ verdict: z.enum(['ship', 'iterate']), reasons: z.array(z.string()) })

  it('codex for real: Output.object with a zod schema, asked natively and checked', async () => {
    useEnv(await codexEnv(suite.server))
    suite.server.setAnswer('{"verdict":"ship","reasons":["tests pass"]}')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = await generateText({ model: friend('codex'), prompt: 'Ship it?', output: Output.object({ schema: Answer }) })
    expect(result.output).toEqual({ verdict: 'ship', reasons: ['tests pass'] })
    // codex got the schema as its structured output (--output-schema), and the envelope asks for it.
    const [request] = suite.server.modelRequests()
    expect(JSON.stringify(request.body)).toContain('"json_schema"')
    expect(request.prompt).toContain('Respond with JSON only. The response must match this JSON Schema exactly:')
  })

  it('codex for real: a mismatch is the AI SDK’s NoObjectGeneratedError, carrying the relay’s ERR_SCHEMA text', async () => {
    useEnv(await codexEnv(suite.server))
    suite.server.setAnswer('{"verdict":"maybe","reasons":[]}')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const error = await generateText({ model: friend('codex'), prompt: 'Ship it?', output: Output.object({ schema: Answer }) }).catch((e: unknown) => e)
    expect(NoObjectGeneratedError.isInstance(error)).toBe(true)
    const failure = error as NoObjectGeneratedError
    expect(failure.message).toBe('No object generated: response did not match schema.')
    expect(failure.text).toBe('{"verdict":"maybe","reasons":[]}')
    expect(failure.response?.headers?.[SCHEMA_ERROR_HEADER]).toMatch(/^Answer does not match the schema at \/verdict: "maybe" is not one of/)
  })

  it('generateObject: a match, and an answer that is not JSON', async () => {
    const runs = recordingBackend('rec', (options) => (requestIn(options.prompt).startsWith('good') ? '```json\n{"verdict":"iterate","reasons":["a"]}\n```' : 'I think it is fine.'))
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const good = await generateObject({ model: friend('rec'), prompt: 'good', schema: Answer })
    // The relay took the fence off; the schema reached the backend.
    expect(good.object).toEqual({ verdict: 'iterate', reasons: ['a'] })
    expect(JSON.parse(runs[0].schema ?? 'null')).toMatchObject({ type: 'object', required: ['verdict', 'reasons'] })
    const error = await generateObject({ model: friend('rec'), prompt: 'bad', schema: Answer }).catch((e: unknown) => e)
    expect(NoObjectGeneratedError.isInstance(error)).toBe(true)
    expect((error as NoObjectGeneratedError).text).toBe('I think it is fine.')
    expect((error as NoObjectGeneratedError).response?.headers?.[SCHEMA_ERROR_HEADER]).toMatch(/^Answer is not JSON: /)
  })

  it('streamText with Output.object: the object at the end; a mismatch’s ERR_SCHEMA text in providerMetadata', async () => {
    let answer = '{"verdict":"ship","reasons":[]}'
    registerBackend({ name: 'json', allowedSandboxes: ['read-only'], run: async () => answer })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const good = streamText({ model: friend('json'), prompt: 'p', output: Output.object({ schema: Answer }) })
    expect(await good.output).toEqual({ verdict: 'ship', reasons: [] })
    answer = '{"verdict":"ship"}'
    const bad = streamText({ model: friend('json'), prompt: 'p', output: Output.object({ schema: Answer }) })
    const error = await Promise.resolve(bad.output).catch((e: unknown) => e)
    expect(NoObjectGeneratedError.isInstance(error)).toBe(true)
    expect(await bad.providerMetadata).toEqual({ phoneAFriend: { backend: 'json', schemaError: expect.stringMatching(/^Answer does not match the schema at \/: "reasons" is a required property/) } })
  })

  it('providerOptions.phoneAFriend that is not an object, and a schema neither an object nor a boolean, are InvalidArgumentError', async () => {
    const runs = recordingBackend('rec', () => '{"any":"json"}')
    const model = createPhoneAFriend({ repoPath: suite.repo.path })('rec')
    const prompt = [{ role: 'user', content: [{ type: 'text', text: 'p' }] }]
    for (const given of [null, 'abc', 5, ['repoPath']]) {
      const error = await model.doGenerate({ prompt, providerOptions: { phoneAFriend: given } } as never).catch((e: unknown) => e)
      expect(InvalidArgumentError.isInstance(error), String(given)).toBe(true)
      expect(error).toMatchObject({ argument: 'providerOptions.phoneAFriend', message: expect.stringMatching(/^providerOptions\.phoneAFriend must be an object of relay settings/) })
    }
    for (const schema of [5, () => 1, 'x', null, [1]]) {
      const error = await model.doStream({ prompt, responseFormat: { type: 'json', schema } } as never).catch((e: unknown) => e)
      expect(InvalidArgumentError.isInstance(error), String(schema)).toBe(true)
      expect(error).toMatchObject({ argument: 'responseFormat.schema', message: expect.stringMatching(/^Invalid JSON Schema: a schema is an object or a boolean/) })
    }
    expect(runs).toEqual([])
    // `true` is a JSON Schema (any value), as `--schema true` is for the CLI.
    const answered = await model.doGenerate({ prompt, responseFormat: { type: 'json', schema: true } } as never)
    expect(answered.content).toEqual([{ type: 'text', text: '{"any":"json"}' }])
  })

  it('a schema that is not one is InvalidArgumentError before any backend runs', async () => {
    const runs = recordingBackend('rec')
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const error = await generateText({ model: friend('rec'), prompt: 'p', output: Output.object({ schema: jsonSchema({ type: 'no-such-type' } as never) }) }).catch((e: unknown) => e)
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ argument: 'responseFormat.schema', message: expect.stringMatching(/^Invalid JSON Schema: /) })
    expect(runs).toEqual([])
  })
})

describe('abort (the AI SDK’s abortSignal is the relay’s signal)', () => {
  it('generateText: aborting while codex waits on the model rejects with an AbortError and leaves no process', async () => {
    const vars = await codexEnv(suite.server)
    useEnv(vars)
    suite.server.setDelay(30_000)
    const controller = new AbortController()
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const pending = generateText({ model: friend('codex'), prompt: 'p', abortSignal: controller.signal })
    await vi.waitFor(() => expect(suite.server.modelRequests()).toHaveLength(1), { timeout: 20_000 })
    expect(processesWithEnv(vars.CODEX_HOME).length).toBeGreaterThan(0)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    await vi.waitFor(() => expect(processesWithEnv(vars.CODEX_HOME)).toEqual([]), { timeout: 3_000 })
  })

  it('streamText: aborting after the first chunk stops gemini (the next part was 30 s away) and leaves no process', async () => {
    const vars = await geminiEnv(suite.server)
    useEnv(vars)
    suite.server.setAnswer('First part. Second part. Third part.')
    suite.server.setParts({ count: 3, gapMs: 30_000 })
    const controller = new AbortController()
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const result = streamText({ model: friend('gemini'), prompt: 'p', abortSignal: controller.signal })
    const events: string[] = []
    for await (const part of result.fullStream) {
      events.push(part.type)
      if (part.type === 'text-delta') {
        expect(processesWithEnv(vars.GEMINI_CLI_HOME).length).toBeGreaterThan(0)
        controller.abort()
      }
    }
    expect(events.slice(-2)).toEqual(['text-delta', 'abort'])
    await vi.waitFor(() => expect(processesWithEnv(vars.GEMINI_CLI_HOME)).toEqual([]), { timeout: 3_000 })
    expect(readdirSync(vars.TMPDIR).filter((name) => name.startsWith('phone-a-friend-'))).toEqual([])
  })

  it('cancelling the model’s stream (doStream) stops gemini at once, without waiting for its next chunk', async () => {
    const vars = await geminiEnv(suite.server)
    useEnv(vars)
    suite.server.setAnswer('First part. Second part. Third part.')
    suite.server.setParts({ count: 3, gapMs: 30_000 })
    const friend = createPhoneAFriend({ repoPath: suite.repo.path })
    const { stream } = await friend('gemini').doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'p' }] }] })
    const reader = stream.getReader()
    const seen: string[] = []
    for (let part = await reader.read(); !part.done; part = await reader.read()) {
      seen.push(part.value.type)
      if (part.value.type === 'text-delta') break
    }
    expect(seen).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta'])
    expect(processesWithEnv(vars.GEMINI_CLI_HOME).length).toBeGreaterThan(0)
    // cancel() settles once the relay has stopped its backend, before the next part (30 s away)
    // could come: a third of that gap is room enough for any machine.
    const settled = await Promise.race([reader.cancel().then(() => 'cancelled'), new Promise((done) => setTimeout(() => done('still waiting for the next part'), 10_000))])
    expect(settled).toBe('cancelled')
    await vi.waitFor(() => expect(processesWithEnv(vars.GEMINI_CLI_HOME)).toEqual([]), { timeout: 3_000 })
  })
})
