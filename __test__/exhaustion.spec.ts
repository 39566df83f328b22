// Out of file descriptors (EMFILE): every relay settles with an answer or a coded error that
// names the OS error, never ERR_BACKEND_NO_OUTPUT or ERR_INTERNAL, and nothing is left behind:
// no temp folder, no process.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeClis } from './support/fake-cli.js'
import { processesWithEnv } from './support/processes.js'
import { TempRepo } from './support/git-repo.js'

const ROOT = resolve(__dirname, '..')
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

const HOST = `
const { relay } = require(process.env.PAF_ROOT)
const runs = Array.from({ length: ${RELAYS} }, () =>
  relay({ prompt: 'hi', repoPath: process.env.PAF_REPO, timeoutSeconds: 30 }).then(
    (answer) => ({ ok: true, answer }),
    (error) => ({ ok: false, code: error.code, message: error.message }),
  ))
Promise.all(runs).then((results) => process.stdout.write(JSON.stringify(results)))
`

interface Result {
  ok: boolean
  answer?: string
  code?: string
  message?: string
}

describe(`${RELAYS} relays at once under ulimit -n ${FD_LIMIT}`, () => {
  it('each answers or fails with a coded error naming the OS error; nothing is left behind', () => {
    const mark = `emfile-${process.pid}-${Date.now()}`
    const out = execFileSync('sh', ['-c', `ulimit -n ${FD_LIMIT} && exec "$0" -e "$1"`, process.execPath, HOST], {
      env: { ...process.env, PAF_ROOT: ROOT, PAF_REPO: repo.path, TMPDIR: relayTmp, FAKE_MODE: 'slow', FAKE_SLEEP: '0.3', PAF_EMFILE_MARK: mark },
      encoding: 'utf8',
      timeout: 60_000,
    })
    const results = JSON.parse(out) as Result[]
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
