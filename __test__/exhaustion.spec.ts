// Out of file descriptors (EMFILE): every relay settles with an answer or a coded error that
// names the OS error, never ERR_BACKEND_NO_OUTPUT or ERR_INTERNAL, and nothing is left behind:
// no temp folder, no process.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeClis } from './support/fake-cli.js'
import { processesWithEnv } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { relaysInAChild } from './support/many-relays.js'

const RELAYS = 128
const FD_LIMIT = 128

let fake: FakeClis
let repo: TempRepo
let relayTmp: string

beforeAll(() => {
  fake = new FakeClis(['codex'])
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
  relayTmp = mkdtempSync(join(tmpdir(), 'paf-emfile-'))
})

afterAll(() => {
  fake.restore()
  repo.remove()
  rmSync(relayTmp, { recursive: true, force: true })
})

describe(`${RELAYS} relays at once under ulimit -n ${FD_LIMIT}`, () => {
  it('each answers or fails with a coded error naming the OS error; nothing is left behind', () => {
    const mark = `emfile-${process.pid}-${Date.now()}`
    const results = relaysInAChild(
      ['sh', '-c', `ulimit -n ${FD_LIMIT} && exec "$0" -e "$1"`],
      RELAYS,
      { timeoutSeconds: 30 },
      { PAF_REPO: repo.path, TMPDIR: relayTmp, FAKE_MODE: 'slow', FAKE_SLEEP: '0.3', PAF_EMFILE_MARK: mark },
    )
    expect(results).toHaveLength(RELAYS)
    const answered = results.filter((r) => r.ok)
    const failed = results.filter((r) => !r.ok)
    expect(answered.every((r) => r.answer === 'slow answer')).toBe(true)
    // The limit must really have been reached, and not every relay may fail.
    expect(failed.length).toBeGreaterThan(0)
    expect(answered.length).toBeGreaterThan(0)
    for (const failure of failed) {
      expect(failure.code).toBe('ERR_BACKEND_FAILED')
      expect(failure.message).toMatch(/Too many open files \(os error 24\)/)
    }
    expect(readdirSync(relayTmp)).toEqual([])
    expect(processesWithEnv(mark)).toEqual([])
  })
})
