// Round four's attacks on what the relay shows (docs/GUARANTEES.md, "Secrets are not shown, and
// nothing reaches a terminal raw"): a password in OLLAMA_HOST on every surface, a friend's answer
// full of escape sequences on a terminal, an MCP agent naming files outside its repository, a CLI
// that prints 50 MB of stderr or echoes a key. Each runs the real bin, the real MCP server or the
// library against fake CLIs and a real HTTP server.
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { MAX_OUTPUT_BYTES, relay, relayStream, RelayError } from '@phone-a-friend/relay'
import { isAlive } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { closedHost, startOllamaStub, type OllamaStub } from './support/ollama-stub.js'
import { CLI, runCli } from './support/run-cli.js'

let repo: TempRepo
let bin: string
let scratch: string
const clients: Client[] = []

beforeEach(() => {
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  bin = mkdtempSync(join(tmpdir(), 'paf-secrets-bin-'))
  scratch = mkdtempSync(join(tmpdir(), 'paf-secrets-'))
})

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close()
  repo.remove()
  for (const dir of [bin, scratch]) rmSync(dir, { recursive: true, force: true })
})

/** A fake CLI on PATH: `--version` prints `version`, anything else runs `body` (sh) after reading stdin. */
function fakeCli(name: string, body: string, version = `${name} 0.0.1`): void {
  const file = join(bin, name)
  writeFileSync(file, `#!/bin/sh\nif [ "$1" = "--version" ]; then printf '%s\\n' '${version}'; exit 0; fi\ncat > /dev/null\n${body}\n`)
  chmodSync(file, 0o755)
}

/** The environment of a CLI or server: the fakes first on PATH, no PHONE_A_FRIEND_* defaults. */
function env(extra: Record<string, string> = {}): Record<string, string> {
  const base: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith('PHONE_A_FRIEND_')) base[name] = value
  return { ...base, PATH: `${bin}:${process.env.PATH ?? ''}`, ...extra }
}

/** Runs `work` with `extra` in this process's environment (the library reads it), then restores it. */
async function withEnv<T>(extra: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(extra).map((name) => [name, process.env[name]]))
  Object.assign(process.env, extra)
  try {
    return await work()
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}

/** The library's error for `relay(options)`, run with the fakes on PATH and `extra` in the environment. */
function relayError(options: Parameters<typeof relay>[0], extra: Record<string, string> = {}): Promise<RelayError> {
  return withEnv({ PATH: env().PATH, ...extra }, () =>
    relay(options).then(
      (answer) => {
        throw new Error(`expected a failure, got ${answer}`)
      },
      (error: unknown) => error as RelayError,
    ),
  )
}

/** A PATH of the fakes and the system's tools only: doctor asks every CLI it finds for its version, and the real ones take seconds. */
function fakesOnly(): string {
  return [bin, dirname(process.execPath), '/usr/bin', '/bin'].join(':')
}

async function mcpClient(extra: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: repo.path, env: env(extra), stderr: 'pipe' })
  const client = new Client({ name: 'secrets-tests', version: '0.0.0' })
  await client.connect(transport)
  clients.push(client)
  return client
}

type ToolResult = { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { error?: { code: string; message: string; backendOutput?: string } } }

/** The four shapes of a secret in OLLAMA_HOST the issue tried, with the secret each must hide. */
function hostsWithSecrets(port: number): Array<[string, string]> {
  return [
    [`http://user:PW1secret@127.0.0.1:${port}`, 'PW1secret'],
    [`user:PW2secret@127.0.0.1:${port}`, 'PW2secret'],
    [`https://:PW3secret@[::1]:${port}/x`, 'PW3secret'],
    [`http://TOKEN4secret@127.0.0.1:${port}`, 'TOKEN4secret'],
  ]
}

describe('a password in OLLAMA_HOST', () => {
  let stub: OllamaStub

  beforeEach(async () => {
    stub = await startOllamaStub((res) => res.end(JSON.stringify({ message: { content: 'ok' }, done: true })), ['llama3'])
  })
  afterEach(() => stub.close())

  it('is masked in the "not reachable" error of the library, the CLI (text and --json) and the MCP server', async () => {
    const port = Number((await closedHost()).split(':')[1])
    for (const [host, secret] of hostsWithSecrets(port)) {
      const error = await relayError({ prompt: 'p', backend: 'ollama', model: 'm', repoPath: repo.path }, { OLLAMA_HOST: host })
      expect(error).toBeInstanceOf(RelayError)
      expect((error as RelayError).code).toBe('ERR_BACKEND_UNAVAILABLE')
      expect((error as RelayError).message).toMatch(/^Ollama server not reachable at https?:\/\/\*{8}@(127\.0\.0\.1|\[::1\]):\d+(\/x)?\. /)
      expect((error as RelayError).message).not.toContain(secret)

      const text = await runCli(['-p', 'p', '--to', 'ollama', '--model', 'm'], { env: env({ OLLAMA_HOST: host }), cwd: repo.path })
      expect(text.code).toBe(1)
      expect(text.stderr).toContain('Ollama server not reachable at http')
      const json = await runCli(['-p', 'p', '--to', 'ollama', '--model', 'm', '--json'], { env: env({ OLLAMA_HOST: host }), cwd: repo.path })
      expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'ERR_BACKEND_UNAVAILABLE' } })
      for (const printed of [text.stdout, text.stderr, json.stdout, json.stderr]) expect(printed).not.toContain(secret)
    }
    const [host, secret] = hostsWithSecrets(port)[0]
    const client = await mcpClient({ OLLAMA_HOST: host })
    const result = (await client.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'ollama', model: 'm' } })) as ToolResult
    expect(result.isError).toBe(true)
    expect(result.structuredContent?.error?.message).toContain('not reachable at http://********@127.0.0.1:')
    expect(JSON.stringify(result)).not.toContain(secret)
  })

  it('is masked in doctor (text and --json) and the MCP backends tool, and sent to the server as basic authentication', async () => {
    const host = `http://user:PW5secret@127.0.0.1:${stub.port}`
    const text = await runCli(['doctor'], { env: env({ OLLAMA_HOST: host, PATH: fakesOnly() }), cwd: repo.path })
    expect(text.stdout).toContain(`server answers at http://********@127.0.0.1:${stub.port}`)
    const json = await runCli(['doctor', '--json'], { env: env({ OLLAMA_HOST: host, PATH: fakesOnly() }), cwd: repo.path })
    const ollama = (JSON.parse(json.stdout) as { backends: Array<{ name: string; host?: string; ready: boolean }> }).backends.find((b) => b.name === 'ollama')
    expect(ollama).toMatchObject({ ready: true, host: `http://********@127.0.0.1:${stub.port}` })
    const client = await mcpClient({ OLLAMA_HOST: host, PATH: fakesOnly() })
    const backends = await client.callTool({ name: 'backends', arguments: {} })
    for (const printed of [text.stdout, text.stderr, json.stdout, JSON.stringify(backends)]) expect(printed).not.toContain('PW5secret')
    expect(JSON.stringify(backends)).toContain('http://********@127.0.0.1')

    let authorization: string | undefined
    stub.reply = (res, _count, _body, req) => {
      authorization = req.headers.authorization
      res.end(JSON.stringify({ message: { content: 'fine' }, done: true }))
    }
    const answered = await runCli(['-p', 'p', '--to', 'ollama', '--model', 'm'], { env: env({ OLLAMA_HOST: host }), cwd: repo.path })
    expect(answered).toMatchObject({ code: 0, stdout: 'fine\n' })
    expect(authorization).toBe(`Basic ${Buffer.from('user:PW5secret').toString('base64')}`)
  })
})

/** An answer holding what a hostile repository could make a friend say. */
const HOSTILE = 'Looks good.\n\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[31mred\x1b[0m \x9b31m \u202eevil\u2066 \x1bP1$r\x1b\\\tend'
const ESCAPED = 'Looks good.\n\\u{1b}]52;c;ZWNobyBwd25lZA==\\u{7}\\u{1b}[2J\\u{1b}[31mred\\u{1b}[0m \\u{9b}31m \\u{202e}evil\\u{2066} \\u{1b}P1$r\\u{1b}\\\tend'

/** Runs the CLI on a pseudo-terminal (util-linux `script`), stderr to a file; resolves with what the terminal got. */
function onTerminal(args: string[], extra: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  expect(existsSync('/usr/bin/script') || existsSync('/bin/script'), 'util-linux `script` is needed for a pseudo-terminal').toBe(true)
  const quoted = [process.execPath, CLI, ...args].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ')
  const child = spawn('script', ['-qec', `${quoted} 2>/dev/null </dev/null`, '/dev/null'], { env: env(extra), cwd: repo.path, stdio: 'pipe' })
  const chunks: Buffer[] = []
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk))
  child.stdin.end()
  return new Promise((done) => child.on('close', (code) => done({ code, output: Buffer.concat(chunks).toString('utf8').replaceAll('\r\n', '\n') })))
}

describe("a friend's answer on a terminal", () => {
  let ollama: OllamaStub

  beforeEach(async () => {
    writeFileSync(join(scratch, 'answer'), HOSTILE)
    fakeCli('codex', `cat '${join(scratch, 'answer')}'`)
    ollama = await startOllamaStub((res) => res.end(JSON.stringify({ message: { content: HOSTILE }, done: true })))
  })
  afterEach(() => ollama.close())

  it.each([
    ['streamed', []],
    ['--no-stream', ['--no-stream']],
  ])('is printed escaped, %s, with line breaks and tabs kept', async (_, extra) => {
    const { code, output } = await onTerminal(['-p', 'p', '--to', 'codex', ...extra])
    expect(code).toBe(0)
    expect(output).toBe(`${ESCAPED}\n`)
  })

  it('is printed escaped for several backends at once', async () => {
    const { code, output } = await onTerminal(['-p', 'p', '--to', 'codex,ollama'], { OLLAMA_HOST: ollama.host })
    expect(code).toBe(0)
    expect(output).toBe(`=== codex ===\n${ESCAPED}\n\n=== ollama ===\n${ESCAPED}\n`)
  })

  it('keeps its bytes with --raw, and into a pipe', async () => {
    const raw = await onTerminal(['-p', 'p', '--to', 'codex', '--raw'])
    expect(raw.output).toBe(`${HOSTILE}\n`)
    const piped = await runCli(['-p', 'p', '--to', 'codex'], { env: env(), cwd: repo.path })
    expect(piped.stdout).toBe(`${HOSTILE}\n`)
  })

  it('is JSON with C1 controls and bidi overrides escaped under --json', async () => {
    const { stdout } = await runCli(['-p', 'p', '--to', 'codex', '--json'], { env: env(), cwd: repo.path })
    expect(stdout.trimEnd()).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202e\u2066]/)
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, answer: HOSTILE.trim(), output: HOSTILE.trim(), backend: 'codex' })
  })
})

describe('doctor', () => {
  it('prints what the CLIs and the Ollama server said escaped, in text and in --json, even into a pipe', async () => {
    const hostile = 'bad \x1b]52;c;cHduZWQ=\x07\x9b2J\u202e'
    writeFileSync(join(bin, 'codex'), `#!/bin/sh\nprintf '%s\\n' '${hostile}' >&2\nexit 3\n`)
    chmodSync(join(bin, 'codex'), 0o755)
    const ollama = await startOllamaStub((res) => res.end(), [`llama3${hostile}`])
    try {
      const extra = { CODEX_API_KEY: 'k', OLLAMA_HOST: ollama.host, OLLAMA_MODEL: `m${hostile}`, PATH: fakesOnly() }
      const text = await runCli(['doctor'], { env: env(extra), cwd: repo.path })
      expect(text.stdout.split('\n').find((line) => line.includes('codex'))).toContain('\\u{1b}]52')
      expect(text.stdout).toContain('model mbad \\u{1b}]52')
      const json = await runCli(['doctor', '--json'], { env: env(extra), cwd: repo.path })
      for (const printed of [text.stdout, json.stdout]) expect(printed).not.toMatch(/[\x1b\x07\x9b\u202e]/)
      const report = JSON.parse(json.stdout) as { backends: Array<{ name: string; problem?: string; model?: string; models?: string[] }> }
      expect(report.backends.find((b) => b.name === 'codex')?.problem).toContain(hostile)
      expect(report.backends.find((b) => b.name === 'ollama')).toMatchObject({ model: `m${hostile}`, models: [`llama3${hostile}`] })
    } finally {
      await ollama.close()
    }
  })
})

describe('the MCP server and context files', () => {
  it('takes a contextFile inside the repository only, never /proc, /dev or /sys, unless the server names more folders', async () => {
    fakeCli('codex', 'printf "answered\\n"')
    writeFileSync(join(repo.path, 'notes.md'), 'inside notes')
    writeFileSync(join(scratch, 'id_rsa'), 'PRIVATE KEY')
    const client = await mcpClient({ CODEX_API_KEY: 'k' })
    const call = async (contextFile: string, c = client): Promise<ToolResult> =>
      (await c.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'codex', contextFile } })) as ToolResult
    expect((await call('notes.md')).isError).toBe(false)
    for (const file of [join(scratch, 'id_rsa'), join('..', basename(scratch), 'id_rsa'), '/proc/self/environ', '/etc/passwd', '/dev/zero']) {
      const refused = await call(file)
      expect(refused.isError, file).toBe(true)
      expect(refused.structuredContent?.error).toMatchObject({ code: 'ERR_CONTEXT_FILE', message: expect.stringMatching(/^Context file refused: an agent may /) })
    }
    const widened = await mcpClient({ CODEX_API_KEY: 'k', PHONE_A_FRIEND_MCP_CONTEXT_DIRS: scratch })
    expect((await call(join(scratch, 'id_rsa'), widened)).isError).toBe(false)
    expect((await call('/proc/self/environ', widened)).isError).toBe(true)
  })

  it('the CLI and the library refuse a process environment, named or through a link', async () => {
    fakeCli('codex', 'printf "answered\\n"')
    const { code, stderr } = await runCli(['-p', 'p', '--to', 'codex', '--context-file', '/proc/self/environ'], { env: env(), cwd: repo.path })
    expect(code).toBe(1)
    expect(stderr).toBe("Error [ERR_CONTEXT_FILE]: Context file refused: it is a process's environment or memory, which is never sent: /proc/self/environ\n")
    const error = await relayError({ prompt: 'p', repoPath: repo.path, contextFile: '/proc/self/environ' })
    expect(error).toMatchObject({ code: 'ERR_CONTEXT_FILE' })
  })
})

describe("a CLI's words", () => {
  it('make a message of at most 4 KiB on every surface, however much it printed', async () => {
    fakeCli('codex', `echo 'first line of the failure' >&2; head -c 50000000 /dev/zero | tr '\\0' x >&2; echo ' the last words' >&2; exit 1`)
    const error = await relayError({ prompt: 'p', repoPath: repo.path, backend: 'codex' })
    expect(error.code).toBe('ERR_BACKEND_FAILED')
    expect(Buffer.byteLength(error.message)).toBeLessThanOrEqual(4096)
    expect(error.message).toMatch(/^first line of the failure\nx+ … \[\d+ bytes left out\] … x+/)
    const cli = await runCli(['-p', 'p', '--to', 'codex'], { env: env(), cwd: repo.path })
    expect(cli.code).toBe(1)
    expect(Buffer.byteLength(cli.stderr)).toBeLessThan(4096 + 100)
    const client = await mcpClient()
    const result = (await client.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'codex' } })) as ToolResult
    expect(Buffer.byteLength(result.structuredContent?.error?.message ?? '')).toBeLessThanOrEqual(4096)
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(20_000)
  })

  it('are passed on with the keys they echo masked, in the message, backendOutput and MCP results', async () => {
    const keys = ['sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123', 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-0123', 'AIzaSyA1234567890abcdefghijklmnopqrstu', 'ghp_0123456789abcdefghijABCDEFGHIJ012345', 'xoxb-1234567890-abcdefghij']
    fakeCli('codex', `echo 'Error: rejected ${keys.join(' ')} OPENAI_API_KEY=plainsecret Authorization: Bearer abc.def.ghi123' >&2; exit 1`)
    const error = await relayError({ prompt: 'p', repoPath: repo.path, backend: 'codex' })
    const client = await mcpClient()
    const result = await client.callTool({ name: 'relay', arguments: { prompt: 'p', backend: 'codex' } })
    const cli = await runCli(['-p', 'p', '--to', 'codex', '--json'], { env: env(), cwd: repo.path })
    for (const shown of [error.message, error.backendOutput ?? '', JSON.stringify(result), cli.stdout]) {
      expect(shown).toContain('Error: rejected ********')
      for (const secret of [...keys, 'plainsecret', 'abc.def.ghi123']) expect(shown).not.toContain(secret)
    }
  })
})

describe('a stream', () => {
  it('passes at most MAX_OUTPUT_BYTES, then fails with ERR_TOO_LARGE and stops the backend', async () => {
    const pidFile = join(scratch, 'pid')
    // gemini's stream-json: 600 assistant deltas of 64 KiB (37.5 MiB), each a chunk of the stream.
    const delta = `{"type":"message","role":"assistant","content":"${'x'.repeat(65536)}","delta":true}`
    writeFileSync(join(scratch, 'delta'), `${delta}\n`)
    fakeCli('gemini', `echo $$ > '${pidFile}'; i=0; while [ $i -lt 600 ]; do cat '${join(scratch, 'delta')}'; i=$((i + 1)); done`)
    let streamed = 0
    const failure = await withEnv({ PATH: env().PATH }, async () => {
      try {
        for await (const chunk of relayStream({ prompt: 'p', repoPath: repo.path, backend: 'gemini' })) streamed += Buffer.byteLength(chunk)
      } catch (error) {
        return error as RelayError
      }
      throw new Error('expected ERR_TOO_LARGE')
    })
    expect(failure).toMatchObject({ code: 'ERR_TOO_LARGE', backend: 'gemini' })
    expect(failure.message).toMatch(/^Backend output is too large \(\d+ bytes; max 8388608 bytes\)$/)
    expect(streamed).toBeLessThanOrEqual(MAX_OUTPUT_BYTES)
    expect(streamed).toBeGreaterThan(MAX_OUTPUT_BYTES - 1024 * 1024)
    expect(isAlive(Number(readFileSync(pidFile, 'utf8')))).toBe(false)
  })
})
