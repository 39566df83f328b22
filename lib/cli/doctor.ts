// The text `phone-a-friend doctor` prints; the report itself is the addon's one doctor
// (`doctor()`, the same as `doctor --json` and the MCP `backends` tool).
import type { BackendReport, DoctorReport } from '../internal/doctor.js'

export type { BackendReport, DoctorReport } from '../internal/doctor.js'

/** At most this many of the server's models are named in the text report. */
const MODELS_SHOWN = 5

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

/** A CLI backend: `✓` ready and signed in, `?` ready as far as can be seen (sign-in unknown), `✗` not. */
function formatCli(backend: BackendReport, width: number): string[] {
  const indent = ' '.repeat(width + 3)
  const documented = backend.documented === undefined ? [] : [`${indent}${backend.documented}`]
  return [...formatCliState(backend, width, indent), ...documented]
}

function formatCliState(backend: BackendReport, width: number, indent: string): string[] {
  const name = backend.name.padEnd(width)
  if (!backend.found) return [`✗ ${name} not found. Install it: ${backend.install}`]
  const version = backend.version ?? '(version unknown)'
  const signIn = backend.signIn
  let line: string
  if (backend.problem !== undefined) line = `✗ ${name} installed, but ${backend.problem}`
  else if (signIn?.state === 'notSignedIn') line = `✗ ${name} ${version}, installed, not signed in: ${signIn.hint}`
  else if (signIn?.state === 'unknown') line = `? ${name} ${version}, sign-in not known: ${signIn.hint}`
  else line = `✓ ${name} ${version}${signIn?.how ? `, signed in (${signIn.how})` : ''}`
  return backend.drift === undefined ? [line] : [line, `${indent}${backend.drift}`]
}

export function formatDoctor(report: DoctorReport): string {
  const width = Math.max(0, ...report.backends.map((backend) => backend.name.length))
  const lines = report.backends.flatMap((backend) => (backend.name === 'ollama' ? formatOllama(backend, width) : formatCli(backend, width)))
  return `${lines.join('\n')}\n`
}
