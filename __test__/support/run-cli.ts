import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'

export const CLI = resolve(__dirname, '..', '..', 'bin', 'phone-a-friend.js')

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Runs the CLI as a real process and collects what it printed. */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string; onSpawn?: (child: ChildProcess) => void } = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: options.env ?? process.env, cwd: options.cwd, stdio: 'pipe' })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', fail)
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }))
    child.stdin.end(options.input ?? '')
    options.onSpawn?.(child)
  })
}
