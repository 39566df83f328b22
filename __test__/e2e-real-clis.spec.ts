// End to end: the real codex and gemini CLIs from npm (devDependencies), pointed at a fake model
// server on 127.0.0.1, answering through relay() and reviewRelay().
import { readdirSync } from 'node:fs'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { _resetRegistry, relay, relayDetailed, relayStream, reviewRelay, type RelayError } from '@phone-a-friend/relay'
import { DEFAULT_ANSWER, FAKE_USAGE, codexEnv, deadServerUrl, geminiEnv, splitAnswer } from './support/fake-model-server.js'
import { envelopeOf, fittedRelay, timedStream, useEnv } from './support/e2e.js'
import { realClisSuite } from './support/real-clis.js'
import { processesWithEnv } from './support/processes.js'

const suite = realClisSuite()

describe('codex 0.169 for real', () => {
  beforeEach(async () => useEnv(await codexEnv(suite.server)))

  it('answers a relay, the envelope reaching the model whole', async () => {
    await expect(relay({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'codex' })).resolves.toBe(DEFAULT_ANSWER)
    const [request] = suite.server.modelRequests()
    expect(request.protocol).toBe('codex')
    expect(request.prompt).toBe(envelopeOf(suite.repo.path, 'Say hi'))
  })

  it('reports the usage the server sent, from turn.completed (codex names no model)', async () => {
    const details = await relayDetailed({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'codex' })
    expect(details).toMatchObject({ answer: DEFAULT_ANSWER, backend: 'codex', model: null })
    const { input, cached, output, reasoning } = FAKE_USAGE
    expect(details.usage).toEqual({ inputTokens: input, cachedInputTokens: cached, outputTokens: output, reasoningTokens: reasoning })
    // The model the call names is the one reported.
    const named = await relayDetailed({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'codex', model: 'gpt-fake-1' })
    expect(named.model).toBe('gpt-fake-1')
  })

  it('a 300,000-byte prompt arrives whole through stdin', async () => {
    const prompt = `${'0123456789'.repeat(30_000)}`
    await expect(relay({ prompt, repoPath: suite.repo.path, backend: 'codex' })).resolves.toBe(DEFAULT_ANSWER)
    expect(suite.server.modelRequests()[0].prompt).toBe(envelopeOf(suite.repo.path, prompt))
  })

  it('answers a native review of the branch', async () => {
    suite.repo.git('checkout', '-q', '-b', 'feature')
    suite.repo.write('b.txt', 'feature work\n').commit('feature')
    await expect(reviewRelay({ repoPath: suite.repo.path, backend: 'codex' })).resolves.toBe(DEFAULT_ANSWER)
    const [request] = suite.server.modelRequests()
    expect(request.protocol).toBe('codex')
    // codex's own review prompt, not our envelope: the native path ran.
    expect(request.prompt).not.toContain('Request:\n')
    // The base codex was given, whole: its prompt names it and the merge base it computed from it.
    const mergeBase = suite.repo.git('merge-base', 'HEAD', 'main').trim()
    expect(JSON.stringify(request.body)).toContain(
      `Review the code changes against the base branch 'main'. The merge base commit for this comparison is ${mergeBase}.`,
    )
  })

  it('a fitted diff reaches the model exactly as the dry run shows it', async () => {
    const options = fittedRelay(suite.repo, 'package-lock.json', 'codex')
    const dryRun = await relay({ ...options, dryRun: true })
    expect(dryRun.coverage?.find((file) => file.path === 'package-lock.json')?.status).toBe('left-out')
    await expect(relay(options)).resolves.toBe(DEFAULT_ANSWER)
    expect(suite.server.modelRequests()[0].prompt).toBe(dryRun.envelope)
  })

  it('a review with instructions goes through the generic path', async () => {
    suite.repo.git('checkout', '-q', '-b', 'feature')
    suite.repo.write('b.txt', 'feature work\n').commit('feature')
    await expect(reviewRelay({ repoPath: suite.repo.path, backend: 'codex', prompt: 'Only naming' })).resolves.toBe(DEFAULT_ANSWER)
    const prompt = suite.server.modelRequests()[0].prompt ?? ''
    expect(prompt).toContain('Request:\nOnly naming\n\nGit Diff:\ndiff --git a/b.txt b/b.txt')
  })
})

describe('gemini 0.61 for real', () => {
  beforeEach(async () => useEnv(await geminiEnv(suite.server)))

  it('a fitted diff reaches the model as the dry run shows it', async () => {
    const options = fittedRelay(suite.repo, 'yarn.lock', 'gemini')
    const dryRun = await relay({ ...options, dryRun: true })
    expect(dryRun.envelope).toContain('\n\nDiff Coverage:\n')
    await expect(relay(options)).resolves.toBe(DEFAULT_ANSWER)
    const request = suite.server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.prompt).toContain(dryRun.envelope)
  })

  it('reports the usage and model of its result event (no thoughts, no cost: gemini says none)', async () => {
    const details = await relayDetailed({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'gemini', model: 'gemini-2.5-flash' })
    const { input, cached, output, reasoning } = FAKE_USAGE
    // gemini's output_tokens are the candidates' alone: the server sent the thoughts apart.
    expect(details.usage).toEqual({ inputTokens: input, cachedInputTokens: cached, outputTokens: output - reasoning })
    const request = suite.server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.path).toContain(`/models/${details.model ?? 'none'}:`)
  })

  it('answers in a folder it was never told to trust', async () => {
    await expect(relay({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'gemini' })).resolves.toBe(DEFAULT_ANSWER)
    const request = suite.server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.prompt).toContain(envelopeOf(suite.repo.path, 'Say hi'))
  })

  it('a 300,000-byte prompt arrives whole through stdin', async () => {
    const prompt = `${'abcdefghij'.repeat(30_000)}`
    await expect(relay({ prompt, repoPath: suite.repo.path, backend: 'gemini' })).resolves.toBe(DEFAULT_ANSWER)
    const request = suite.server.modelRequests().find((r) => r.protocol === 'gemini')
    expect(request?.prompt).toContain(envelopeOf(suite.repo.path, prompt))
  })
})

describe('streaming from the real CLIs (relayStream)', () => {
  const ANSWER = '  First, the setup. Then ünïcødé 😀 in the middle; and at last the conclusion.\n'
  const GAP_MS = 400

  it('gemini: the model’s text arrives in chunks as it is produced; the return value is relay()’s answer', async () => {
    useEnv(await geminiEnv(suite.server))
    suite.server.setAnswer(ANSWER)
    suite.server.setParts({ count: 4, gapMs: GAP_MS })
    const { chunks, answer, endedAt } = await timedStream(relayStream({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'gemini' }))
    // One chunk per part the model sent, the first well before the end (3 gaps still to come).
    expect(chunks.map((c) => c.text)).toEqual(splitAnswer(ANSWER, 4).map((part, i) => (i === 0 ? part.trimStart() : part)))
    expect(endedAt - chunks[0].at).toBeGreaterThanOrEqual(2.5 * GAP_MS)
    expect(answer).toBe(ANSWER.trim())
    await expect(relay({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'gemini' })).resolves.toBe(answer)
  })

  it('codex: each assistant message is a chunk, a blank line apart; the return value is the last, as relay() answers', async () => {
    useEnv(await codexEnv(suite.server))
    suite.server.setAnswer(ANSWER)
    suite.server.setParts({ count: 3, gapMs: GAP_MS })
    const { chunks, answer, endedAt } = await timedStream(relayStream({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'codex' }))
    const messages = splitAnswer(ANSWER, 3).map((part) => part.trim())
    expect(chunks.map((c) => c.text)).toEqual(messages.map((m, i) => (i === 0 ? m : `\n\n${m}`)))
    expect(endedAt - chunks[0].at).toBeGreaterThanOrEqual(1.5 * GAP_MS)
    expect(answer).toBe(messages[2])
    await expect(relay({ prompt: 'Say hi', repoPath: suite.repo.path, backend: 'codex' })).resolves.toBe(answer)
  })

  it.each(['gemini', 'codex'] as const)('%s: break after the first chunk leaves no process behind', async (backend) => {
    const vars = backend === 'gemini' ? await geminiEnv(suite.server) : await codexEnv(suite.server)
    const marker = backend === 'gemini' ? vars.GEMINI_CLI_HOME : vars.CODEX_HOME
    useEnv(vars)
    suite.server.setAnswer(ANSWER)
    // The second part would come 30 s later.
    suite.server.setParts({ count: 3, gapMs: 30_000 })
    let seen = 0
    for await (const chunk of relayStream({ prompt: 'Say hi', repoPath: suite.repo.path, backend })) {
      const first = splitAnswer(ANSWER, 3)[0]
      expect(chunk).toBe(backend === 'gemini' ? first.trimStart() : first.trim())
      expect(processesWithEnv(marker).length).toBeGreaterThan(0)
      seen++
      break
    }
    expect(seen).toBe(1)
    await vi.waitFor(() => expect(processesWithEnv(marker)).toEqual([]), { timeout: 3_000 })
    expect(readdirSync(vars.TMPDIR).filter((name) => name.startsWith('phone-a-friend-'))).toEqual([])
  })
})

describe('dead servers, timeouts, stalls and aborts', () => {
  it.each(['codex', 'gemini'] as const)('%s: a model that stalls after its headers is stopped at the idle time-out, not the wall clock, leaving no process', async (backend) => {
    const vars = backend === 'gemini' ? await geminiEnv(suite.server) : await codexEnv(suite.server)
    const marker = backend === 'gemini' ? vars.GEMINI_CLI_HOME : vars.CODEX_HOME
    useEnv(vars)
    suite.server.setStall(true)
    const started = Date.now()
    // Past each CLI's silent start (gemini's is 3 to 4 s: docs/BACKENDS.md, "Silences").
    const idleTimeoutSeconds = backend === 'gemini' ? 10 : 3
    const error = await relay({ prompt: 'Say hi', repoPath: suite.repo.path, backend, idleTimeoutSeconds, timeoutSeconds: 120 }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled', backend })
    expect(Date.now() - started).toBeLessThan(60_000)
    expect(suite.server.modelRequests().length).toBeGreaterThan(0)
    await vi.waitFor(() => expect(processesWithEnv(marker)).toEqual([]), { timeout: 3_000 })
  })

  it('codex against a dead server times out after 3 s and leaves no process behind', async () => {
    // codex reconnects to a dead server for ever: only the relay's timeout ends it.
    const vars = await codexEnv({ url: await deadServerUrl() })
    useEnv(vars)
    // With what codex said last: its reconnect events (docs/ERRORS.md, backendOutput).
    await expect(relay({ prompt: 'p', repoPath: suite.repo.path, backend: 'codex', timeoutSeconds: 3 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: expect.stringMatching(/^codex exec timed out after 3s\. Its last words: Reconnecting\.\.\. /),
      backendOutput: expect.stringMatching(/^Reconnecting\.\.\. /),
    })
    await vi.waitFor(() => expect(processesWithEnv(vars.CODEX_HOME)).toEqual([]), { timeout: 3_000 })
  })

  it('gemini against a dead server times out after 3 s and leaves no process behind', async () => {
    const vars = await geminiEnv({ url: await deadServerUrl() })
    useEnv(vars)
    // With gemini's retry words when it printed them by then (docs/ERRORS.md, backendOutput),
    // its stack frames left out.
    const error = (await relay({ prompt: 'p', repoPath: suite.repo.path, backend: 'gemini', timeoutSeconds: 3 }).catch((e: unknown) => e)) as RelayError
    expect(error.code).toBe('ERR_BACKEND_TIMEOUT')
    if (error.backendOutput === undefined) expect(error.message).toBe('gemini timed out after 3s')
    else {
      expect(error.message).toBe(`gemini timed out after 3s. Its last words: ${error.backendOutput}`)
      expect(error.backendOutput).not.toMatch(/^\s+at /m)
    }
    await vi.waitFor(() => expect(processesWithEnv(vars.GEMINI_CLI_HOME)).toEqual([]), { timeout: 3_000 })
  })

  it('an abort while codex waits on the model kills it at once', async () => {
    const vars = await codexEnv(suite.server)
    useEnv(vars)
    suite.server.setDelay(30_000)
    const controller = new AbortController()
    const pending = relay({ prompt: 'p', repoPath: suite.repo.path, backend: 'codex', signal: controller.signal })
    await vi.waitFor(() => expect(suite.server.modelRequests()).toHaveLength(1), { timeout: 20_000 })
    expect(processesWithEnv(vars.CODEX_HOME).length).toBeGreaterThan(0)
    controller.abort()
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    await vi.waitFor(() => expect(processesWithEnv(vars.CODEX_HOME)).toEqual([]), { timeout: 3_000 })
  })
})
