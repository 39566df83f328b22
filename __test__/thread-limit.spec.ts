// Out of processes and threads (EAGAIN from fork and clone): every relay settles with an answer
// or a coded error naming the OS error, never a panic (ERR_INTERNAL), and nothing is left
// behind. RLIMIT_NPROC does not bind root, so the host runs as `nobody` (util-linux setpriv).
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeClis } from './support/fake-cli.js'
import { processesWithEnv, runsAsRoot } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { relaysInAChild } from './support/many-relays.js'

const RELAYS = 32
// setpriv needs root to become `nobody`; as another user the limit would count that user's other processes.
const canDropToNobody = runsAsRoot(`thread-limit.spec.ts: ${RELAYS} relays under a process limit (setpriv to nobody needs root)`)

let fake: FakeClis
let repo: TempRepo
let relayTmp: string

beforeAll(() => {
  fake = new FakeClis(['codex'])
  repo = new TempRepo().write('a.txt', 'one\n').commit('first').write('a.txt', 'two\n')
  relayTmp = mkdtempSync(join(tmpdir(), 'paf-nproc-'))
  for (const dir of [fake.bin, fake.log, repo.path, relayTmp]) chmodSync(dir, 0o777)
  execFileSync('chmod', ['-R', 'a+rwX', repo.path])
})

afterAll(() => {
  fake.restore()
  repo.remove()
  rmSync(relayTmp, { recursive: true, force: true })
})

describe.skipIf(!canDropToNobody)(`${RELAYS} relays with includeDiff under a process limit`, () => {
  // Node and the addon's runtime need about a dozen threads; each relay needs a few more.
  it.each([14, 24])('ulimit -u %i: answers or coded errors with the OS words, never a panic', (limit) => {
    const mark = `nproc-${process.pid}-${limit}-${Date.now()}`
    const results = relaysInAChild(
      ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', 'bash', '-c', `ulimit -u ${limit} && exec "$0" -e "$1"`],
      RELAYS,
      { includeDiff: true, timeoutSeconds: 30 },
      { PAF_REPO: repo.path, TMPDIR: relayTmp, FAKE_MODE: 'slow', FAKE_SLEEP: '0.2', PAF_NPROC_MARK: mark },
    )
    expect(results).toHaveLength(RELAYS)
    const failed = results.filter((r) => !r.ok)
    expect(failed.length).toBeGreaterThan(0) // the limit was really reached
    expect(results.filter((r) => r.ok).every((r) => r.answer === 'slow answer')).toBe(true)
    for (const failure of failed) {
      // Ours name the OS error; the fake CLI's shell, hitting the same limit, says it its way.
      expect(['ERR_BACKEND_FAILED', 'ERR_GIT_DIFF']).toContain(failure.code)
      expect(failure.message).toMatch(/Resource temporarily unavailable \(os error 11\)|: Cannot fork$/)
    }
    // At least one failure is ours, not only the fake CLI's.
    expect(failed.some((r) => r.message?.includes('(os error 11)'))).toBe(true)
    expect(readdirSync(relayTmp)).toEqual([])
    expect(processesWithEnv(mark)).toEqual([])
  })
})
