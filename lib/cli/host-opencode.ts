// opencode (docs/HOSTS.md): its `mcp add` writes no time-out and turns number-like arguments into
// numbers, and it has no `mcp remove`; so its config file is edited: `mcp.phone-a-friend`, set or
// removed with jsonc-parser, which keeps the rest (comments included) as it is. Scopes: `global`
// ($XDG_CONFIG_HOME/opencode, else ~/.config/opencode) and `project` (the current directory);
// in each, opencode.jsonc, else opencode.json, else a new opencode.jsonc.
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { applyEdits, findNodeAtLocation, type Node as JsonNode, modify, parseTree } from 'jsonc-parser'
import type { FoundEntry, HostAdapter } from './host-adapter.js'
import { HostError } from './host-error.js'
import { envValue, homeOf, objectAt, parseJsoncText, type Place, readText, sameValue, writeTextAtomically } from './host-config.js'
import { SERVER_NAME, TOOL_TIMEOUT_MS, type McpEntry } from './mcp-entry.js'
import { printable } from './printable.js'

/** What opencode writes in a config it creates. */
const NEW_CONFIG = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n'

function configPath(scope: string, place: Place): string {
  const dir = scope === 'project' ? place.cwd : join(envValue(place, 'XDG_CONFIG_HOME') ?? join(homeOf(place), '.config'), 'opencode')
  const jsonc = join(dir, 'opencode.jsonc')
  const json = join(dir, 'opencode.json')
  return existsSync(jsonc) || !existsSync(json) ? jsonc : json
}

/** The indentation of the line `offset` is on. */
function indentAt(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1
  return /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? ''
}

/**
 * `text` with `"key": value` as the first property of the object at `path` (the root: `[]`).
 * First, not last: a comment after the last property stays where it is, and removing a first
 * property (removeProperty) takes exactly what was inserted, so uninstall gives the file back
 * byte for byte.
 */
function insertFirst(text: string, path: string[], key: string, value: unknown): string {
  const object = findNodeAtLocation(parseTree(text) as JsonNode, path)
  if (object?.type !== 'object') throw new HostError(`opencode config: ${path.join('.') || 'the file'} is not a JSON object`, 'ERR_HOST_CONFIG')
  const first = object.children?.[0]
  const indent = first === undefined ? `${indentAt(text, object.offset)}  ` : indentAt(text, first.offset)
  const shown = JSON.stringify(value, null, 2).split('\n').join(`\n${indent}`)
  const open = object.offset + 1
  const after = first === undefined ? `\n${indentAt(text, object.offset)}${text.slice(open).replace(/^\s*/, '')}` : `,${text.slice(open)}`
  return `${text.slice(0, open)}\n${indent}${JSON.stringify(key)}: ${shown}${after}`
}

/**
 * `text` without the property `key` of the object at `path`: the inverse of insertFirst (its line
 * and its comma, or all between the braces when it is alone). A property placed otherwise (moved
 * by hand after others) is removed by jsonc-parser's `modify`.
 */
function removeProperty(text: string, path: string[], key: string): string {
  const object = findNodeAtLocation(parseTree(text) as JsonNode, path)
  const properties = object?.children ?? []
  const index = properties.findIndex((property) => property.children?.[0]?.value === key)
  if (object === undefined || index === -1) return text
  const property = properties[index]
  if (properties.length === 1) return `${text.slice(0, object.offset + 1)}${text.slice(object.offset + object.length - 1)}`
  const comma = /^\s*,[ \t]*\r?\n?/.exec(text.slice(property.offset + property.length))
  if (index !== 0 || comma === null) return applyEdits(text, modify(text, [...path, key], undefined, {}))
  const lineStart = text.lastIndexOf('\n', property.offset - 1) + 1
  const start = /^[ \t]*$/.test(text.slice(lineStart, property.offset)) ? lineStart : property.offset
  return `${text.slice(0, start)}${text.slice(property.offset + property.length + comma[0].length)}`
}

/** `text` with `mcp.phone-a-friend` set to `value`, or removed (undefined), and `mcp` too when that empties it. */
function edited(text: string, value: Record<string, unknown> | undefined, path: string): string {
  const config = parseJsoncText(text, path)
  let next = objectAt(objectAt(config, 'mcp'), SERVER_NAME) === undefined ? text : removeProperty(text, ['mcp'], SERVER_NAME)
  if (value !== undefined) return objectAt(config, 'mcp') === undefined ? insertFirst(next, [], 'mcp', { [SERVER_NAME]: value }) : insertFirst(next, ['mcp'], SERVER_NAME, value)
  const mcp = objectAt(parseJsoncText(next, path), 'mcp')
  if (mcp !== undefined && Object.keys(mcp).length === 0) next = removeProperty(next, [], 'mcp')
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
