// doctor's "MCP hosts" part (docs/CLI.md, "doctor"): for each agent host with a config file,
// whether phone-a-friend is installed there, in which scope, and whether the command it starts
// still resolves (a moved global install, an emptied npx cache). Config files are read, no host
// CLI is run: theirs connect to every server (docs/HOSTS.md).
import { existsSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import type { HostAdapter } from './host-adapter.js'
import type { Place } from './host-config.js'
import { commandLine, shownCommand } from './host-process.js'
import { HOSTS } from './hosts.js'
import { shellLine } from './printable.js'

export interface HostInstallReport {
  scope: string
  /** The config file holding the entry. */
  config: string
  /** The command and arguments the entry starts. */
  command: string[]
  /** Whether the command is found and every file it names exists. */
  resolves: boolean
  /** Why it does not resolve. */
  problem?: string
}

export interface HostReport {
  name: string
  /** One per scope holding phone-a-friend; empty when none does. */
  installs: HostInstallReport[]
  /** A config file that could not be read. */
  problem?: string
}

/** Why `command args` would not start now, else undefined. */
function unresolved(command: string, args: string[], env: NodeJS.ProcessEnv): string | undefined {
  let found: string[] | undefined
  try {
    found = commandLine(command, env)
  } catch (error) {
    return (error as Error).message
  }
  if (found === undefined) return isAbsolute(command) ? `${command} is not an executable file` : `${command} is not on PATH`
  const missing = args.find((arg) => isAbsolute(arg) && !existsSync(arg))
  return missing === undefined ? undefined : `${missing} does not exist (moved or uninstalled?)`
}

function hostReport(host: HostAdapter, place: Place): HostReport | undefined {
  const scopes = host.scopes.filter((scope) => existsSync(host.configPath(scope, place)))
  if (scopes.length === 0) return undefined
  const installs: HostInstallReport[] = []
  try {
    for (const scope of scopes) {
      const found = host.find(scope, place)
      if (found === undefined) continue
      const problem = unresolved(found.command, found.args, place.env)
      installs.push({ scope, config: found.path, command: shownCommand([found.command, ...found.args]), resolves: problem === undefined, ...(problem === undefined ? {} : { problem }) })
    }
  } catch (error) {
    return { name: host.name, installs, problem: (error as Error).message }
  }
  return { name: host.name, installs }
}

/** The hosts that have a config file, in the order of HOSTS. */
export function doctorHosts(place: Place): HostReport[] {
  return HOSTS.flatMap((host) => hostReport(host, place) ?? [])
}

/** The hosts part of doctor's text (made printable by the caller). */
export function formatHosts(hosts: HostReport[]): string {
  if (hosts.length === 0) return ''
  const width = Math.max(...hosts.map((host) => host.name.length))
  const lines = hosts.flatMap((host) => {
    const name = host.name.padEnd(width)
    const again = `run \`phone-a-friend install ${host.name}\` again`
    const installed = host.installs.map((install) =>
      install.resolves
        ? `✓ ${name} phone-a-friend installed (${install.scope} scope): ${shellLine(install.command)}`
        : `✗ ${name} phone-a-friend installed (${install.scope} scope), but ${install.problem}: ${again}${install.scope === 'user' || install.scope === 'global' ? '' : ` --scope ${install.scope}`}`,
    )
    if (host.problem !== undefined) installed.push(`✗ ${name} ${host.problem}`)
    return installed.length > 0 ? installed : [`- ${name} phone-a-friend not installed: \`phone-a-friend install ${host.name}\``]
  })
  return `MCP hosts:\n${lines.join('\n')}\n`
}
