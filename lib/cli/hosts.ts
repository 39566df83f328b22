// The agent hosts `install`, `uninstall` and `doctor` know, and their scopes (docs/HOSTS.md).
import type { HostAdapter } from './host-adapter.js'
import { claude } from './host-claude.js'
import { codex } from './host-codex.js'
import { gemini } from './host-gemini.js'
import { opencode } from './host-opencode.js'
import { printable } from './printable.js'
import { closest } from './suggest.js'
import { UsageError } from './usage-error.js'

export const HOSTS: readonly HostAdapter[] = [claude, codex, gemini, opencode]

export const HOST_NAMES = HOSTS.map((host) => host.name)

/** The host named `name`, or a usage error naming the one most likely meant. */
export function hostNamed(name: string | undefined, command: string): HostAdapter {
  if (name === undefined) throw new UsageError(`${command} needs a host: ${HOST_NAMES.join(', ')}`)
  const host = HOSTS.find((candidate) => candidate.name === name)
  if (host !== undefined) return host
  const meant = closest(name, HOST_NAMES)
  const shown = printable(name.length > 40 ? `${name.slice(0, 40)}…` : name)
  throw new UsageError(`unknown host: ${shown} (${HOST_NAMES.join(', ')})${meant ? `. Did you mean ${meant}?` : ''}`)
}

/** `--scope` as the host names it (its default when not given), or a usage error saying which it has. */
export function scopeOf(host: HostAdapter, given: string | undefined): string {
  if (given === undefined) return host.scopes[0]
  const scope = host.scopeAliases?.[given] ?? given
  if (host.scopes.includes(scope)) return scope
  const refused = host.refusedScopes?.[scope]
  if (refused !== undefined) throw new UsageError(`${host.name} has no ${scope} scope here: ${refused}`)
  const meant = closest(given, host.scopes)
  throw new UsageError(`${host.name} has no scope ${printable(given.length > 40 ? `${given.slice(0, 40)}…` : given)}: its scopes are ${host.scopes.join(', ')}${meant ? `. Did you mean ${meant}?` : ''}`)
}
