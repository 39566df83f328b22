import type { DryRun } from '../index.js'

const ENVELOPE_PLACEHOLDER = '<the envelope above>'

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
      // The envelope is printed once, above.
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

/** The envelope (what the friend would read), then a summary of what would run. */
export function formatDryRun(dryRun: DryRun): string {
  const head =
    dryRun.envelope === null
      ? `(no envelope: ${dryRun.backend} reviews the repository itself, against ${dryRun.base ?? 'its base'})\n`
      : `${dryRun.envelope}\n`
  const size = dryRun.envelope === null ? [] : [`envelope: ${bytes(dryRun.envelopeBytes)} bytes (at most ${bytes(dryRun.maxPromptBytes)})`]
  const summary = [
    '',
    '--- dry run: nothing was sent ---',
    `backend:  ${dryRun.backend} (sandbox ${dryRun.sandbox}${dryRun.model ? `, model ${dryRun.model}` : ''}, timeout ${dryRun.timeoutSeconds}s)`,
    ...(dryRun.base === undefined ? [] : [`base:     ${dryRun.base}`]),
    ...size,
    ...(dryRun.diff === null ? [] : [`diff:     ${dryRun.diff.description}`]),
    ...actionLines(dryRun),
    ...envLines(dryRun),
  ]
  return `${head}${summary.join('\n')}\n`
}
