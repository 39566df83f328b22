// `phone-a-friend install <host>` and `uninstall <host>` (docs/CLI.md, "install and uninstall"):
// register this package's MCP server with an agent host through the host's own CLI or its config
// file (docs/HOSTS.md), idempotently: the host's entry is read first, and only a change is made.
import type { FoundEntry, HostAdapter, Step } from './host-adapter.js'
import type { Place } from './host-config.js'
import { HostError } from './host-error.js'
import { commandLine, runHost, shownCommand } from './host-process.js'
import { hostNamed, scopeOf } from './hosts.js'
import { type McpEntry, mcpEntry, type Origin, SERVER_NAME, TOOL_TIMEOUT_MS } from './mcp-entry.js'
import { printable, printableJson, shellLine } from './printable.js'
import { UsageError } from './usage-error.js'

export interface InstallRequest {
  action: 'install' | 'uninstall'
  /** The positional arguments after the command: the host. */
  args: string[]
  scope?: string
  dryRun: boolean
  json: boolean
  origin: Origin
  place: Place
}

type Outcome = 'installed' | 'replaced' | 'unchanged' | 'removed' | 'absent'

/** A step as `--dry-run` and `--json` show it. */
function shownStep(step: Step): { run: string[] } | { edit: string; change: string } {
  return step.kind === 'run' ? { run: [step.program, ...step.args] } : { edit: step.path, change: step.change }
}

function stepLine(step: Step): string {
  return step.kind === 'run' ? `run:   ${shellLine([step.program, ...step.args])}` : `edit:  ${printable(step.path)}: ${printable(step.change)}`
}

/** Where, for a message: `claude (user scope, /home/me/.claude.json)`. */
function where(host: HostAdapter, scope: string, path: string): string {
  return `${host.name} (${scope} scope, ${printable(path)})`
}

function viaLine(entry: McpEntry, origin: Origin): string {
  const timeout = `the host's tool-call time-out set to ${TOOL_TIMEOUT_MS / 1000} s`
  return entry.via === 'npx'
    ? `It starts @phone-a-friend/relay@${printable(origin.version)} through npx: this copy runs from npx's cache, which npx may empty; ${timeout}.`
    : `It starts this installed copy (${printable(origin.version)}) by absolute path: reinstall the host entry if you move or remove it; ${timeout}.`
}

/** Runs the steps in order, each host CLI found on PATH before any step runs. */
async function runSteps(host: HostAdapter, steps: Step[], place: Place): Promise<void> {
  const commands = new Map<string, string[]>()
  for (const step of steps) {
    if (step.kind !== 'run' || commands.has(step.program)) continue
    const command = commandLine(step.program, place.env)
    if (command === undefined) throw new HostError(`${step.program} (${host.name}) is not on PATH`, 'ERR_HOST_NOT_FOUND', `Install it: ${host.install}`)
    commands.set(step.program, command)
  }
  for (const step of steps) {
    if (step.kind === 'edit') step.apply()
    else await runHost({ command: commands.get(step.program) as string[], args: step.args, cwd: place.cwd, env: place.env, host: step.program })
  }
}

/** What install and uninstall decide, before anything is done. */
function plan(request: InstallRequest, host: HostAdapter, scope: string, entry: McpEntry): { outcome: Outcome; found: FoundEntry | undefined; steps: Step[] } {
  const found = host.find(scope, request.place)
  if (request.action === 'uninstall') return found === undefined ? { outcome: 'absent', found, steps: [] } : { outcome: 'removed', found, steps: host.uninstallSteps(scope, request.place) }
  if (found !== undefined && host.same(found.stored, host.wanted(entry))) return { outcome: 'unchanged', found, steps: [] }
  return { outcome: found === undefined ? 'installed' : 'replaced', found, steps: host.installSteps(scope, entry, request.place, found) }
}

/** After the steps: the config must say what they were to make it say. */
function verify(request: InstallRequest, host: HostAdapter, scope: string, entry: McpEntry): void {
  const found = host.find(scope, request.place)
  const path = host.configPath(scope, request.place)
  if (request.action === 'install' && (found === undefined || !host.same(found.stored, host.wanted(entry)))) {
    throw new HostError(`${host.name} reported success, but ${printable(path)} does not hold the entry installed`, 'ERR_HOST_FAILED', `Run it again with --dry-run to see the steps, and try them by hand`)
  }
  if (request.action === 'uninstall' && found !== undefined) {
    throw new HostError(`${host.name} reported success, but ${printable(path)} still holds ${SERVER_NAME}`, 'ERR_HOST_FAILED')
  }
}

function report(outcome: Outcome, host: HostAdapter, scope: string, path: string, found: FoundEntry | undefined, entry: McpEntry, origin: Origin): string {
  const at = where(host, scope, path)
  const command = shellLine([entry.command, ...entry.args])
  switch (outcome) {
    case 'unchanged':
      return `${SERVER_NAME} is already installed in ${at}: nothing changed\n`
    case 'absent':
      return `${SERVER_NAME} is not installed in ${at}: nothing to remove\n`
    case 'removed':
      return `Removed ${SERVER_NAME} from ${at}\n`
    case 'installed':
      return `Installed ${SERVER_NAME} in ${at}: ${command}\n${viaLine(entry, origin)}\n`
    case 'replaced':
      return `Replaced ${SERVER_NAME} in ${at}: it ran ${shellLine(shownCommand([found?.command ?? '', ...(found?.args ?? [])]))}, now ${command}\n${viaLine(entry, origin)}\n`
  }
}

/** `install` or `uninstall`: the report on stdout; exit 0, or a HostError thrown for the caller to print. */
export async function runInstall(request: InstallRequest): Promise<number> {
  const [name, ...rest] = request.args
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${printable(rest[0].slice(0, 40))}`)
  const host = hostNamed(name, request.action)
  const scope = scopeOf(host, request.scope)
  const unusable = host.unusable?.(scope, request.place)
  if (unusable !== undefined) throw new UsageError(`${host.name} --scope ${scope}: ${unusable}`)
  const entry = mcpEntry(request.origin)
  const { outcome, found, steps } = plan(request, host, scope, entry)
  const path = host.configPath(scope, request.place)
  if (!request.dryRun) {
    await runSteps(host, steps, request.place)
    if (steps.length > 0) verify(request, host, scope, entry)
  }
  if (request.json) {
    const shown = { ok: true, host: host.name, scope, config: path, action: outcome, dryRun: request.dryRun, command: [entry.command, ...entry.args], via: entry.via, steps: steps.map(shownStep) }
    process.stdout.write(`${printableJson(shown)}\n`)
  } else if (request.dryRun && steps.length > 0) {
    const would = { installed: 'Would install', replaced: 'Would replace', removed: 'Would remove' }[outcome as 'installed' | 'replaced' | 'removed']
    const what = request.action === 'install' ? `: ${shellLine([entry.command, ...entry.args])}` : ''
    process.stdout.write(`--- dry run: nothing was changed ---\n${would} ${SERVER_NAME} ${request.action === 'install' ? 'in' : 'from'} ${where(host, scope, path)}${what}\n${steps.map(stepLine).join('\n')}\n`)
  } else {
    process.stdout.write(report(outcome, host, scope, path, found, entry, request.origin))
  }
  return 0
}
