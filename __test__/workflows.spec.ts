// The hosted CI's workflows (.github/workflows/, docs/DEVELOPMENT.md "Hosted CI") run on GitHub's
// runners only, never here: what can be checked of them here is what they say. Every target of
// package.json `napi.targets` is built by release.yml and tested by a job of ci.yml or release.yml
// on its own OS; every action is pinned to a commit; ci.yml tests Node 22 and 24; every job has a
// time limit. actionlint and zizmor check the rest (scripts/lint-workflows.sh, in .ci/run).
// Each check is a function of the parsed files, also run on a changed copy that it must refuse.
import { readFileSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'

const ROOT = resolve(__dirname, '..')
const WORKFLOWS = join(ROOT, '.github', 'workflows')
const TARGETS: string[] = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).napi.targets

interface Step {
  uses?: string
  run?: string
  with?: Record<string, unknown>
}
interface Job {
  'runs-on'?: unknown
  'timeout-minutes'?: unknown
  uses?: string
  container?: unknown
  strategy?: { matrix?: Record<string, unknown> }
  steps?: Step[]
}
interface Workflow {
  jobs: Record<string, Job>
}

const text = (file: string): string => readFileSync(join(WORKFLOWS, file), 'utf8')
const load = (file: string): Workflow => parse(text(file)) as Workflow

/** Every value a matrix gives `key`: from a list under that key, its objects' `key`, and `include`. */
function matrixValues(job: Job, key: string): string[] {
  const matrix = job.strategy?.matrix ?? {}
  const values: unknown[] = []
  for (const [name, entries] of Object.entries(matrix)) {
    if (!Array.isArray(entries)) continue
    for (const entry of entries) {
      if (name === key) values.push(entry)
      else if (entry !== null && typeof entry === 'object' && key in entry) values.push((entry as Record<string, unknown>)[key])
    }
  }
  return values.map(String)
}

const runs = (job: Job, pattern: RegExp): boolean => (job.steps ?? []).some((step) => pattern.test(step.run ?? ''))

/** The targets release.yml builds: the matrix targets of the jobs that run npm run build:targets for one. */
function builtTargets(release: Workflow): Set<string> {
  const built = new Set<string>()
  for (const job of Object.values(release.jobs)) {
    if (runs(job, /npm run build:targets -- --target "\$TARGET"/)) for (const target of matrixValues(job, 'target')) built.add(target)
  }
  return built
}

/** The targets tested on their own OS: each ci.yml job that runs vitest, each release.yml job that runs release-smoke.mjs. */
function testedTargets(ci: Workflow, release: Workflow): Set<string> {
  const tested = new Set<string>()
  for (const job of Object.values(ci.jobs)) {
    if (runs(job, /npx vitest run/)) for (const target of matrixValues(job, 'target')) tested.add(target)
  }
  for (const job of Object.values(release.jobs)) {
    if (runs(job, /scripts\/release-smoke\.mjs/)) for (const target of matrixValues(job, 'target')) tested.add(target)
  }
  return tested
}

/** Each `uses:` line that is not `<action>@<40 hex digits> # <version>`. */
function unpinned(source: string): string[] {
  return source
    .split('\n')
    .filter((line) => /^\s*(-\s+)?uses:/.test(line))
    .filter((line) => !/uses:\s*[\w.-]+\/[\w./-]+@[0-9a-f]{40}\s+#\s*\S+/.test(line))
    .map((line) => line.trim())
}

/** Jobs of `workflow` without a numeric timeout-minutes. */
const untimed = (workflow: Workflow): string[] =>
  Object.entries(workflow.jobs)
    .filter(([, job]) => typeof job['timeout-minutes'] !== 'number')
    .map(([name]) => name)

/** ci.yml jobs whose matrix lacks Node 22 or 24, or that set no Node from it. */
function missingNode(ci: Workflow, versions = ['22', '24']): string[] {
  return Object.entries(ci.jobs)
    .filter(([, job]) => {
      const nodes = matrixValues(job, 'node')
      return !versions.every((version) => nodes.includes(version)) || !JSON.stringify(job).includes('matrix.node')
    })
    .map(([name]) => name)
}

const files = readdirSync(WORKFLOWS).filter((file) => file.endsWith('.yml') || file.endsWith('.yaml'))
const ci = load('ci.yml')
const release = load('release.yml')

describe('the hosted CI workflows', () => {
  it('are ci.yml and release.yml', () => {
    expect(files.sort()).toEqual(['ci.yml', 'release.yml'])
  })

  it('release.yml builds every target of napi.targets', () => {
    const built = builtTargets(release)
    expect(TARGETS.filter((target) => !built.has(target))).toEqual([])
  })

  it('every target of napi.targets is tested on its own OS, by ci.yml or release.yml', () => {
    const tested = testedTargets(ci, release)
    expect(TARGETS.filter((target) => !tested.has(target))).toEqual([])
  })

  it.each(files)('%s: every action is pinned to a commit, its version in a comment', (file) => {
    expect(text(file)).toMatch(/uses:/)
    expect(unpinned(text(file))).toEqual([])
  })

  it('ci.yml tests Node 22 and 24 in every job', () => {
    expect(missingNode(ci)).toEqual([])
  })

  it.each(files)('%s: every job has a time limit', (file) => {
    expect(untimed(load(file))).toEqual([])
  })

  it('the checks refuse a workflow that breaks them', () => {
    const dropped = structuredClone(release)
    const build = Object.values(dropped.jobs).find((job) => runs(job, /build:targets/)) as Job
    const matrix = build.strategy?.matrix as { target: string[] }
    matrix.target = matrix.target.filter((target) => target !== 'aarch64-unknown-linux-musl')
    expect(TARGETS.filter((target) => !builtTargets(dropped).has(target))).toEqual(['aarch64-unknown-linux-musl'])

    const untested = structuredClone(release)
    delete untested.jobs['test-packages']
    expect(TARGETS.filter((target) => !testedTargets(ci, untested).has(target))).toContain('aarch64-unknown-linux-musl')

    expect(unpinned('      - uses: actions/checkout@v7\n      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1\n')).toHaveLength(2)

    const noTimeout = structuredClone(ci)
    delete noTimeout.jobs.alpine['timeout-minutes']
    expect(untimed(noTimeout)).toEqual(['alpine'])

    expect(missingNode(ci, ['22', '24', '26'])).toEqual(Object.keys(ci.jobs))
  })
})
