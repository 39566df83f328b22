import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A stand-in CLI written as a POSIX shell script: it logs its arguments, working directory,
 * depth variable and stdin to `$FAKE_LOG`, then behaves as `$FAKE_MODE` says.
 */
const SCRIPT = `#!/bin/sh
log="$FAKE_LOG"
: > "$log/args"
for a in "$@"; do printf '%s\\n' "$a" >> "$log/args"; done
pwd > "$log/cwd"
printf '%s' "$PHONE_A_FRIEND_DEPTH" > "$log/depth"
out=""; prev=""
for a in "$@"; do if [ "$prev" = "--output-last-message" ]; then out="$a"; fi; prev="$a"; done
printf '%s' "$out" > "$log/answer-file"
cat > "$log/stdin"
case "$FAKE_MODE" in
  answer) if [ -n "$out" ]; then printf '  file answer\\n' > "$out"; fi; printf 'stdout answer\\n' ;;
  stdout-only) printf '  stdout answer \\n' ;;
  empty) ;;
  fail-stderr) echo "stdout detail"; echo "boom on stderr" >&2; exit 3 ;;
  fail-stdout) echo "stdout detail"; exit 3 ;;
  fail-silent) exit 3 ;;
  slow) sleep "\${FAKE_SLEEP:-1}"; if [ -n "$out" ]; then printf 'slow answer' > "$out"; fi; printf 'slow answer' ;;
  hang-with-grandchild) sleep 30 & echo $! > "$log/grandchild"; sleep 30 ;;
  flood) head -c 209715200 /dev/zero | tr '\\0' a ;;
  *) echo "unknown FAKE_MODE $FAKE_MODE" >&2; exit 99 ;;
esac
`

export type FakeMode =
  | 'answer'
  | 'stdout-only'
  | 'empty'
  | 'fail-stderr'
  | 'fail-stdout'
  | 'fail-silent'
  | 'slow'
  | 'hang-with-grandchild'
  | 'flood'

/** A folder of fake CLIs put first on PATH, and the log folder they write to. */
export class FakeClis {
  readonly bin = mkdtempSync(join(tmpdir(), 'paf-bin-'))
  readonly log = mkdtempSync(join(tmpdir(), 'paf-log-'))
  private readonly saved = { PATH: process.env.PATH, FAKE_LOG: process.env.FAKE_LOG, FAKE_MODE: process.env.FAKE_MODE }

  constructor(names: string[] = ['codex', 'gemini']) {
    for (const name of names) {
      const file = join(this.bin, name)
      writeFileSync(file, SCRIPT)
      chmodSync(file, 0o755)
    }
    process.env.PATH = `${this.bin}:${process.env.PATH ?? ''}`
    process.env.FAKE_LOG = this.log
  }

  mode(mode: FakeMode): this {
    process.env.FAKE_MODE = mode
    return this
  }

  args(): string[] {
    return readFileSync(join(this.log, 'args'), 'utf8').split('\n').slice(0, -1)
  }

  read(name: 'stdin' | 'cwd' | 'depth' | 'answer-file' | 'grandchild'): string {
    return readFileSync(join(this.log, name), 'utf8')
  }

  restore(): void {
    for (const [key, value] of Object.entries(this.saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
    rmSync(this.bin, { recursive: true, force: true })
    rmSync(this.log, { recursive: true, force: true })
  }
}

/** Alive and not a zombie waiting for init to reap it. */
export function isAlive(pid: number): boolean {
  const statPath = `/proc/${pid}/stat`
  if (!existsSync(statPath)) return false
  try {
    const stat = readFileSync(statPath, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}
