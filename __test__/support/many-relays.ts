import { execFileSync } from 'node:child_process'
import { resolve } from 'node:path'

const ROOT = resolve(__dirname, '..', '..')

/** How one relay of a batch settled. */
export interface Settled {
  ok: boolean
  answer?: string
  code?: string
  message?: string
}

/**
 * Runs `count` relays at once (each with `options` plus a prompt and `repoPath`) in a fresh Node
 * process started by `launcher` (a command that ends by running its last two arguments, Node and
 * `-e <script>`, under some limit), and returns how each settled.
 */
export function relaysInAChild(
  launcher: string[],
  count: number,
  options: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): Settled[] {
  const script = `
    const { relay } = require(${JSON.stringify(ROOT)})
    const options = ${JSON.stringify(options)}
    const runs = Array.from({ length: ${count} }, () =>
      relay({ prompt: 'hi', repoPath: process.env.PAF_REPO, ...options }).then(
        (answer) => ({ ok: true, answer }),
        (error) => ({ ok: false, code: error.code, message: error.message }),
      ))
    Promise.all(runs).then((results) => process.stdout.write(JSON.stringify(results)))
  `
  const [command, ...args] = launcher
  const out = execFileSync(command as string, [...args, process.execPath, script], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return JSON.parse(out) as Settled[]
}
