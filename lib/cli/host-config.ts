// Reading and writing host config files (docs/HOSTS.md): JSON with comments (Claude Code,
// gemini, opencode) through jsonc-parser, TOML (codex) through smol-toml. A file that cannot be
// read or parsed is a HostError naming it, never a crash nor a silent overwrite.
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { parse as parseJsonc, type ParseError, printParseErrorCode } from 'jsonc-parser'
import type * as SmolToml from 'smol-toml' with { 'resolution-mode': 'import' }
import { HostError } from './host-error.js'
import { printable } from './printable.js'

// smol-toml's require() gets its CommonJS build (its "require" export); its typings are ESM only.
const { parse: parseToml } = require('smol-toml') as typeof SmolToml

/** Where a host's config is looked for: the environment's homes and the current directory. */
export interface Place {
  env: NodeJS.ProcessEnv
  cwd: string
}

/** The user's home: HOME as the host CLIs read it, else the OS's idea of it. */
export function homeOf(place: Place): string {
  const home = place.env.HOME
  return home === undefined || home === '' ? homedir() : home
}

/** A variable's value, unless unset or empty. */
export function envValue(place: Place, name: string): string | undefined {
  const value = place.env[name]
  return value === undefined || value === '' ? undefined : value
}

/** A file's text, or undefined when it does not exist. */
export function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined
    throw new HostError(`cannot read ${printable(path)}: ${printable((error as Error).message)}`, 'ERR_HOST_CONFIG')
  }
}

/** The object a JSON (with comments) file holds; undefined when there is no file. */
export function readJsonc(path: string): Record<string, unknown> | undefined {
  const text = readText(path)
  if (text === undefined) return undefined
  return parseJsoncText(text, path)
}

export function parseJsoncText(text: string, path: string): Record<string, unknown> {
  const errors: ParseError[] = []
  const value: unknown = text.trim() === '' ? {} : parseJsonc(text, errors, { allowTrailingComma: true })
  if (errors.length > 0) {
    const first = errors[0]
    throw new HostError(`${printable(path)} is not valid JSON: ${printParseErrorCode(first.error)} at offset ${first.offset}`, 'ERR_HOST_CONFIG', 'Fix the file by hand, then run the command again')
  }
  if (!isObject(value)) throw new HostError(`${printable(path)} does not hold a JSON object`, 'ERR_HOST_CONFIG', 'Fix the file by hand, then run the command again')
  return value
}

/** The table a TOML file holds; undefined when there is no file. */
export function readToml(path: string): Record<string, unknown> | undefined {
  const text = readText(path)
  if (text === undefined) return undefined
  return parseTomlText(text, path)
}

export function parseTomlText(text: string, path: string): Record<string, unknown> {
  try {
    return parseToml(text) as Record<string, unknown>
  } catch (error) {
    const first = ((error as Error).message.split('\n')[0] ?? '').trim()
    throw new HostError(`${printable(path)} is not valid TOML: ${printable(first)}`, 'ERR_HOST_CONFIG', 'Fix the file by hand, then run the command again')
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `object[key]` when it is an object. */
export function objectAt(object: Record<string, unknown> | undefined, key: string): Record<string, unknown> | undefined {
  const value = object === undefined || !Object.hasOwn(object, key) ? undefined : object[key]
  return isObject(value) ? value : undefined
}

/**
 * Replaces a config file's text at once (a temp file renamed over it), keeping its permissions:
 * a host reading it meanwhile sees the old file or the new, never half of one.
 */
export function writeTextAtomically(path: string, text: string): void {
  const mode = existsSync(path) ? statSync(path).mode & 0o777 : 0o644
  const temp = join(dirname(path), `.${process.pid}.phone-a-friend.tmp`)
  try {
    writeFileSync(temp, text, { mode })
    renameSync(temp, path)
  } catch (error) {
    rmSync(temp, { force: true })
    throw new HostError(`cannot write ${printable(path)}: ${printable((error as Error).message)}`, 'ERR_HOST_CONFIG')
  }
}

/** A stored stdio entry's command and arguments (`command` and `args`, as Claude Code and gemini write them). */
export function commandAndArgs(stored: Record<string, unknown>): { command: string; args: string[] } {
  const command = typeof stored.command === 'string' ? stored.command : ''
  const args = Array.isArray(stored.args) ? stored.args.map(String) : []
  return { command, args }
}

/** Two JSON-like values alike, whatever the order of object keys. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameValue(item, b[i]))
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameValue(a[key], b[key]))
  }
  return a === b
}
