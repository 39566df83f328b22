import { readFileSync, readdirSync } from 'node:fs'

/** Every process id on the machine. */
export function pids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
}

function stat(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return text.slice(text.lastIndexOf(')') + 2).split(' ')
  } catch {
    return undefined
  }
}

/** Alive and not a zombie waiting for init to reap it. */
export function isAlive(pid: number): boolean {
  const fields = stat(pid)
  return fields !== undefined && fields[0] !== 'Z'
}

/** The process's command name (`comm`), or '' once it has gone. */
export function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return ''
  }
}

/** Children of `pid`, zombies included (a zombie child is one its parent failed to reap). */
export function childrenOf(pid: number): number[] {
  return pids().filter((child) => stat(child)?.[1] === String(pid))
}

/** Live processes other than this one whose environment has an entry containing `needle`. */
export function processesWithEnv(needle: string): number[] {
  return pids().filter((pid) => {
    if (pid === process.pid) return false
    try {
      return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').some((entry) => entry.includes(needle)) && isAlive(pid)
    } catch {
      return false
    }
  })
}

/**
 * Whether this process runs as root. Tests that only root can run (CI runs the suites as root) call
 * it to skip; when they are skipped it says so on stderr, so a run as another user does not pass them
 * over in silence.
 */
export function runsAsRoot(skipped: string): boolean {
  const root = process.getuid?.() === 0
  if (!root) console.warn(`[not root: skipped] ${skipped}`)
  return root
}
