// `doctor()`: the addon's one doctor (the same report as `phone-a-friend doctor --json` and the
// MCP `backends` tool), typed here; its checks' processes stop on the signal.
import { caller } from './calls.js'
import { AbortError } from './errors.js'
import { binding, scope } from './native.js'

/** Whether a CLI is signed in, as far as a cheap offline check tells (no server is asked). */
export interface SignIn {
  /** `unknown`: the check could not tell (a configuration it does not read, a check that failed). */
  state: 'signedIn' | 'notSignedIn' | 'unknown'
  /** How: `CODEX_API_KEY`, `api_key (ANTHROPIC_API_KEY)`, `1 stored credential(s)`, … */
  how?: string
  /** What to do when not signed in (or why the check could not tell). */
  hint?: string
}

export interface BackendReport {
  name: string
  /**
   * A relay to it can be expected to run: a CLI backend when its CLI is on PATH, answers
   * `--version` and is not known to be signed out; ollama when its server answers.
   */
  ready: boolean
  /** Its CLI is on PATH (ollama needs only its server). */
  found: boolean
  /** Where its CLI is. */
  path?: string
  /** The version `<cli> --version` printed. */
  version?: string
  /** The version this package was verified with. */
  verifiedVersion?: string
  /** Said when the installed version is outside the verified range (its minor series, from the verified version up). */
  drift?: string
  /** Said of a backend whose CLI was never run by this package (antigravity): what it was checked against instead. */
  documented?: string
  /** The CLI backends' sign-in state. */
  signIn?: SignIn
  /** What went wrong checking it (a `--version` that failed or did not answer). */
  problem?: string
  /** Where to get it, when it is not found. */
  install?: string
  /** ollama: the server probed, from OLLAMA_HOST. */
  host?: string
  /** ollama: the model a relay would ask for (`model`, else OLLAMA_MODEL); absent when none is set. */
  model?: string
  /** ollama: the models the server has, when it said. */
  models?: string[]
}

export interface DoctorReport {
  backends: BackendReport[]
}

export interface DoctorOptions {
  /** The model a relay to ollama would use; else OLLAMA_MODEL. */
  model?: string
  /** Stops the checks (their processes are killed); the promise then rejects with an `AbortError`. */
  signal?: AbortSignal
}

/** Which built-in backends can answer; at most 30 s (the checks run at once). */
export async function doctor(options: DoctorOptions = {}): Promise<DoctorReport> {
  const { model, signal } = options
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason })
  const run = binding.startDoctor(scope(), caller(), model === '' ? undefined : model)
  const onAbort = (): void => run.cancel()
  signal?.addEventListener('abort', onAbort)
  try {
    const report = JSON.parse(await run.report()) as DoctorReport
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason })
    return report
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}
