// The set-up of the suites that run `phone-a-friend mcp` as a real server process: for each test a
// repository with one commit, the fake backend CLIs, a mark put in the server's environment (and so
// in every backend's) to count what it leaves running, and the test's client, closed after it.
import { afterEach, beforeEach } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { FakeClis, type FakeMode } from './fake-cli.js'
import { TempRepo } from './git-repo.js'

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
