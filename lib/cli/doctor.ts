import { spawn } from 'node:child_process'
import { binding } from '../internal/native.js'

const INSTALL: Record<string, string> = {
  codex: 'npm install -g @openai/codex',
  gemini: 'npm install -g @google/gemini-cli',
  ollama: 'https://ollama.com/download',
}

export interface BackendReport {
  name: string
  found: boolean
  version?: string
  install?: string
}

export interface DoctorReport {
  backends: BackendReport[]
  ollamaServer: { url: string; reachable: boolean }
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

async function serverAnswers(url: string, signal: AbortSignal): Promise<boolean> {
  // AbortSignal.any() is newer than Node 20.0.
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), 3_000)
  const onAbort = (): void => controller.abort()
  signal.addEventListener('abort', onAbort)
  try {
    const response = await fetch(`${url}/api/tags`, { signal: controller.signal })
    return response.ok
  } catch {
    return false
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}

/** What is installed and reachable; `signal` cuts it short (the CLI's Ctrl-C). */
export async function doctor(signal: AbortSignal = new AbortController().signal): Promise<DoctorReport> {
  const installed = binding.checkBackends() as unknown as Record<string, boolean>
  const url = binding.ollamaBaseUrl(process.env.OLLAMA_HOST)
  const [backends, reachable] = await Promise.all([
    Promise.all(
      Object.keys(INSTALL).map(async (name): Promise<BackendReport> => {
        if (!installed[name]) return { name, found: false, install: INSTALL[name] }
        return { name, found: true, version: await versionOf(name, signal) }
      }),
    ),
    serverAnswers(url, signal),
  ])
  return { backends, ollamaServer: { url, reachable } }
}

export function formatDoctor(report: DoctorReport): string {
  const lines = report.backends.map((backend) => {
    if (!backend.found) return `✗ ${backend.name.padEnd(7)} not found. Install it: ${backend.install}`
    return `✓ ${backend.name.padEnd(7)} ${backend.version ?? '(version unknown)'}`
  })
  const { url, reachable } = report.ollamaServer
  lines.push(reachable ? `✓ ollama server answers at ${url}` : `✗ ollama server not reachable at ${url} (set OLLAMA_HOST, or start \`ollama serve\`)`)
  return `${lines.join('\n')}\n`
}
