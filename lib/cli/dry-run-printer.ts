import type { DryRun } from '../index.js'

const ENVELOPE_PLACEHOLDER = '<the envelope>'

function bytes(n: number): string {
  return n.toLocaleString('en-US')
}

/** What would run, on one line each. */
function actionLines(dryRun: DryRun): string[] {
  const { action } = dryRun
  switch (action.kind) {
    case 'command': {
      const installed = action.program === null ? [`not installed: ${action.installHint} (a real relay would fail)`] : []
      return [
        `command:  ${action.commandLine}`,
        ...installed.map((line) => `          ${line}`),
        `cwd:      ${action.cwd}`,
        `stdin:    ${action.stdin === 'envelope' ? 'the envelope' : 'nothing'}`,
      ]
    }
    case 'http': {
      // The envelope is printed once, on its own (--show-envelope).
      const body = JSON.stringify(action.body, (_, value: unknown) => (value === dryRun.envelope ? ENVELOPE_PLACEHOLDER : value))
      return [`request:  ${action.method} ${action.url}`, `body:     ${body}`]
    }
    case 'run':
      return [`calls:    run() of the JavaScript backend ${dryRun.backend}, the envelope as its prompt`]
    case 'review':
      return [`calls:    review() of the JavaScript backend ${dryRun.backend}`]
  }
}

function envLines(dryRun: DryRun): string[] {
  const set = Object.entries(dryRun.env.set).map(([name, value]) => `${name}=${value}`)
  const removed = dryRun.env.removed.map((name) => `${name} (removed)`)
  const changes = [...set, ...removed]
  return changes.length === 0 ? [] : [`env:      ${changes.join('\n          ')}`]
}

/** A fitted diff: how much, then each file not sent whole (the coverage in --json lists all). */
function coverageLines({ coverage }: DryRun): string[] {
  if (coverage === null) return []
  const partial = coverage.filter((file) => file.status !== 'whole')
  const left = coverage.reduce((sum, file) => sum + file.bytes - file.includedBytes, 0)
  return [
    `fitted:   ${coverage.length - partial.length} of ${coverage.length} changed files whole, ${bytes(left)} bytes of diff left out (--no-fit refuses instead)`,
    ...partial.map((file) => `  ${file.status}: ${file.path} (${bytes(file.bytes)} bytes${file.status === 'cut' ? `, ${bytes(file.includedBytes)} sent` : ''}; ${file.reason ?? ''})`),
  ]
}

/**
 * What would run, summary first: a newcomer's terminal shows its last lines, so the envelope (what
 * the friend would read, often hundreds of lines of diff) comes after it, and only on request.
 */
export function formatDryRun(dryRun: DryRun, { showEnvelope = false }: { showEnvelope?: boolean } = {}): string {
  const envelope =
    dryRun.envelope === null
      ? [`envelope: none: ${dryRun.backend} reviews the repository itself, against ${dryRun.base ?? 'its base'}`]
      : [`envelope: ${bytes(dryRun.envelopeBytes)} bytes (at most ${bytes(dryRun.maxPromptBytes)})${showEnvelope ? ', below' : '; --show-envelope prints it'}`]
  const summary = [
    '--- dry run: nothing was sent ---',
    `backend:  ${dryRun.backend} (sandbox ${dryRun.sandbox}${dryRun.model ? `, model ${dryRun.model}` : ''}, timeout ${dryRun.timeoutSeconds}s)`,
    ...(dryRun.base === undefined ? [] : [`base:     ${dryRun.base}`]),
    ...envelope,
    ...(dryRun.diff === null ? [] : [`diff:     ${dryRun.diff.description}`]),
    ...coverageLines(dryRun),
    ...actionLines(dryRun),
    ...envLines(dryRun),
  ]
  const tail = showEnvelope && dryRun.envelope !== null ? ['--- envelope ---', dryRun.envelope] : []
  return `${[...summary, ...tail].join('\n')}\n`
}
