// Claude Code (docs/HOSTS.md): `claude mcp add-json`, the one way to give a server its own tool-call
// `timeout`; a second add is refused, so a different entry is removed first. Scopes: `user`
// (~/.claude.json `mcpServers`), `project` (`.mcp.json` of the current directory), `local`
// (~/.claude.json `projects[<git root>].mcpServers`).
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { FoundEntry, HostAdapter, Step } from './host-adapter.js'
import { commandAndArgs, envValue, homeOf, objectAt, type Place, readJsonc, sameValue } from './host-config.js'
import { SERVER_NAME, TOOL_TIMEOUT_MS, type McpEntry } from './mcp-entry.js'

/** The folder Claude Code keeps `.claude.json` in: CLAUDE_CONFIG_DIR, else HOME. */
function configDir(place: Place): string {
  return envValue(place, 'CLAUDE_CONFIG_DIR') ?? homeOf(place)
}

/** The repository root Claude Code keys a `local` entry by, else the current directory. */
function projectKey(place: Place): string {
  for (let dir = place.cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return place.cwd
  }
}

function servers(scope: string, place: Place): { path: string; servers: Record<string, unknown> | undefined } {
  if (scope === 'project') {
    const path = join(place.cwd, '.mcp.json')
    return { path, servers: objectAt(readJsonc(path), 'mcpServers') }
  }
  const path = join(configDir(place), '.claude.json')
  const config = readJsonc(path)
  const holder = scope === 'local' ? objectAt(objectAt(config, 'projects'), projectKey(place)) : config
  return { path, servers: objectAt(holder, 'mcpServers') }
}

export const claude: HostAdapter = {
  name: 'claude',
  program: 'claude',
  install: 'npm install -g @anthropic-ai/claude-code',
  scopes: ['user', 'project', 'local'],
  configPath: (scope, place) => servers(scope, place).path,
  find(scope, place): FoundEntry | undefined {
    const { path, servers: found } = servers(scope, place)
    const stored = objectAt(found, SERVER_NAME)
    return stored === undefined ? undefined : { scope, path, stored, ...commandAndArgs(stored) }
  },
  wanted: ({ command, args }: McpEntry) => ({ type: 'stdio', command, args, timeout: TOOL_TIMEOUT_MS }),
  same(stored, wanted) {
    // Claude Code may add an empty `env` of its own.
    const { env, ...rest } = stored
    return (env === undefined || sameValue(env, {})) && sameValue(rest, wanted)
  },
  installSteps(scope, entry, place, found) {
    const add = { kind: 'run', program: 'claude', args: ['mcp', 'add-json', '-s', scope, SERVER_NAME, JSON.stringify(claude.wanted(entry))] } satisfies Step
    return found === undefined ? [add] : [...claude.uninstallSteps(scope, place), add]
  },
  uninstallSteps: (scope) => [{ kind: 'run', program: 'claude', args: ['mcp', 'remove', '-s', scope, SERVER_NAME] }],
}
