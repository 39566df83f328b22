// The rows of the speed issue (BENCHMARKS.md, "Side by side with upstream"), each beside its
// target: upstream's figure (the phone-a-friend v4.1.1 library, pure TypeScript) in the side-by-side
// run on this machine that BENCHMARKS.md records. Used by run.mjs.
import { execFileSync } from 'node:child_process'
import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const git = (repo, ...args) => execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@b', ...args])

/** A repository with a 288 KB uncommitted diff, as in the side-by-side run. */
function bigDiffRepo(work) {
  const repo = join(work, 'big-diff-repo')
  execFileSync('git', ['init', '-q', '-b', 'main', repo])
  const line = (i, tail) => `line ${String(i).padStart(5, '0')} ${'abcdefghij'.repeat(4)}${tail}\n`
  writeFileSync(join(repo, 'big.txt'), Array.from({ length: 2525 }, (_, i) => line(i, '')).join(''))
  git(repo, 'add', '.')
  git(repo, 'commit', '-qm', 'base')
  writeFileSync(join(repo, 'big.txt'), Array.from({ length: 2525 }, (_, i) => line(i, ' changed')).join(''))
  return repo
}

/** ms per relay of a 288 KB diff and a 190 KB inline context to a JS backend that answers at once. */
export async function largeInputs({ api, work, runs, report }) {
  const repo = bigDiffRepo(work)
  api.registerBackend({ name: 'bench-sink', allowedSandboxes: ['read-only'], run: async ({ prompt }) => `ok ${prompt.length}` })
  const options = { prompt: 'review this', repoPath: repo, backend: 'bench-sink', includeDiff: true, contextText: 'context '.repeat(24_000), timeoutSeconds: 60 }
  for (let i = 0; i < 3; i++) await api.relay(options)
  const times = []
  for (let i = 0; i < runs * 4; i++) {
    const started = performance.now()
    await api.relay(options)
    times.push(performance.now() - started)
  }
  const value = median(times)
  report('288 KB diff + 190 KB context to a JS backend: per relay', `${value.toFixed(1)} ms`, '≤ 5.6 ms (upstream)', value <= 5.6, 'upstream runs one git; this asks git for the filter drivers first')
  const base = []
  for (let i = 0; i < runs * 20; i++) {
    const started = performance.now()
    api.gitDiffBase(repo, 'HEAD')
    base.push(performance.now() - started)
  }
  const perCall = median(base)
  report('gitDiffBase() (synchronous)', `${perCall.toFixed(2)} ms`, '≤ 2.2 ms (upstream)', perCall <= 2.2, 'one git run: a diff between two commits runs no filter')
}

/** A repository whose uncommitted diff is about 50 MB: 500 files of 100 KB each, rewritten. */
function fiftyMegabyteRepo(work) {
  const repo = join(work, 'fifty-mb-repo')
  execFileSync('git', ['init', '-q', '-b', 'main', repo])
  execFileSync('mkdir', ['-p', join(repo, 'src')])
  const file = (tag) => Array.from({ length: 1250 }, (_, i) => `${tag} ${String(i).padStart(70, '0')}\n`).join('')
  for (let n = 0; n < 500; n++) writeFileSync(join(repo, 'src', `f${n}.txt`), file('old'))
  git(repo, 'add', '.')
  git(repo, 'commit', '-qm', 'base')
  for (let n = 0; n < 500; n++) writeFileSync(join(repo, 'src', `f${n}.txt`), file(`new${n}`))
  return repo
}

/**
 * Fitting a 50 MB diff (issue 33): the time of a dry run with `fit`, the largest event-loop gap
 * meanwhile (the JS thread never waits on it) and the peak RSS growth (bounded by the budget,
 * not the diff: git's output is read as a stream).
 */
export async function fitLargeDiff({ api, work, runs, report }) {
  const repo = fiftyMegabyteRepo(work)
  const options = { prompt: 'review this', repoPath: repo, includeDiff: true, fit: true, dryRun: true, timeoutSeconds: 120, onWarning: () => {} }
  await api.relay(options)
  const times = []
  let gap = 0
  let peak = 0
  const idle = process.memoryUsage().rss
  for (let i = 0; i < runs; i++) {
    let last = performance.now()
    const timer = setInterval(() => {
      const now = performance.now()
      gap = Math.max(gap, now - last - 5)
      last = now
      peak = Math.max(peak, process.memoryUsage().rss - idle)
    }, 5)
    const started = performance.now()
    const dryRun = await api.relay(options)
    times.push(performance.now() - started)
    clearInterval(timer)
    if ((dryRun.coverage ?? []).length !== 500) throw new Error('the 50 MB diff was not fitted file by file')
  }
  const value = median(times)
  report('fitting a 50 MB diff (500 files): time of a dry run', `${value.toFixed(0)} ms`, '≤ 1500 ms', value <= 1500, 'git writes the 50 MB in about half of it')
  report('same: largest event-loop gap (5 ms interval)', `${gap.toFixed(1)} ms`, '< 20 ms', gap < 20)
  report('same: peak RSS growth', `${(peak / 2 ** 20).toFixed(1)} MB`, '≤ 20 MB (a few budgets, not the diff)', peak <= 20 * 2 ** 20)
}

/** Sequential relays/s to a local Ollama stand-in that answers at once. */
export async function ollamaRate({ api, repo, runs, report }) {
  const { createServer } = await import('node:http')
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ model: 'm', message: { role: 'assistant', content: 'ok' }, done: true }))
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const saved = process.env.OLLAMA_HOST
  process.env.OLLAMA_HOST = `127.0.0.1:${server.address().port}`
  try {
    const one = () => api.relay({ prompt: 'p', repoPath: repo, backend: 'ollama', model: 'm' })
    for (let i = 0; i < 20; i++) await one()
    const rates = []
    for (let r = 0; r < runs; r++) {
      const started = performance.now()
      for (let i = 0; i < 200; i++) await one()
      rates.push(200 / ((performance.now() - started) / 1000))
    }
    const value = median(rates)
    report('Ollama, instant local server: sequential relays/s', `${value.toFixed(0)}/s`, '≥ 1060/s (upstream)', value >= 1060)
  } finally {
    if (saved === undefined) delete process.env.OLLAMA_HOST
    else process.env.OLLAMA_HOST = saved
    server.closeAllConnections()
    server.close()
  }
}

/** In a fresh process: RSS after one CLI relay, then 256 CLI relays at once (peak threads, VmHWM growth). */
function cliProbe(root) {
  return `
    import { readFileSync, writeFileSync } from 'node:fs'
    import { createRequire } from 'node:module'
    const status = (field) => Number(readFileSync('/proc/self/status', 'utf8').match(new RegExp(field + ':\\\\s+(\\\\d+)'))[1])
    const { relay } = createRequire(import.meta.url)(${JSON.stringify(root)})
    ;(async () => {
      process.env.FAKE_MODE = 'stdout-only'
      await relay({ prompt: 'p', repoPath: process.env.REPO, backend: 'gemini' })
      await new Promise((r) => setTimeout(r, 50))
      const firstRss = status('VmRSS')
      process.env.FAKE_MODE = 'slow'
      global.gc?.()
      writeFileSync('/proc/self/clear_refs', '5')
      const idle = status('VmRSS')
      let peak = status('Threads')
      const sampler = setInterval(() => { peak = Math.max(peak, status('Threads')) }, 5)
      await Promise.all(Array.from({ length: 256 }, () => relay({ prompt: 'p', repoPath: process.env.REPO, backend: 'gemini' })))
      clearInterval(sampler)
      console.log(JSON.stringify({ firstRss, growth: status('VmHWM') - idle, peak }))
    })()
  `
}

export function cliMemoryAndThreads({ root, work, repo, runs, report }) {
  // An ES module, as the side-by-side run's workers are: loading one starts Node's libuv pool
  // (11 threads before the addon's).
  const probe = join(work, 'cli-probe.mjs')
  writeFileSync(probe, cliProbe(root))
  const samples = []
  for (let i = 0; i < Math.min(runs, 3); i++) {
    const out = execFileSync(process.execPath, ['--expose-gc', probe], { env: { ...process.env, REPO: repo, FAKE_SLEEP: '1' }, encoding: 'utf8' })
    samples.push(JSON.parse(out))
  }
  const first = median(samples.map((s) => s.firstRss)) / 1024
  const growth = median(samples.map((s) => s.growth)) / 1024
  const peak = median(samples.map((s) => s.peak))
  report('RSS after the first relay (fake CLI)', `${first.toFixed(1)} MB`, '≤ 47 MB (upstream)', first <= 47)
  report('256 CLI relays at once: peak threads of node', `${peak}`, '≤ 11 (upstream)', peak <= 11, 'Node\'s 11 and the runtime\'s one worker')
  report('same: VmHWM growth over idle', `${growth.toFixed(1)} MB`, '≤ 15 MB (upstream)', growth <= 15)
}

export function addonSize({ root, report }) {
  const file = join(root, `relay.${process.platform}-${process.arch === 'x64' ? 'x64' : process.arch}-gnu.node`)
  let bytes
  try {
    bytes = statSync(file).size
  } catch {
    return
  }
  report('the addon\'s size (release build)', `${(bytes / 1e6).toFixed(2)} MB`, '≤ 6 MB', bytes <= 6e6)
}
