// The set-up of the suites that run `phone-a-friend mcp` as a real server process: for each test a
// repository with one commit, the fake backend CLIs, a mark put in the server's environment (and so
// in every backend's) to count what it leaves running, and the test's client, closed after it.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { afterEach, beforeEach } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { FakeClis, type FakeMode } from './fake-cli.js'
import { TempRepo } from './git-repo.js'
import { CLI } from './run-cli.js'

export interface McpServerSuite {
  readonly repo: TempRepo
  readonly fake: FakeClis
  /** `PAF_MCP_MARK=<unique>`, for `processesWithEnv`. */
  readonly mark: string
  /** The client the test connected, if any: closed after the test. */
  client: Client | undefined
  /** The server's environment: this process's, then `extra`, the fake CLIs' mode and the mark. */
  env(mode: FakeMode, extra?: Record<string, string>): Record<string, string>
}

/** Registers the hooks; the returned object's fields are the current test's. */
export function mcpServerSuite(): McpServerSuite {
  const suite = {
    client: undefined,
    env(mode: FakeMode, extra: Record<string, string> = {}): Record<string, string> {
      const [key, value] = suite.mark.split('=')
      const env: Record<string, string> = {}
      for (const [name, entry] of Object.entries(process.env)) if (entry !== undefined) env[name] = entry
      return { ...env, ...extra, FAKE_MODE: mode, [key]: value }
    },
  } as McpServerSuite & { repo: TempRepo; fake: FakeClis; mark: string }
  beforeEach(() => {
    suite.repo = new TempRepo().write('a.txt', 'one\n').commit('first')
    suite.fake = new FakeClis()
    suite.mark = `PAF_MCP_MARK=${process.pid}-${Math.random().toString(36).slice(2)}`
  })
  afterEach(async () => {
    await suite.client?.close()
    suite.client = undefined
    suite.fake.restore()
    suite.repo.remove()
  })
  return suite
}

/** A `phone-a-friend mcp` process started by hand, spoken to in newline-delimited JSON. */
export interface McpServerProcess {
  child: ChildProcessWithoutNullStreams
  /** Writes `message` as one line on its stdin. */
  send(message: object): void
  /** Every message it wrote on stdout so far. */
  lines<Line = Record<string, unknown>>(): Line[]
  stderr(): string
  /** Its exit code, once it closed. */
  exited: Promise<number | null>
}

/** Starts `phone-a-friend mcp` in the suite's repository, to watch stdin, stdout and its exit. */
export function startServerProcess(suite: McpServerSuite, mode: FakeMode): McpServerProcess {
  const child = spawn(process.execPath, [CLI, 'mcp'], { cwd: suite.repo.path, env: suite.env(mode), stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  return {
    child,
    send: (message) => void child.stdin.write(`${JSON.stringify(message)}\n`),
    lines: <Line>() => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line),
    stderr: () => stderr,
    exited: new Promise((resolve) => child.on('close', (code) => resolve(code))),
  }
}
