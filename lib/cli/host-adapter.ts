// What each host module (host-claude.ts, host-codex.ts, host-gemini.ts, host-opencode.ts) tells
// the installer: where its entry is, what it should hold, and the steps that add or remove it.
import type { Place } from './host-config.js'
import type { McpEntry } from './mcp-entry.js'

/** One thing the installer does: run the host's CLI, or edit one of its config files. */
export type Step =
  | { kind: 'run'; program: string; args: string[] }
  | {
      kind: 'edit'
      path: string
      /** What the edit does, for a dry run and the report: `set <key> = <JSON>`, `remove <key>`. */
      change: string
      apply: () => void
    }

/** Our entry as one scope of a host's config holds it. */
export interface FoundEntry {
  scope: string
  /** The config file it is in. */
  path: string
  /** The entry as stored, in the host's own shape. */
  stored: Record<string, unknown>
  /** The command and arguments it starts. */
  command: string
  args: string[]
}

export interface HostAdapter {
  name: string
  /** The host's CLI, looked for on PATH. */
  program: string
  /** How to install the host, for a missing CLI. */
  install: string
  /** The scopes the host names, the default first. */
  scopes: readonly string[]
  /** Other names a scope is known by (`user` for opencode's `global`). */
  scopeAliases?: Readonly<Record<string, string>>
  /** Why a scope the host has is refused here (codex has no project scope from its CLI). */
  refusedScopes?: Readonly<Record<string, string>>
  /** Why `scope` cannot be installed in this place (gemini's project scope in HOME), else undefined. */
  unusable?(scope: string, place: Place): string | undefined
  /** The config file `scope` lives in. */
  configPath(scope: string, place: Place): string
  /** Our entry in `scope`, or undefined when it has none. */
  find(scope: string, place: Place): FoundEntry | undefined
  /** The entry as this host should hold it for `entry`. */
  wanted(entry: McpEntry): Record<string, unknown>
  /** Whether a stored entry is the wanted one. */
  same(stored: Record<string, unknown>, wanted: Record<string, unknown>): boolean
  /** The steps that make `scope` hold `entry`; `found`: the entry there now, to be replaced. */
  installSteps(scope: string, entry: McpEntry, place: Place, found: FoundEntry | undefined): Step[]
  /** The steps that remove our entry (and only it) from `scope`. */
  uninstallSteps(scope: string, place: Place): Step[]
}
