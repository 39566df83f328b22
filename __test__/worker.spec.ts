// Each JS realm that loads the package (the main thread, each worker) has its own registry:
// a backend registered in a worker is called on that worker and is unknown elsewhere.
import { resolve } from 'node:path'
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { relay } from '@phone-a-friend/relay'

const ENTRY = resolve(__dirname, '..')

function inWorker(code: string): Promise<unknown> {
  return new Promise((done, fail) => {
    const worker = new Worker(`const api = require(${JSON.stringify(ENTRY)}); (async () => { ${code} })().then((v) => require('node:worker_threads').parentPort.postMessage(v), (e) => require('node:worker_threads').parentPort.postMessage({ error: String(e) }))`, { eval: true })
    worker.once('message', (value: unknown) => {
      void worker.terminate()
      done(value)
    })
    worker.once('error', fail)
  })
}

describe('worker threads', () => {
  it('a worker relays through its own JS backend, unknown to the main thread', async () => {
    const answer = await inWorker(`
      const { threadId } = require('node:worker_threads')
      api.registerBackend({ name: 'in-worker', allowedSandboxes: ['read-only'], run: async () => 'answered on thread ' + threadId })
      return api.relay({ prompt: 'p', repoPath: '.', backend: 'in-worker' })
    `)
    expect(answer).toMatch(/^answered on thread [1-9]\d*$/)
    await expect(relay({ prompt: 'p', repoPath: '.', backend: 'in-worker' })).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_BACKEND' })
  })

  it('errors keep their classes inside a worker', async () => {
    const result = await inWorker(`
      const error = await api.relay({ prompt: ' ', repoPath: '.' }).catch((e) => e)
      return { isRelayError: error instanceof api.RelayError, code: error.code }
    `)
    expect(result).toEqual({ isRelayError: true, code: 'ERR_PROMPT_REQUIRED' })
  })
})
