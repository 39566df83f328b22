// codex (docs/HOSTS.md): `codex mcp add` writes `[mcp_servers.phone-a-friend]` in
// $CODEX_HOME/config.toml (user scope only) but has no flag for a tool-call time-out or for
// `env_vars`, and drops both on a second add: they are edited into that table after it, the file
// checked with a TOML parser before it replaces the old one (a bad value breaks every codex
// command). `codex mcp remove` removes the table, our lines with it.
import { join } from 'node:path'
import type * as SmolToml from 'smol-toml' with { 'resolution-mode': 'import' }
import type { FoundEntry, HostAdapter } from './host-adapter.js'
import { HostError } from './host-error.js'
import { commandAndArgs, envValue, homeOf, objectAt, parseTomlText, type Place, readText, readToml, sameValue, writeTextAtomically } from './host-config.js'
import { friendEnvNames, SERVER_NAME, TOOL_TIMEOUT_MS, type McpEntry } from './mcp-entry.js'
import { printable } from './printable.js'

// smol-toml's require() gets its CommonJS build (its "require" export); its typings are ESM only.
const { stringify } = require('smol-toml') as typeof SmolToml

/** What install adds to codex's table after `codex mcp add`. */
function addedKeys(): Record<string, unknown> {
  return { tool_timeout_sec: TOOL_TIMEOUT_MS / 1000, env_vars: friendEnvNames() }
}

/** The table's header line, as codex writes it (or with the name quoted). */
const TABLE_HEADER = new RegExp(`^[ \\t]*\\[[ \\t]*mcp_servers[ \\t]*\\.[ \\t]*(?:${SERVER_NAME}|"${SERVER_NAME}"|'${SERVER_NAME}')[ \\t]*\\][ \\t]*(?:#.*)?$`, 'm')

function codexHome(place: Place): string {
  return envValue(place, 'CODEX_HOME') ?? join(homeOf(place), '.codex')
}

function tableOf(config: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return objectAt(objectAt(config, 'mcp_servers'), SERVER_NAME)
}

/**
 * `text` with addedKeys() written at the end of our table: only the keys the table lacks;
 * one it holds with another value is an error, not a guess.
 */
function withAddedKeys(text: string, path: string): string {
  const table = tableOf(parseTomlText(text, path))
  const header = TABLE_HEADER.exec(text)
  if (table === undefined || header === null) throw new HostError(`codex mcp add left no [mcp_servers.${SERVER_NAME}] table in ${printable(path)}`, 'ERR_HOST_CONFIG')
  const missing: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(addedKeys())) {
    if (!Object.hasOwn(table, key)) missing[key] = value
    else if (!sameValue(table[key], value)) throw new HostError(`${printable(path)}: [mcp_servers.${SERVER_NAME}] already has another ${key}`, 'ERR_HOST_CONFIG', `Remove it by hand (or run phone-a-friend uninstall codex), then install again`)
  }
  if (Object.keys(missing).length === 0) return text
  // At the end of the table: after its last key, before the blank lines and the next header.
  const bodyStart = header.index + header[0].length
  const next = /^[ \t]*\[/m.exec(text.slice(bodyStart))
  const bodyEnd = next === null ? text.length : bodyStart + next.index
  const at = bodyStart + text.slice(bodyStart, bodyEnd).trimEnd().length
  return `${text.slice(0, at)}\n${stringify(missing).trimEnd()}${text.slice(at)}`
}

export const codex: HostAdapter = {
  name: 'codex',
  program: 'codex',
  install: 'npm install -g @openai/codex',
  scopes: ['user'],
  refusedScopes: {
    project: "codex's CLI writes only the user's config ($CODEX_HOME/config.toml); a project's .codex/config.toml is read only in a trusted project (docs/HOSTS.md)",
  },
  configPath: (_scope, place) => join(codexHome(place), 'config.toml'),
  find(scope, place): FoundEntry | undefined {
    const path = codex.configPath(scope, place)
    const stored = tableOf(readToml(path))
    return stored === undefined ? undefined : { scope, path, stored, ...commandAndArgs(stored) }
  },
  wanted: ({ command, args }: McpEntry) => ({ command, args, ...addedKeys() }),
  same(stored, wanted) {
    // codex may write keys of its own (`enabled`, …): ours must be there, as wanted.
    return Object.entries(wanted).every(([key, value]) => sameValue(stored[key], value)) && stored.enabled !== false
  },
  installSteps(scope, entry, place) {
    const path = codex.configPath(scope, place)
    return [
      { kind: 'run', program: 'codex', args: ['mcp', 'add', SERVER_NAME, '--', entry.command, ...entry.args] },
      {
        kind: 'edit',
        path,
        change: `set [mcp_servers.${SERVER_NAME}] ${stringify(addedKeys()).trim().split('\n').join(', ')}`,
        apply: () => {
          const text = readText(path) ?? ''
          const edited = withAddedKeys(text, path)
          // Checked before it replaces the file: codex refuses to start on a config it cannot parse.
          if (!codex.same(tableOf(parseTomlText(edited, path)) ?? {}, codex.wanted(entry))) {
            throw new HostError(`the edited ${printable(path)} does not hold the entry wanted; left as codex wrote it`, 'ERR_HOST_CONFIG')
          }
          if (edited !== text) writeTextAtomically(path, edited)
        },
      },
    ]
  },
  uninstallSteps: () => [{ kind: 'run', program: 'codex', args: ['mcp', 'remove', SERVER_NAME] }],
}
