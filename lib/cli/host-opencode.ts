// opencode (docs/HOSTS.md): its `mcp add` writes no time-out and turns number-like arguments into
// numbers, and it has no `mcp remove`; so its config file is edited: `mcp.phone-a-friend`, set or
// removed with jsonc-parser, which keeps the rest (comments included) as it is. Scopes: `global`
// ($XDG_CONFIG_HOME/opencode, else ~/.config/opencode) and `project` (the current directory);
// in each, opencode.jsonc, else opencode.json, else a new opencode.jsonc.
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { applyEdits, type FormattingOptions, modify } from 'jsonc-parser'
import type { FoundEntry, HostAdapter } from './host-adapter.js'
import { HostError } from './host-error.js'
import { envValue, homeOf, objectAt, parseJsoncText, type Place, readText, sameValue, writeTextAtomically } from './host-config.js'
import { SERVER_NAME, TOOL_TIMEOUT_MS, type McpEntry } from './mcp-entry.js'
import { printable } from './printable.js'

/** What opencode writes in a config it creates. */
const NEW_CONFIG = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n'

const FORMATTING: FormattingOptions = { insertSpaces: true, tabSize: 2, eol: '\n' }

function configPath(scope: string, place: Place): string {
  const dir = scope === 'project' ? place.cwd : join(envValue(place, 'XDG_CONFIG_HOME') ?? join(homeOf(place), '.config'), 'opencode')
  const jsonc = join(dir, 'opencode.jsonc')
  const json = join(dir, 'opencode.json')
  return existsSync(jsonc) || !existsSync(json) ? jsonc : json
}

/** `text` with `mcp.phone-a-friend` set to `value`, or removed (undefined), and `mcp` too when that empties it. */
function edited(text: string, value: Record<string, unknown> | undefined, path: string): string {
  let next = applyEdits(text, modify(text, ['mcp', SERVER_NAME], value, { formattingOptions: FORMATTING }))
  if (value === undefined) {
    const mcp = objectAt(parseJsoncText(next, path), 'mcp')
    if (mcp !== undefined && Object.keys(mcp).length === 0) next = applyEdits(next, modify(next, ['mcp'], undefined, { formattingOptions: FORMATTING }))
  }
  return next
}

/** Applies an edit to the file, checked first: the result must parse and hold what was meant. */
function editFile(path: string, value: Record<string, unknown> | undefined): void {
  const text = readText(path) ?? NEW_CONFIG
  const next = edited(text, value, path)
  const stored = objectAt(objectAt(parseJsoncText(next, path), 'mcp'), SERVER_NAME)
  if (value === undefined ? stored !== undefined : stored === undefined || !sameValue(stored, value)) {
    throw new HostError(`could not edit ${printable(path)} as meant; it was left as it was`, 'ERR_HOST_CONFIG')
  }
  mkdirSync(dirname(path), { recursive: true })
  writeTextAtomically(path, next)
}

export const opencode: HostAdapter = {
  name: 'opencode',
  program: 'opencode',
  install: 'npm install -g opencode-ai',
  scopes: ['global', 'project'],
  scopeAliases: { user: 'global' },
  configPath,
  find(scope, place): FoundEntry | undefined {
    const path = configPath(scope, place)
    const text = readText(path)
    const stored = text === undefined ? undefined : objectAt(objectAt(parseJsoncText(text, path), 'mcp'), SERVER_NAME)
    if (stored === undefined) return undefined
    const [command = '', ...args] = Array.isArray(stored.command) ? stored.command.map(String) : []
    return { scope, path, stored, command, args }
  },
  // Every element a string: opencode refuses a number in `command` (docs/HOSTS.md).
  wanted: ({ command, args }: McpEntry) => ({ type: 'local', command: [command, ...args], timeout: TOOL_TIMEOUT_MS }),
  same: (stored, wanted) => Object.entries(wanted).every(([key, value]) => sameValue(stored[key], value)) && stored.enabled !== false,
  installSteps(scope, entry, place) {
    const path = configPath(scope, place)
    const value = opencode.wanted(entry)
    return [{ kind: 'edit', path, change: `set mcp.${SERVER_NAME} = ${JSON.stringify(value)}`, apply: () => editFile(path, value) }]
  },
  uninstallSteps(scope, place) {
    const path = configPath(scope, place)
    return [{ kind: 'edit', path, change: `remove mcp.${SERVER_NAME}`, apply: () => editFile(path, undefined) }]
  },
}
