// Out of file descriptors (EMFILE): a burst of relays larger than the limit becomes a queue,
// every relay answering; one whose time runs out first settles with a coded error that names
// the OS error (or the timeout), never ERR_BACKEND_NO_OUTPUT or ERR_INTERNAL; nothing is left
// behind: no temp folder, no process.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeClis } from './support/fake-cli.js'
import { processesWithEnv } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'
import { relaysInAChild } from './support/many-relays.js'

const RELAYS = 256
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

/** RELAYS relays at once to a fake codex that takes 0.3 s, in a child limited to FD_LIMIT descriptors. */
function burst(timeoutSeconds: number): { results: ReturnType<typeof relaysInAChild>; mark: string } {
  const mark = `emfile-${process.pid}-${Date.now()}`
  const results = relaysInAChild(
    ['sh', '-c', `ulimit -n ${FD_LIMIT} && exec "$0" -e "$1"`],
    RELAYS,
    { timeoutSeconds },
    { PAF_REPO: repo.path, TMPDIR: relayTmp, FAKE_MODE: 'slow', FAKE_SLEEP: '0.3', PAF_EMFILE_MARK: mark },
  )
  return { results, mark }
}

describe(`${RELAYS} relays at once under ulimit -n ${FD_LIMIT}`, () => {
  it('every one answers: spawns and files wait for descriptors to free up; nothing is left behind', () => {
    const { results, mark } = burst(30)
    expect(results).toHaveLength(RELAYS)
    expect(results.filter((r) => !r.ok)).toEqual([])
    expect(results.every((r) => r.answer === 'slow answer')).toBe(true)
    expect(readdirSync(relayTmp)).toEqual([])
    expect(processesWithEnv(mark)).toEqual([])
  })

  it('with too little time to wait, each answers or fails with a coded error: the OS words or the timeout', () => {
    const { results, mark } = burst(1)
    expect(results).toHaveLength(RELAYS)
    for (const result of results) {
      if (result.ok) expect(result.answer).toBe('slow answer')
      else if (result.code === 'ERR_BACKEND_TIMEOUT') expect(result.message).toBe('codex exec timed out after 1s')
      else expect(result).toMatchObject({ code: 'ERR_BACKEND_FAILED', message: expect.stringMatching(/Too many open files \(os error 24\)/) })
    }
    expect(readdirSync(relayTmp)).toEqual([])
    expect(processesWithEnv(mark)).toEqual([])
  })
})
