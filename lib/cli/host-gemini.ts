// gemini (docs/HOSTS.md): `gemini mcp add` with `--timeout` (milliseconds, tool calls included)
// and `-e NAME=$NAME` for each key gemini withholds from MCP servers, a reference its settings
// resolve, never a value. A second add replaces the entry whole. Scopes: `user`
// (~/.gemini/settings.json, or under GEMINI_CLI_HOME), `project` (./.gemini/settings.json).
import { resolve } from 'node:path'
import type { FoundEntry, HostAdapter } from './host-adapter.js'
import { commandAndArgs, envValue, homeOf, objectAt, type Place, readJsonc, sameValue } from './host-config.js'
import { geminiWithheldNames, SERVER_NAME, TOOL_TIMEOUT_MS, type McpEntry } from './mcp-entry.js'

function settingsPath(scope: string, place: Place): string {
  const root = scope === 'user' ? (envValue(place, 'GEMINI_CLI_HOME') ?? homeOf(place)) : place.cwd
  return resolve(root, '.gemini', 'settings.json')
}

/** The withheld variables, each as a reference to itself (`"NAME": "$NAME"`). */
function envReferences(): Record<string, string> {
  return Object.fromEntries(geminiWithheldNames().map((name) => [name, `$${name}`]))
}

export const gemini: HostAdapter = {
  name: 'gemini',
  program: 'gemini',
  install: 'npm install -g @google/gemini-cli',
  scopes: ['user', 'project'],
  // In HOME the project's settings are the user's: gemini then writes nothing and says it did.
  unusable: (scope, place) =>
    scope === 'project' && settingsPath('project', place) === settingsPath('user', place) ? 'in your home folder the project settings are the user settings: use --scope user, or run this in the project' : undefined,
  configPath: settingsPath,
  find(scope, place): FoundEntry | undefined {
    const path = settingsPath(scope, place)
    const stored = objectAt(objectAt(readJsonc(path), 'mcpServers'), SERVER_NAME)
    return stored === undefined ? undefined : { scope, path, stored, ...commandAndArgs(stored) }
  },
  wanted: ({ command, args }: McpEntry) => ({ command, args, env: envReferences(), timeout: TOOL_TIMEOUT_MS }),
  // Keys of the user's own (`trust`, `includeTools`) stay: ours must be there, as wanted.
  same: (stored, wanted) => Object.entries(wanted).every(([key, value]) => sameValue(stored[key], value)),
  installSteps: (scope, entry) => [
    {
      kind: 'run',
      program: 'gemini',
      // `--` goes after the command: before it, gemini fails (docs/HOSTS.md).
      args: ['mcp', 'add', '-s', scope, '--timeout', String(TOOL_TIMEOUT_MS), ...Object.entries(envReferences()).flatMap(([name, value]) => ['-e', `${name}=${value}`]), SERVER_NAME, entry.command, '--', ...entry.args],
    },
  ],
  uninstallSteps: (scope) => [{ kind: 'run', program: 'gemini', args: ['mcp', 'remove', '-s', scope, SERVER_NAME] }],
}
