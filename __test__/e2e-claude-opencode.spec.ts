// End to end: the real claude (Claude Code 2.1.330) and opencode (1.18.33) CLIs from npm
// (devDependencies), pointed at the fake model server on 127.0.0.1, answering through relay()
// and relayStream(). Each CLI gets a throwaway HOME: the user's own config is never read.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { _resetRegistry, relay, relayDetailed, relayStream, type RelayOptions, type RelayProgress } from '@phone-a-friend/relay'
import {
  DEFAULT_ANSWER,
  FAKE_USAGE,
  TOOL_PREAMBLE,
  claudeEnv,
  codexEnv,
  deadServerUrl,
  opencodeEnv,
  splitAnswer,
  startFakeModelServer,
  type FakeModelServer,
} from './support/fake-model-server.js'
import { envelopeOf, fittedRelay, restoreEnv, timedStream, useEnv } from './support/e2e.js'
import { TempRepo } from './support/git-repo.js'
import { processesWithEnv, runsAsRoot } from './support/processes.js'

const BIN = resolve(__dirname, '..', 'node_modules', '.bin')
const IS_ROOT = runsAsRoot('e2e-claude-opencode.spec.ts: claude refusing danger-full-access as root')
let server: FakeModelServer
let repo: TempRepo
/** This test's mark in the environment of every process the relay starts (see `processesWithEnv`). */
let mark: string

/** A process's command line, or '' once it is gone. */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim()
  } catch {
    return ''
  }
}

/** The session id of a live process (field 6 of /proc/<pid>/stat). */
function sessionOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3])
  } catch {
    return undefined
  }
}

/**
 * Runs `opts` while the model makes the backend run `setsid -f sleep 300; sleep 300` through its
 * shell tool, then stops the run with the timeout or the signal. Returns the failure, the most
 * processes of the run seen alive at once, the `sleep` processes seen (with their session
 * ids), and how many of the run's processes are left 3 s after the relay settled (polled).
 */
async function stopWhileToolSleeps(opts: RelayOptions, stop: 'timeout' | 'abort') {
  const controller = new AbortController()
  const started = Date.now()
  const pending = relay({ ...opts, ...(stop === 'abort' ? { signal: controller.signal } : {}) }).then(
    () => undefined,
    (error: unknown) => error,
  )
  let settled = false
  void pending.then(() => (settled = true))
  let peak = 0
  const sleeps = new Map<number, number | undefined>()
  let abortedAt: number | undefined
  while (!settled) {
    const pids = processesWithEnv(mark)
    peak = Math.max(peak, pids.length)
    for (const pid of pids) if (commandLine(pid).startsWith('sleep 300')) sleeps.set(pid, sessionOf(pid))
    // Both sleeps run: the tool is under way.
    if (stop === 'abort' && abortedAt === undefined && sleeps.size >= 2) {
      abortedAt = Date.now()
      controller.abort()
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  const error = await pending
  const settledAt = Date.now()
  await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 3_000, interval: 50 })
  return { error, peak, sleeps, elapsed: settledAt - started, abortedAt: abortedAt === undefined ? undefined : settledAt - abortedAt, cleanAfter: Date.now() - settledAt }
}

beforeAll(async () => {
  server = await startFakeModelServer()
})

afterAll(async () => {
  await server.close()
})

beforeEach(() => {
  _resetRegistry()
  mark = `paf-e2e-${randomUUID()}`
  useEnv({ PATH: `${BIN}:${process.env.PATH ?? ''}`, PAF_E2E_MARK: mark })
  server.requests.length = 0
  server.setDelay(0)
  server.setParts({ count: 1, gapMs: 0 })
  server.setAnswer(DEFAULT_ANSWER)
  server.setTool(null)
  server.setFailure(null)
  server.setStall(false)
  repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
})

afterEach(() => {
  restoreEnv()
  repo.remove()
})

const STREAM_ANSWER = '  First, the setup. Then ünïcødé 😀 in the middle; and at last the conclusion.\n'
const GAP_MS = 400
/** A shell command that leaves a grandchild in a session of its own, and keeps the tool busy. */
const SETSID_SLEEP = 'setsid -f sleep 300; sleep 300'

describe('claude 2.1.330 for real', () => {
  beforeEach(async () => useEnv(await claudeEnv(server)))

  it('answers a relay, the envelope reaching the model whole, with no other traffic', async () => {
    await expect(relay({ prompt: 'Say hi', repoPath: repo.path, backend: 'claude' })).resolves.toBe(DEFAULT_ANSWER)
    const [request] = server.modelRequests()
    expect(request.protocol).toBe('anthropic')
    expect(request.prompt).toBe(envelopeOf(repo.path, 'Say hi'))
    // Non-essential traffic is off: no `HEAD /api/hello`, nothing but the one model call.
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/messages?beta=true'])
    // read-only: the read tools only.
    expect(request.tools.filter((name) => !name.startsWith('Deferred')).sort()).toEqual(['Glob', 'Grep', 'Read'])
  })

  it('reports the usage, cost and model of its result event', async () => {
    const details = await relayDetailed({ prompt: 'Say hi', repoPath: repo.path, backend: 'claude' })
    const { input, cached, output } = FAKE_USAGE
    // Anthropic counts the cache apart from input_tokens; the relay within them.
    expect(details.usage).toMatchObject({ inputTokens: input, cachedInputTokens: cached, outputTokens: output, reasoningTokens: 0 })
    expect(details.usage?.costUsd).toBeGreaterThan(0)
    const [request] = server.modelRequests()
    expect(details.model).toBe((request.body as { model: string }).model)
  })

  it('a 300,000-byte prompt arrives whole through stdin', async () => {
    const prompt = '0123456789'.repeat(30_000)
    await expect(relay({ prompt, repoPath: repo.path, backend: 'claude', model: 'claude-fake-model' })).resolves.toBe(DEFAULT_ANSWER)
    expect(server.modelRequests()[0].prompt).toBe(envelopeOf(repo.path, prompt))
    // `model` reaches the model request (claude sends a name it does not know as it is).
    expect(server.modelRequests()[0].body).toMatchObject({ model: 'claude-fake-model' })
  })

  it('a fitted diff reaches the model exactly as the dry run shows it', async () => {
    const options = fittedRelay(repo, 'Cargo.lock', 'claude')
    const dryRun = await relay({ ...options, dryRun: true })
    expect(dryRun.coverage?.map((file) => [file.path, file.status])).toEqual([
      ['Cargo.lock', 'left-out'],
      ['a.txt', 'whole'],
    ])
    await expect(relay(options)).resolves.toBe(DEFAULT_ANSWER)
    expect(server.modelRequests()[0].prompt).toBe(dryRun.envelope)
  })

  it('onProgress hears what claude does from its own events: its text, the tool it runs, then the answer', async () => {
    server.setTool({ name: 'Read', input: { file_path: join(repo.path, 'a.txt') } })
    const heard: RelayProgress[] = []
    await expect(relay({ prompt: 'Read a.txt', repoPath: repo.path, backend: 'claude', onProgress: (progress) => heard.push(progress) })).resolves.toBe(DEFAULT_ANSWER)
    // Each change of phase is heard; ones that come faster than the caller reads are heard as the last.
    const tool = heard.findIndex((progress) => progress.phase === 'tool')
    expect(heard[tool]).toMatchObject({ backend: 'claude', tool: 'Read', message: expect.stringMatching(/^claude: running Read \(\d+s, \d+ bytes of the answer so far\)$/) })
    expect(heard.slice(tool + 1).some((progress) => progress.phase === 'writing')).toBe(true)
    expect(heard.every((progress) => progress.backend === 'claude' || progress.phase === 'preparing')).toBe(true)
    for (const [before, after] of heard.slice(1).map((progress, i) => [heard[i], progress])) {
      expect(after.elapsedMs).toBeGreaterThanOrEqual(before.elapsedMs)
      expect(after.answerBytes).toBeGreaterThanOrEqual(before.answerBytes)
    }
    // The tool's text before the call, then the answer: every byte streamed is counted.
    expect(heard.at(-1)?.answerBytes).toBeGreaterThanOrEqual(DEFAULT_ANSWER.length)
  })

  it('read-only refuses a scripted write: Write is not offered and the file never exists', async () => {
    const target = join(repo.path, 'written.txt')
    server.setTool({ name: 'Write', input: { file_path: target, content: 'written\n' } })
    await expect(relay({ prompt: 'Write it', repoPath: repo.path, backend: 'claude' })).resolves.toBe(DEFAULT_ANSWER)
    expect(server.modelRequests()[0].tools).not.toContain('Write')
    expect(server.modelRequests()[0].tools).not.toContain('Bash')
    expect(existsSync(target)).toBe(false)
  })

  it('workspace-write writes inside the repository, not outside it', async () => {
    const inside = join(repo.path, 'written.txt')
    server.setTool({ name: 'Write', input: { file_path: inside, content: 'written\n' } })
    await expect(relay({ prompt: 'Write it', repoPath: repo.path, backend: 'claude', sandbox: 'workspace-write' })).resolves.toBe(DEFAULT_ANSWER)
    expect(readFileSync(inside, 'utf8')).toBe('written\n')
    expect(server.modelRequests()[0].tools).not.toContain('Bash')

    const elsewhere = mkdtempSync(join(tmpdir(), 'paf-outside-'))
    try {
      const outside = join(elsewhere, 'written.txt')
      server.setTool({ name: 'Write', input: { file_path: outside, content: 'written\n' } })
      await expect(relay({ prompt: 'Write it', repoPath: repo.path, backend: 'claude', sandbox: 'workspace-write' })).resolves.toBe(DEFAULT_ANSWER)
      expect(existsSync(outside)).toBe(false)
      expect(server.modelRequests().at(-1)?.toolResults.join('')).toMatch(/permission/i)
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })

  it.runIf(IS_ROOT)('danger-full-access as root: claude’s own refusal is passed on', async () => {
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'claude', sandbox: 'danger-full-access' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      backend: 'claude',
      message: expect.stringContaining('--dangerously-skip-permissions cannot be used with root/sudo privileges'),
    })
    expect(server.modelRequests()).toEqual([])
  })

  it.each(['timeout', 'abort'] as const)('a tool command that setsids is killed on %s, with every process of the run', async (stop) => {
    // As root, claude runs danger-full-access only in a sandbox it is told about.
    if (IS_ROOT) useEnv({ IS_SANDBOX: '1' })
    server.setTool({ name: 'Bash', input: { command: SETSID_SLEEP, description: 'Sleep' } })
    const result = await stopWhileToolSleeps(
      { prompt: 'Run it', repoPath: repo.path, backend: 'claude', sandbox: 'danger-full-access', timeoutSeconds: stop === 'timeout' ? 6 : 60 },
      stop,
    )
    console.log(`claude ${stop}: ${JSON.stringify({ ...result, sleeps: [...result.sleeps], error: String(result.error) })}`)
    expect(result.error).toMatchObject(stop === 'timeout' ? { code: 'ERR_BACKEND_TIMEOUT', message: 'claude timed out after 6s' } : { name: 'AbortError' })
    // Both sleeps ran, one of them in a session of its own.
    expect(result.sleeps.size).toBe(2)
    expect(new Set(result.sleeps.values()).size).toBe(2)
  })

  it('a dead server ends with claude’s own error before the deadline, leaving no process', async () => {
    const vars = await claudeEnv({ url: await deadServerUrl() })
    useEnv(vars)
    const started = Date.now()
    // 8 s: 2 retries (at most 1.9 s of backoff) fit in half of it.
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'claude', timeoutSeconds: 8 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      backend: 'claude',
      message: expect.stringContaining('Connection refused'),
    })
    const elapsed = Date.now() - started
    console.log(`claude dead server: failed after ${elapsed} ms`)
    expect(elapsed).toBeLessThan(8_000)
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 3_000 })
  })

  it('streams the model’s text as it is produced; the return value is relay()’s answer', async () => {
    server.setAnswer(STREAM_ANSWER)
    server.setParts({ count: 4, gapMs: GAP_MS })
    const { chunks, answer, endedAt } = await timedStream(relayStream({ prompt: 'Say hi', repoPath: repo.path, backend: 'claude' }))
    expect(chunks.map((c) => c.text)).toEqual(splitAnswer(STREAM_ANSWER, 4).map((part, i) => (i === 0 ? part.trimStart() : part)))
    // The first chunk well before the end: 3 gaps still to come.
    expect(endedAt - chunks[0].at).toBeGreaterThanOrEqual(2.5 * GAP_MS)
    expect(answer).toBe(STREAM_ANSWER.trim())
    server.setParts({ count: 1, gapMs: 0 })
    await expect(relay({ prompt: 'Say hi', repoPath: repo.path, backend: 'claude' })).resolves.toBe(answer)
  })
})

describe('opencode 1.18.33 for real', () => {
  /**
   * One opencode HOME for the whole block: its first run spends seconds creating its database,
   * later ones start at once. The server it uses is in OPENCODE_CONFIG_CONTENT, read per run.
   */
  let home: Record<string, string>

  beforeAll(async () => {
    home = await opencodeEnv(server)
  })

  beforeEach(() => useEnv(home))

  it('answers a relay, the envelope reaching the model whole', async () => {
    await expect(relay({ prompt: 'Say hi', repoPath: repo.path, backend: 'opencode', timeoutSeconds: 30 })).resolves.toBe(DEFAULT_ANSWER)
    const requests = server.modelRequests()
    // `--title` spares the title request: one model call.
    expect(requests).toHaveLength(1)
    expect(requests[0].protocol).toBe('openai-chat')
    expect(requests[0].prompt).toBe(envelopeOf(repo.path, 'Say hi'))
    expect(server.requests.filter((r) => r.protocol === 'other')).toEqual([])
  })

  it('reports the usage of its step_finish parts; no cost when its config prices nothing', async () => {
    const details = await relayDetailed({ prompt: 'Say hi', repoPath: repo.path, backend: 'opencode', timeoutSeconds: 30 })
    const { input, cached, output, reasoning } = FAKE_USAGE
    expect(details.usage).toEqual({ inputTokens: input, cachedInputTokens: cached, outputTokens: output, reasoningTokens: reasoning })
  })

  it('a 300,000-byte prompt arrives whole through stdin', async () => {
    const prompt = 'abcdefghij'.repeat(30_000)
    // `model` as `provider/model`: not the config's default.
    await expect(relay({ prompt, repoPath: repo.path, backend: 'opencode', model: 'fake/other-model' })).resolves.toBe(DEFAULT_ANSWER)
    expect(server.modelRequests()[0].prompt).toBe(envelopeOf(repo.path, prompt))
    expect(server.modelRequests()[0].body).toMatchObject({ model: 'other-model' })
  })

  it('read-only refuses a scripted write: no writing tool is offered and the file never exists', async () => {
    const target = join(repo.path, 'written.txt')
    server.setTool({ name: 'write', input: { filePath: target, content: 'written\n' } })
    await expect(relay({ prompt: 'Write it', repoPath: repo.path, backend: 'opencode' })).resolves.toBe(DEFAULT_ANSWER)
    const offered = server.modelRequests()[0].tools
    for (const tool of ['write', 'edit', 'bash', 'webfetch']) expect(offered).not.toContain(tool)
    expect(existsSync(target)).toBe(false)
  })

  it('workspace-write writes inside the repository, and offers no shell', async () => {
    const target = join(repo.path, 'written.txt')
    server.setTool({ name: 'write', input: { filePath: target, content: 'written\n' } })
    await expect(relay({ prompt: 'Write it', repoPath: repo.path, backend: 'opencode', sandbox: 'workspace-write' })).resolves.toBe(DEFAULT_ANSWER)
    expect(readFileSync(target, 'utf8')).toBe('written\n')
    expect(server.modelRequests()[0].tools).not.toContain('bash')
  })

  it.each(['timeout', 'abort'] as const)('a tool command that setsids is killed on %s, with every process of the run', async (stop) => {
    server.setTool({ name: 'bash', input: { command: SETSID_SLEEP, description: 'Sleep' } })
    // opencode takes about 4 s to reach the model on an idle machine, twice that while the
    // other suites run: the timeout leaves room for its tool to start.
    const result = await stopWhileToolSleeps(
      { prompt: 'Run it', repoPath: repo.path, backend: 'opencode', sandbox: 'danger-full-access', timeoutSeconds: stop === 'timeout' ? 12 : 60 },
      stop,
    )
    console.log(`opencode ${stop}: ${JSON.stringify({ ...result, sleeps: [...result.sleeps], error: String(result.error) })}`)
    expect(result.error).toMatchObject(stop === 'timeout' ? { code: 'ERR_BACKEND_TIMEOUT', message: 'opencode timed out after 12s' } : { name: 'AbortError' })
    expect(result.sleeps.size).toBe(2)
    expect(new Set(result.sleeps.values()).size).toBe(2)
  })

  it('a dead server ends by the deadline, leaving no process', async () => {
    // opencode itself gives up on a dead server only after ~66 s: the deadline ends it.
    const dead = await opencodeEnv({ url: await deadServerUrl() })
    useEnv({ OPENCODE_CONFIG_CONTENT: dead.OPENCODE_CONFIG_CONTENT })
    const started = Date.now()
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'opencode', timeoutSeconds: 4 })).rejects.toMatchObject({
      code: 'ERR_BACKEND_TIMEOUT',
      message: 'opencode timed out after 4s',
    })
    const elapsed = Date.now() - started
    console.log(`opencode dead server: timed out after ${elapsed} ms`)
    expect(elapsed).toBeLessThan(5_500)
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 3_000 })
  })

  it('an error event is reported with its message', async () => {
    server.setFailure({ status: 401, message: 'fake key refused' })
    await expect(relay({ prompt: 'p', repoPath: repo.path, backend: 'opencode' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      backend: 'opencode',
      message: expect.stringContaining('fake key refused'),
    })
  })

  it('streams each text part when it is complete; the return value is relay()’s answer', async () => {
    // opencode prints a text part only once it is whole: a step before a tool call is a chunk
    // of its own, well before the answer's step ends. The tool is `read`: `glob` and `grep` need
    // ripgrep, which opencode would try to download from github.com.
    server.setTool({ name: 'read', input: { filePath: join(repo.path, 'a.txt') } })
    server.setAnswer(STREAM_ANSWER)
    server.setParts({ count: 4, gapMs: GAP_MS })
    const { chunks, answer, endedAt } = await timedStream(relayStream({ prompt: 'Say hi', repoPath: repo.path, backend: 'opencode' }))
    expect(chunks.map((c) => c.text)).toEqual([TOOL_PREAMBLE, `\n\n${STREAM_ANSWER.trim()}`])
    expect(endedAt - chunks[0].at).toBeGreaterThanOrEqual(2.5 * GAP_MS)
    expect(answer).toBe(STREAM_ANSWER.trim())
    expect(server.modelRequests()[1].toolResults.join('')).toContain('one')
    server.setParts({ count: 1, gapMs: 0 })
    await expect(relay({ prompt: 'Say hi', repoPath: repo.path, backend: 'opencode' })).resolves.toBe(answer)
  })
})

describe('a model that stalls after its headers', () => {
  it.each(['claude', 'opencode'] as const)('%s is stopped at the idle time-out, not the wall clock, leaving no process', async (backend) => {
    useEnv(backend === 'claude' ? await claudeEnv(server) : await opencodeEnv(server))
    server.setStall(true)
    const started = Date.now()
    // Past each CLI's silent start (opencode prints nothing before the model's reply, and takes
    // 7 to 9 s to ask: docs/BACKENDS.md, "Silences").
    const idleTimeoutSeconds = backend === 'opencode' ? 20 : 3
    const error = await relay({ prompt: 'Say hi', repoPath: repo.path, backend, idleTimeoutSeconds, timeoutSeconds: 120 }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ERR_BACKEND_TIMEOUT', reason: 'stalled', backend })
    expect(Date.now() - started).toBeLessThan(60_000)
    expect(server.modelRequests().length).toBeGreaterThan(0)
    await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 3_000 })
  })
})

describe('fallback between the real CLIs', () => {
  it('a rate-limited codex hands the same envelope to claude, which answers: the result names claude and lists codex', async () => {
    const limited = await startFakeModelServer({ failure: { status: 429, message: 'Rate limit reached for requests' } })
    try {
      useEnv(await codexEnv(limited, { failFast: true }))
      useEnv(await claudeEnv(server))
      const warnings: string[] = []
      const details = await relayDetailed({ prompt: 'Say hi', repoPath: repo.path, backend: 'codex', fallback: ['claude'], onWarning: (w) => warnings.push(w), timeoutSeconds: 120 })
      expect(details).toMatchObject({ answer: DEFAULT_ANSWER, backend: 'claude', usage: { inputTokens: FAKE_USAGE.input } })
      expect(details.attempts).toEqual([{ backend: 'codex', reason: 'rate-limit', code: 'ERR_BACKEND_FAILED', message: expect.stringContaining('429') }])
      expect(warnings.some((w) => w.startsWith('[phone-a-friend] fallback: codex cannot answer now (rate-limit): '))).toBe(true)
      const envelope = envelopeOf(repo.path, 'Say hi')
      expect(limited.modelRequests().map((request) => request.prompt)[0]).toBe(envelope)
      expect(server.modelRequests().map((request) => request.prompt)).toEqual([envelope])
      // Neither the codex that failed nor the claude that answered left a process behind.
      await vi.waitFor(() => expect(processesWithEnv(mark)).toEqual([]), { timeout: 3_000 })
    } finally {
      await limited.close()
    }
  }, 90_000)
})
