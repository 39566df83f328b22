// Details where the package must answer exactly as the original TypeScript relay (v1.3.0) does,
// found by running the original's own tests against it: real git repositories, fake CLIs on
// PATH and a real HTTP server for Ollama.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { _resetRegistry, checkBackends, registerBackend, relay, reviewRelay, type BackendRunOptions } from '@phone-a-friend/relay'
import { FakeClis } from './support/fake-cli'
import { TempRepo, tempDir } from './support/git-repo'
import { chatLine, startOllamaStub, type OllamaStub } from './support/ollama-stub'

const saved = { OLLAMA_HOST: process.env.OLLAMA_HOST, OLLAMA_MODEL: process.env.OLLAMA_MODEL, PATH: process.env.PATH }
let repo: TempRepo

beforeEach(() => {
  _resetRegistry()
  repo = new TempRepo().write('a.txt', 'one\n').commit('first')
})

afterEach(() => {
  repo.remove()
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

describe('codex', () => {
  let clis: FakeClis
  beforeEach(() => (clis = new FakeClis(['codex'])))
  afterEach(() => clis.restore())

  it('reports an answer file it cannot read, not an empty answer', async () => {
    clis.mode('answer-path-is-a-folder')
    await expect(relay({ prompt: 'Review', repoPath: repo.path, backend: 'codex' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      // The original's words: Node's error as String() prints it.
      message: 'Failed reading Codex output file: Error: EISDIR: illegal operation on a directory, read',
    })
  })

  it('says which signal killed a CLI (documented difference: the original said nothing)', async () => {
    writeFileSync(join(clis.bin, 'codex'), '#!/bin/sh\ncat > /dev/null\nkill -9 $$\n')
    await expect(relay({ prompt: 'Review', repoPath: repo.path, backend: 'codex' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'codex exec was killed by signal 9',
    })
  })

  it('says why a CLI found on PATH could not start (a missing #! interpreter)', async () => {
    writeFileSync(join(clis.bin, 'codex'), '#!/no/such/interpreter\n')
    await expect(relay({ prompt: 'Review', repoPath: repo.path, backend: 'codex' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_UNAVAILABLE',
      message: 'codex CLI could not be started: No such file or directory (os error 2)',
    })
  })
})

describe('a relative PATH entry', () => {
  const cwd = process.cwd()
  afterEach(() => process.chdir(cwd))

  it('is taken from the working directory, as which and execvp take it', async () => {
    const place = tempDir('paf-relative-')
    mkdirSync(join(place, 'bin'))
    const codex = join(place, 'bin', 'codex')
    writeFileSync(codex, `#!/bin/sh\ncat > /dev/null\necho "relative codex in $(pwd)"\n`)
    chmodSync(codex, 0o755)
    process.chdir(place)
    process.env.PATH = `bin:${saved.PATH ?? ''}`
    expect(checkBackends().codex).toBe(true)
    // It runs in the repository, yet it is the program found from the working directory.
    await expect(relay({ prompt: 'Review', repoPath: repo.path, backend: 'codex' })).resolves.toBe(`relative codex in ${repo.path}`)
  })
})

describe('ollama', () => {
  let stub: OllamaStub
  const reply = (answer: OllamaStub['reply']) => (stub.reply = answer)

  beforeEach(async () => {
    stub = await startOllamaStub((res) => res.writeHead(500).end())
    process.env.OLLAMA_HOST = `http://${stub.host}`
    delete process.env.OLLAMA_MODEL
  })

  afterEach(() => stub.close())

  it('says only the status for a failed answer with an empty body', async () => {
    reply((res) => res.writeHead(500).end())
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'Ollama returned HTTP 500',
    })
  })

  it('prints an error that is not a string as JavaScript does', async () => {
    reply((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"error":{"code":1}}'))
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama' })).rejects.toMatchObject({
      code: 'ERR_BACKEND_FAILED',
      message: 'Ollama error: [object Object]',
    })
    reply((res) => res.writeHead(200).end('{"error":["a",1,null,true]}'))
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama' })).rejects.toThrow(/^Ollama error: a,1,,true$/)
  })

  it("sends no model for model: '', even with OLLAMA_MODEL set", async () => {
    reply((res) => res.writeHead(200).end(chatLine('fine')))
    process.env.OLLAMA_MODEL = 'from-env'
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama', model: '' })).resolves.toBe('fine')
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'ollama' })).resolves.toBe('fine')
    expect(stub.bodies.map((body) => body.model)).toEqual([undefined, 'from-env'])
  })
})

it("gives a JS backend model: '' as ''", async () => {
  const seen: Array<string | null> = []
  registerBackend({
    name: 'echo',
    allowedSandboxes: new Set(['read-only'] as const),
    run: async (options: BackendRunOptions) => {
      seen.push(options.model)
      return 'ok'
    },
  })
  await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'echo', model: '' })
  await relay({ prompt: 'Hi', repoPath: repo.path, backend: 'echo' })
  expect(seen).toEqual(['', null])
})

it("refuses contextFile: '' as the working directory, which is not a file", async () => {
  registerBackend({ name: 'echo', allowedSandboxes: new Set(['read-only'] as const), run: async () => 'ok' })
  await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'echo', contextFile: '' })).rejects.toMatchObject({
    code: 'ERR_CONTEXT_FILE',
    message: `Context path is not a file: ${process.cwd()}`,
  })
  // The original's check for both takes an empty path as absent, then resolves it all the same.
  await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'echo', contextFile: '', contextText: 'x' })).rejects.toMatchObject({
    code: 'ERR_CONTEXT_FILE',
    message: `Context path is not a file: ${process.cwd()}`,
  })
  // A path that is not empty conflicts with inline text, checked before the file is looked at.
  await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'echo', contextFile: '/nonexistent', contextText: 'x' })).rejects.toMatchObject({
    code: 'ERR_CONTEXT_CONFLICT',
  })
})

describe("a JS backend's options", () => {
  it('hold the keys the original passed (and signal): an absent schema is no key, as are the session keys', async () => {
    const keys: string[][] = []
    const record = (options: object): string => (keys.push(Object.keys(options).sort()), 'ok')
    registerBackend({ name: 'keys', allowedSandboxes: ['read-only'], run: async (options) => record(options), review: async (options) => record(options) })
    registerBackend({ name: 'keys-run', allowedSandboxes: ['read-only'], run: async (options) => record(options) })
    repo.write('a.txt', 'two\n').commit('second')
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'keys-run' }) // on the JS thread
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'keys-run', includeDiff: true }) // through the native core
    await reviewRelay({ repoPath: repo.path, backend: 'keys-run', base: 'HEAD~1' }) // the generic review: run()
    await reviewRelay({ repoPath: repo.path, backend: 'keys', base: 'HEAD~1' }) // the native review
    await reviewRelay({ repoPath: repo.path, backend: 'keys', base: 'HEAD~1', prompt: 'look' })
    await relay({ prompt: 'p', repoPath: repo.path, backend: 'keys-run', schema: { type: 'string' }, model: null }).catch(() => undefined)
    const run = ['env', 'model', 'prompt', 'repoPath', 'sandbox', 'signal', 'timeoutSeconds']
    const review = ['base', 'env', 'model', 'repoPath', 'sandbox', 'signal', 'timeoutSeconds']
    expect(keys).toEqual([run, run, run, review, [...review, 'prompt'].sort(), [...run, 'schema'].sort()])
  })
})

describe('documented differences', () => {
  it("reads a backend's allowedSandboxes when it is registered", async () => {
    const sandboxes = new Set<'read-only' | 'workspace-write' | 'danger-full-access'>(['read-only'])
    registerBackend({ name: 'later', allowedSandboxes: sandboxes, run: async () => 'ok' })
    sandboxes.add('workspace-write')
    await expect(relay({ prompt: 'Hi', repoPath: repo.path, backend: 'later', sandbox: 'workspace-write' })).rejects.toMatchObject({
      code: 'ERR_INVALID_SANDBOX',
      message: 'Invalid sandbox mode: workspace-write. Allowed values: read-only',
    })
  })

  it('refuses an empty backend name', () => {
    expect(() => registerBackend({ name: '', allowedSandboxes: new Set(['read-only'] as const), run: async () => 'ok' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', name: 'TypeError' }),
    )
  })
})
