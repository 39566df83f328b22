import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A stand-in CLI (`fake-cli.sh`, also used by the benchmark): it logs its arguments, working
 * directory, depth variable and stdin to `$FAKE_LOG`, then behaves as `$FAKE_MODE` says.
 */
const SCRIPT = readFileSync(join(__dirname, 'fake-cli.sh'), 'utf8')

export type FakeMode =
  | 'answer'
  | 'stdout-only'
  /** `$FAKE_ANSWER` on stdout, as plain text. */
  | 'stdout-env-answer'
  | 'empty'
  /** A folder where codex's answer file should be, and an answer on stdout. */
  | 'answer-path-is-a-folder'
  | 'fail-stderr'
  | 'fail-stdout'
  | 'fail-silent'
  /** Writes part of an answer to the answer file, then exits 3 without a word. */
  | 'fail-silent-with-answer'
  /** Records the modes of the answer folder and file in `perms`. */
  | 'report-perms'
  | 'slow'
  | 'hang-with-grandchild'
  /** Like hang-with-grandchild, but the grandchild leads a new session (`setsid`), out of the group. */
  | 'hang-with-new-session'
  /** gemini's stream-json: one assistant delta, then hangs with a grandchild in a new session. */
  | 'events-then-hang'
  | 'flood'
  /** 8,000,000 bytes of answer on stdout. */
  | 'big-answer'
  /**
   * JSON events on stdout, one a line, as the real CLI prints them (`FAKE_GAP` seconds apart, if
   * set). gemini: three assistant deltas (`'  Hel'`, `'lo, wörld 😀'`, `'!\n'`) and a line
   * that is not an event; codex: two agent messages (`'Looking.'`, `'  All good 😀\n'`) around
   * a command, the last one also in the answer file; claude: a `result` event (`'  All good 😀\n'`);
   * opencode: one text part (`'All good 😀'`). Each names its session as `sessionId()` says.
   */
  | 'events'
  /** gemini's stream-json: 64 assistant deltas of 64 KiB (4 MiB), then `finished` in the log. */
  | 'event-flood'
  /** gemini's stream-json cut short: some text, exit 0, no `result` event. */
  | 'events-no-result'
  /** `events`, but codex writes no answer file. */
  | 'events-no-file'
  /** Exit 1, stderr empty, the failure in events: gemini a failed `result`, codex `turn.failed`. */
  | 'events-fail'

/** A folder of fake CLIs put first on PATH, and the log folder they write to. */
export class FakeClis {
  readonly bin = mkdtempSync(join(tmpdir(), 'paf-bin-'))
  readonly log = mkdtempSync(join(tmpdir(), 'paf-log-'))
  private readonly saved = { PATH: process.env.PATH, FAKE_LOG: process.env.FAKE_LOG, FAKE_MODE: process.env.FAKE_MODE, FAKE_GAP: process.env.FAKE_GAP, FAKE_SESSION_ID: process.env.FAKE_SESSION_ID }

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

  /** Seconds between the events of the `events*` modes (`sleep` syntax); none by default. */
  gap(seconds: number): this {
    process.env.FAKE_GAP = String(seconds)
    return this
  }

  /** The session id the `events` modes report (codex's thread, gemini's, claude's, opencode's). */
  sessionId(id: string): this {
    process.env.FAKE_SESSION_ID = id
    return this
  }

  args(): string[] {
    return readFileSync(join(this.log, 'args'), 'utf8').split('\n').slice(0, -1)
  }

  read(name: 'stdin' | 'cwd' | 'depth' | 'answer-file' | 'grandchild' | 'perms' | 'finished'): string {
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
