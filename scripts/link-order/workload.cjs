// What scripts/link-order.mjs watches the addon do, under callgrind. `common` (the first
// argument): load, and the relays nearly every process makes (a CLI backend, alone and several
// at once, a JS backend, a refused one). `all`: those, then the rest of what many make (a diff, a stream, a review, Ollama
// over HTTP, the git helpers, a dry run). Run with PATH leading to a folder where `gemini` and
// `codex` are __test__/support/fake-cli.sh (the script sets that up).
const { execFileSync } = require('node:child_process')
const { mkdtempSync, writeFileSync, rmSync } = require('node:fs')
const { createServer } = require('node:http')
const { tmpdir } = require('node:os')
const { join } = require('node:path')
const api = require('../..')

function repository() {
  const repo = mkdtempSync(join(tmpdir(), 'paf-link-order-'))
  const git = (...args) => execFileSync('git', ['-C', repo, '-c', 'user.name=o', '-c', 'user.email=o@o', ...args], { stdio: 'ignore' })
  git('init', '-q', '-b', 'main')
  writeFileSync(join(repo, 'a.txt'), 'one\n')
  git('add', '.')
  git('commit', '-qm', 'one')
  writeFileSync(join(repo, 'a.txt'), 'one\ntwo\n')
  return repo
}

function ollama() {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ message: { role: 'assistant', content: 'ollama answer' }, done: true }))
    })
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

async function main() {
  const repoPath = repository()
  const server = await ollama()
  process.env.OLLAMA_HOST = `http://127.0.0.1:${server.address().port}`
  try {
    await api.relay({ prompt: 'p', repoPath: join(repoPath, 'missing') }).catch(() => undefined)
    for (const backend of ['gemini', 'codex']) await api.relay({ prompt: 'p', repoPath, backend })
    // Answers that take a while: the runtime parks, and its timers move on, as in real relays.
    process.env.FAKE_MODE = 'slow'
    process.env.FAKE_SLEEP = '0.3'
    await Promise.all(Array.from({ length: 8 }, () => api.relay({ prompt: 'p', repoPath, backend: 'gemini' })))
    process.env.FAKE_MODE = 'stdout-only'
    api.registerBackend({ name: 'instant', allowedSandboxes: ['read-only'], run: async () => 'instant answer' })
    await Promise.all([1, 2, 3].map(() => api.relay({ prompt: 'p', repoPath, backend: 'instant' })))
    if (process.argv[2] !== 'all') return
    api.checkBackends()
    await api.relay({ prompt: 'p', repoPath, dryRun: true })
    for (const backend of ['gemini', 'codex']) await api.relay({ prompt: 'p', repoPath, backend, includeDiff: true, contextText: 'context' })
    for await (const chunk of api.relayStream({ prompt: 'p', repoPath, backend: 'gemini' })) void chunk
    await api.reviewRelay({ repoPath, backend: 'gemini', base: 'HEAD' })
    await api.relay({ prompt: 'p', repoPath, backend: 'instant', includeDiff: true })
    await api.relay({ prompt: 'p', repoPath, backend: 'ollama' })
    api.gitDiffBase(repoPath, 'HEAD')
    api.detectDefaultBranch(repoPath)
  } finally {
    server.close()
    rmSync(repoPath, { recursive: true, force: true })
  }
}

main().then(() => console.log('workload: done'), (error) => {
  console.error(error)
  process.exitCode = 1
})
