import { spawn } from 'node:child_process'
import { binding } from '../internal/native.js'

/** How long the Ollama server has to answer `GET /api/tags`. */
const PROBE_MS = 3_000
/** At most this many of the server's models are named in the text report. */
const MODELS_SHOWN = 5

export interface BackendReport {
  name: string
  /** A relay to it can run: a CLI backend when its CLI is on PATH, ollama when its server answers. */
  ready: boolean
  /** Its CLI is on PATH (for ollama this is not needed: the relay talks to the server). */
  found: boolean
  /** The last line of `<cli> --version` (the CLI backends). */
  version?: string
  /** Where to get it, when it is not ready. */
  install?: string
  /** ollama: the server probed, from OLLAMA_HOST. */
  host?: string
  /** ollama: the model a relay would ask for (`--model`, else OLLAMA_MODEL); absent when none is set. */
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
  /** Cuts the checks short (the CLI's Ctrl-C). */
  signal?: AbortSignal
}

/** The last line `<cli> --version` prints; stdin closed so no CLI waits on it; killed on abort. */
function versionOf(cli: string, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(cli, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000, signal })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.on('error', () => resolve(undefined))
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').at(-1)?.trim()
      resolve(code === 0 && line ? line : undefined)
    })
  })
}

/** Whether an Ollama server answers `GET <host>/api/tags`, and the models it lists. */
async function probeOllama(host: string, signal: AbortSignal): Promise<{ answers: boolean; models?: string[] }> {
  // AbortSignal.any() is newer than Node 20.0.
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), PROBE_MS)
  const onAbort = (): void => controller.abort()
  signal.addEventListener('abort', onAbort)
  try {
    const response = await fetch(`${host}/api/tags`, { signal: controller.signal })
    if (!response.ok) return { answers: false }
    const body = (await response.json().catch(() => undefined)) as { models?: unknown } | undefined
    const models = Array.isArray(body?.models)
      ? body.models.map((model: unknown) => (model as { name?: unknown } | null)?.name).filter((name): name is string => typeof name === 'string')
      : undefined
    return { answers: true, models }
  } catch {
    return { answers: false }
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

/**
 * What is ready. codex, gemini, claude and opencode need their CLI on PATH. ollama needs its
 * server to answer at OLLAMA_HOST, whether or not the `ollama` binary is installed here (the
 * relay only talks HTTP).
 */
export async function doctor(options: DoctorOptions = {}): Promise<DoctorReport> {
  const signal = options.signal ?? new AbortController().signal
  const installed = binding.checkBackends() as unknown as Record<string, boolean>
  const host = binding.ollamaBaseUrl(process.env.OLLAMA_HOST)
  const model = nonEmpty(options.model) ?? nonEmpty(process.env.OLLAMA_MODEL)
  // The addon's table: its order (the CLIs, then ollama) and its install hints.
  const reports = binding.builtinBackends().map(async ({ name, reach, install }): Promise<BackendReport> => {
    const found = Boolean(installed[name])
    if (reach === 'cli') {
      if (!found) return { name, ready: false, found, install }
      return { name, ready: true, found, version: await versionOf(name, signal) }
    }
    const { answers, models } = await probeOllama(host, signal)
    return {
      name,
      ready: answers,
      found,
      ...(answers || found ? {} : { install }),
      host,
      ...(model === undefined ? {} : { model }),
      ...(models === undefined ? {} : { models }),
    }
  })
  return { backends: await Promise.all(reports) }
}

/** `llama3` is the tag `llama3:latest`. */
function hasModel(models: string[], model: string): boolean {
  return models.some((name) => name === model || name === `${model}:latest`)
}

/** `width`: the longest backend name, so every name gets one column. */
function formatOllama(backend: BackendReport, width: number): string[] {
  const label = `${backend.ready ? '✓' : '✗'} ${backend.name.padEnd(width)} `
  const indent = ' '.repeat(width + 3)
  const elsewhere = 'set OLLAMA_HOST to point elsewhere'
  if (!backend.ready) {
    const start = backend.found ? 'start it with `ollama serve`' : `install Ollama (${backend.install}) and run \`ollama serve\``
    return [`${label}server not reachable at ${backend.host}: ${start}, or ${elsewhere}`]
  }
  const lines = [`${label}server answers at ${backend.host} (${elsewhere})`]
  const { model, models } = backend
  const listed = models && models.length > 0 ? `${models.slice(0, MODELS_SHOWN).join(', ')}${models.length > MODELS_SHOWN ? ', …' : ''}` : undefined
  if (model === undefined) {
    lines.push(`${indent}no model set: Ollama refuses a chat without one; pass --model <name> or set OLLAMA_MODEL${listed ? ` (this server has ${listed})` : ''}`)
  } else if (models && !hasModel(models, model)) {
    lines.push(`${indent}model ${model} is not on this server: \`ollama pull ${model}\`${listed ? ` (it has ${listed})` : ''}`)
  } else {
    lines.push(`${indent}model ${model}`)
  }
  return lines
}

export function formatDoctor(report: DoctorReport): string {
  const width = Math.max(0, ...report.backends.map((backend) => backend.name.length))
  const lines = report.backends.flatMap((backend) => {
    if (backend.name === 'ollama') return formatOllama(backend, width)
    if (!backend.found) return [`✗ ${backend.name.padEnd(width)} not found. Install it: ${backend.install}`]
    return [`✓ ${backend.name.padEnd(width)} ${backend.version ?? '(version unknown)'}`]
  })
  return `${lines.join('\n')}\n`
}
