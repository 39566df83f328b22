import type { NativeCoverage, NativeDryRun } from '../../binding.js'

/** What a dry run would start: a program, an HTTP request, or a JavaScript backend's method. */
export type DryRunAction =
  | {
      kind: 'command'
      /** The command's name, e.g. `codex`. */
      name: string
      /** Where it was found on the relay environment's `PATH`; `null` when it is not installed. */
      program: string | null
      /** How to install it (a real relay fails with `ERR_BACKEND_UNAVAILABLE` while it is missing). */
      installHint: string
      /** Its arguments, exactly (never through a shell). */
      args: string[]
      /** The program and its arguments quoted for a POSIX shell, to read or paste. */
      commandLine: string
      /** Its working directory. */
      cwd: string
      /** `'envelope'`: the envelope goes on its stdin; `'empty'`: nothing does. */
      stdin: 'envelope' | 'empty'
    }
  | {
      kind: 'http'
      method: string
      url: string
      /** The request's JSON body, parsed. */
      body: unknown
    }
  /** A JavaScript backend's `run()` would be called with the envelope as `prompt`. */
  | { kind: 'run' }
  /** A JavaScript backend's `review()` would be called. */
  | { kind: 'review' }

/**
 * Which diff an envelope holds for `includeDiff`: the uncommitted changes to tracked files (`git diff
 * HEAD`), else the last commit's (`git diff HEAD~1 HEAD`), else none (git failed: not a repository,
 * no commit yet, no git; or nothing to show). A relay that got another than the uncommitted changes
 * says so as a warning (`onWarning`).
 */
export interface DryRunDiff {
  source: 'uncommitted' | 'last-commit' | 'none'
  /** Which diff it is and, unless it is the uncommitted changes, why. */
  description: string
}

/**
 * A changed file of a diff fitted to its budget (`fit`): in the envelope whole, cut at a hunk
 * boundary, or left out, with why and how large (docs/CONTRACT.md §6a).
 */
export interface DryRunCoverage {
  path: string
  status: 'whole' | 'cut' | 'left-out'
  /** Its section of the diff, in bytes. */
  bytes: number
  /** How much of that the envelope holds. */
  includedBytes: number
  /** Why it is cut or left out (for a cut, which hunks are in); `null` when whole. */
  reason: string | null
}

/** What `relay({ dryRun: true })` and `reviewRelay({ dryRun: true })` resolve with. */
export interface DryRun {
  dryRun: true
  backend: string
  /** The repository, absolute. */
  repoPath: string
  sandbox: string
  model: string | null
  timeoutSeconds: number
  /** The base a review compares against; absent for `relay()`. */
  base?: string
  /** The exact prompt the backend would get; `null` for a native review, which reads the repository itself. */
  envelope: string | null
  /** The envelope's size in UTF-8 bytes (0 without one). */
  envelopeBytes: number
  /** The largest envelope this call sends: `MAX_PROMPT_BYTES`, `maxPromptBytes`, or (with `fit`) what the model's context window holds; a larger one is refused with `ERR_TOO_LARGE`. */
  maxPromptBytes: number
  action: DryRunAction
  /**
   * How the backend's environment would differ from yours: variables set (the value of one
   * whose name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH or COOKIE is
   * shown as `********`) and removed. Empty for an HTTP backend, which gets no environment.
   */
  env: { set: Record<string, string>; removed: string[] }
  /** Which diff the envelope holds, with `includeDiff`; `null` without it (and for a review). */
  diff: DryRunDiff | null
  /** With `fit`, how a diff too large to send whole was fitted, every changed file in git's order; `null` when it was whole (or there is none). */
  coverage: DryRunCoverage[] | null
}

function action(native: NativeDryRun): DryRunAction {
  const { command, request } = native
  if (command) {
    return {
      kind: 'command',
      name: command.name,
      program: command.program ?? null,
      installHint: command.installHint,
      args: command.args,
      commandLine: command.commandLine,
      cwd: command.cwd,
      stdin: command.envelopeOnStdin ? 'envelope' : 'empty',
    }
  }
  if (request) return { kind: 'http', method: request.method, url: request.url, body: JSON.parse(request.body) as unknown }
  return { kind: native.kind === 'review' ? 'review' : 'run' }
}

export function toDryRun(native: NativeDryRun): DryRun {
  const envelope = native.envelope ?? null
  return {
    dryRun: true,
    backend: native.backend,
    repoPath: native.repoPath,
    sandbox: native.sandbox,
    model: native.model ?? null,
    timeoutSeconds: native.timeoutSeconds,
    ...(native.base === undefined || native.base === null ? {} : { base: native.base }),
    envelope,
    envelopeBytes: envelope === null ? 0 : Buffer.byteLength(envelope, 'utf8'),
    maxPromptBytes: native.maxPromptBytes,
    action: action(native),
    env: { set: Object.fromEntries(native.envSet.map(([name, value]) => [name, value])), removed: native.envRemoved },
    diff: native.diff ? { source: native.diff.source as DryRunDiff['source'], description: native.diff.description } : null,
    coverage: toCoverage(native.coverage),
  }
}

/** A fitted diff's coverage as the API gives it (a dry run's, an answer's); `null` for a diff sent whole. */
export function toCoverage(native: NativeCoverage[] | null | undefined): DryRunCoverage[] | null {
  return native ? native.map((file) => ({ path: file.path, status: file.status, bytes: file.bytes, includedBytes: file.includedBytes, reason: file.reason ?? null })) : null
}
