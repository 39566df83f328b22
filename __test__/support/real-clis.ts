// The set-up of the suites that drive the real CLIs (node_modules/.bin) against one fake model
// server: a server for the file, and for each test an empty registry, the CLIs on PATH, the
// server reset to one instant default answer, and a fresh repository.
import { resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { _resetRegistry } from '@phone-a-friend/relay'
import { DEFAULT_ANSWER, startFakeModelServer, type FakeModelServer } from './fake-model-server.js'
import { restoreEnv, useEnv } from './e2e.js'
import { TempRepo } from './git-repo.js'

const BIN = resolve(__dirname, '..', '..', 'node_modules', '.bin')

export interface RealClisSuite {
  /** The fake model server, for the whole file. */
  readonly server: FakeModelServer
  /** The current test's repository (branch main, one commit of `a.txt`). */
  readonly repo: TempRepo
}

/** Registers the hooks; the returned object's fields are the current ones. */
export function realClisSuite(): RealClisSuite {
  const suite = {} as { server: FakeModelServer; repo: TempRepo }
  beforeAll(async () => {
    suite.server = await startFakeModelServer()
  })
  afterAll(async () => {
    await suite.server.close()
  })
  beforeEach(() => {
    _resetRegistry()
    useEnv({ PATH: `${BIN}:${process.env.PATH ?? ''}` })
    suite.server.requests.length = 0
    suite.server.setDelay(0)
    suite.server.setStall(false)
    suite.server.setParts({ count: 1, gapMs: 0 })
    suite.server.setAnswer(DEFAULT_ANSWER)
    suite.repo = new TempRepo('main').write('a.txt', 'one\n').commit('first')
  })
  afterEach(() => {
    restoreEnv()
    suite.repo.remove()
  })
  return suite
}
