// The call-overhead and streaming figures of issue 9, each beside its target; the notes hold the
// figures of upstream (the phone-a-friend v4.1.1 CLI, pure TypeScript; docs/CONTRACT.md §1)
// measured side by side on this machine, as in BENCHMARKS.md. Used by run.mjs.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** Median µs per awaited call of `call`, over `runs` batches of `count`, after a warm-up. */
async function microsPerCall(call, runs, count = 1000) {
  for (let i = 0; i < 200; i++) await call()
  const batches = []
  for (let r = 0; r < runs; r++) {
    const started = process.hrtime.bigint()
    for (let i = 0; i < count; i++) await call()
    batches.push(Number(process.hrtime.bigint() - started) / count / 1000)
  }
  return median(batches)
}

export async function callOverhead({ api, repo, runs, report }) {
  const { relay, registerBackend } = api
  registerBackend({ name: 'bench-instant', allowedSandboxes: ['read-only'], run: async () => 'ok' })
  const instant = () => relay({ prompt: 'benchmark', repoPath: repo, backend: 'bench-instant' })
  const refused = () => relay({ prompt: ' ', repoPath: repo }).catch(() => {})

  const rejected = await microsPerCall(refused, runs, 5000)
  report('a refused relay (blank prompt)', `${rejected.toFixed(1)} µs`, '≤ 25 µs', rejected <= 25, 'upstream 12 µs')
  // Checks 3 and 4 wait on nothing either (a stat at most): refused where the call is made.
  const noRepo = join(repo, 'no-such-folder')
  const invalidRepo = await microsPerCall(() => relay({ prompt: 'benchmark', repoPath: noRepo }).catch(() => {}), runs, 5000)
  report('a rejected relay: invalid repository', `${invalidRepo.toFixed(1)} µs`, '≤ 25 µs', invalidRepo <= 25, 'upstream 14 µs: the speed issue\'s goal')
  const unknown = await microsPerCall(() => relay({ prompt: 'benchmark', repoPath: repo, backend: 'no-such-backend' }).catch(() => {}), runs, 5000)
  report('a rejected relay: unknown backend', `${unknown.toFixed(1)} µs`, '≤ 25 µs', unknown <= 25, 'upstream 31 µs')
  const plain = await microsPerCall(instant, runs)
  report('relay to a JS backend that answers at once', `${plain.toFixed(0)} µs`, '≤ 60 µs', plain <= 60, 'upstream 41 µs')
  // The runtime's road (a stream), where the stall watchdog runs: with it and without.
  const onChunk = () => {}
  const unwatched = await microsPerCall(() => relay({ prompt: 'benchmark', repoPath: repo, backend: 'bench-instant', onChunk }), runs)
  const watched = await microsPerCall(() => relay({ prompt: 'benchmark', repoPath: repo, backend: 'bench-instant', onChunk, idleTimeoutSeconds: 600 }), runs)
  const watchdog = watched - unwatched
  report('the stall watchdog per relay (idleTimeoutSeconds set vs not)', `${watchdog.toFixed(1)} µs (${watched.toFixed(0)} vs ${unwatched.toFixed(0)})`, '≤ 10 µs', watchdog <= 10, 'upstream has none')
  const added = []
  for (let i = 0; i < 200; i++) {
    const key = `PAF_BENCH_EXTRA_${i}`
    process.env[key] = `value-${i}`
    added.push(key)
  }
  try {
    const wide = await microsPerCall(instant, runs)
    report('same, with 200 more environment variables', `${wide.toFixed(0)} µs`, '≤ 520 µs', wide <= 520, 'upstream 436 µs')
  } finally {
    for (const key of added) delete process.env[key]
  }
}

/** In a fresh process: `count` relays started in one tick to a JS backend that answers after 1 s. */
function manyAtOnceProbe(root, count) {
  return `
    const { readFileSync } = require('node:fs')
    const { relay, registerBackend } = require(${JSON.stringify(root)})
    const threads = () => Number(readFileSync('/proc/self/status', 'utf8').match(/Threads:\\s+(\\d+)/)[1])
    registerBackend({ name: 'second', allowedSandboxes: ['read-only'], run: () => new Promise((r) => setTimeout(() => r('ok'), 1000)) })
    ;(async () => {
      // Warm-up: one relay through the backend, so the runtime and its threads exist before sampling.
      await relay({ prompt: 'warm', repoPath: process.env.REPO, backend: 'second' })
      let peak = threads()
      let gap = 0
      let last = performance.now()
      const sampler = setInterval(() => {
        const now = performance.now()
        gap = Math.max(gap, now - last - 5)
        last = now
        peak = Math.max(peak, threads())
      }, 5)
      const runs = Array.from({ length: ${count} }, () => relay({ prompt: 'p', repoPath: process.env.REPO, backend: 'second' }))
      await Promise.all(runs)
      clearInterval(sampler)
      console.log(JSON.stringify({ peak, gap }))
    })()
  `
}

export function manyAtOnce({ root, work, repo, runs, report }) {
  const measure = (count) => {
    const probe = join(work, `many-${count}.cjs`)
    writeFileSync(probe, manyAtOnceProbe(root, count))
    const samples = []
    for (let i = 0; i < Math.min(runs, 3); i++) {
      samples.push(JSON.parse(execFileSync(process.execPath, [probe], { env: { ...process.env, REPO: repo }, encoding: 'utf8' })))
    }
    return { peak: median(samples.map((s) => s.peak)), gap: median(samples.map((s) => s.gap)) }
  }
  const few = measure(16)
  const many = measure(256)
  report('256 relays at once to a 1 s backend: peak threads of node', `${many.peak} (16 at once: ${few.peak})`, '≤ 16, not growing', many.peak <= 16 && many.peak <= few.peak + 1, 'upstream 11')
  report('same: largest event-loop gap (5 ms interval)', `${many.gap.toFixed(1)} ms`, '< 20 ms', many.gap < 20, 'upstream 1494 ms')
}

export async function firstChunkLatency({ api, repo, runs, report }) {
  const { relayStream, registerBackend } = api
  const written = []
  registerBackend({
    name: 'bench-stream',
    allowedSandboxes: ['read-only'],
    run: async () => 'unused',
    async *runStream() {
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 2))
        written.push(performance.now())
        yield `chunk ${i} `
      }
    },
  })
  const delays = []
  for (let r = 0; r < runs * 4; r++) {
    written.length = 0
    let index = 0
    for await (const _chunk of relayStream({ prompt: 'p', repoPath: repo, backend: 'bench-stream' })) {
      delays.push(performance.now() - written[index++])
    }
  }
  const value = median(delays)
  report('a chunk reaches the consumer after the backend yields it', `${value.toFixed(2)} ms`, '≤ 1 ms', value <= 1, 'upstream 0.5 ms')
}

export function esmImport({ root, runs, report }) {
  const url = pathToFileURL(join(root, 'index.mjs')).href
  const probe = `const t = performance.now(); await import(${JSON.stringify(url)}); console.log(performance.now() - t)`
  const times = []
  for (let i = 0; i < runs * 4; i++) {
    times.push(Number(execFileSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' })))
  }
  const value = median(times)
  report('ESM import of the package', `${value.toFixed(1)} ms`, '≤ 11.3 ms (upstream)', value <= 11.3)
}

/** In a fresh process: peak RSS growth while relaying an 8 MB answer from the fake CLI. */
export function bigAnswerMemory({ root, work, repo, runs, report }) {
  const probe = join(work, 'big-answer.cjs')
  writeFileSync(probe, `
    const { readFileSync, writeFileSync } = require('node:fs')
    const { relay } = require(${JSON.stringify(root)})
    const kb = (field) => Number(readFileSync('/proc/self/status', 'utf8').match(new RegExp(field + ':\\\\s+(\\\\d+)'))[1])
    ;(async () => {
      process.env.FAKE_MODE = 'answer'
      await relay({ prompt: 'warm', repoPath: process.env.REPO, backend: 'gemini' })
      global.gc?.()
      writeFileSync('/proc/self/clear_refs', '5')
      const idle = kb('VmHWM')
      process.env.FAKE_MODE = 'big-answer'
      const answer = await relay({ prompt: 'p', repoPath: process.env.REPO, backend: 'gemini' })
      if (answer.length !== 8_000_000) throw new Error('unexpected answer of ' + answer.length)
      console.log(JSON.stringify({ idle, peak: kb('VmHWM') }))
    })()
  `)
  const deltas = []
  for (let i = 0; i < Math.min(runs, 3); i++) {
    const out = execFileSync(process.execPath, ['--expose-gc', probe], { env: { ...process.env, REPO: repo }, encoding: 'utf8' })
    const { idle, peak } = JSON.parse(out)
    deltas.push((peak - idle) / 1024)
  }
  const value = median(deltas)
  report('an 8 MB answer: RSS growth', `${value.toFixed(1)} MB`, '≤ 20 MB', value <= 20, 'upstream 54 MB')
}

/** Sequential relays to a local Ollama stand-in that counts its TCP connections. */
export async function ollamaConnections({ api, repo, report }) {
  const { createServer } = await import('node:http')
  let connections = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' })
      res.write(`${JSON.stringify({ model: 'm', message: { role: 'assistant', content: 'ok' }, done: false })}\n`)
      res.end(`${JSON.stringify({ model: 'm', message: { role: 'assistant', content: '' }, done: true })}\n`)
    })
  })
  server.on('connection', () => connections++)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const saved = process.env.OLLAMA_HOST
  process.env.OLLAMA_HOST = `127.0.0.1:${server.address().port}`
  try {
    const relays = 200
    for (let i = 0; i < relays; i++) await api.relay({ prompt: 'p', repoPath: repo, backend: 'ollama', model: 'm' })
    const value = connections / relays
    report('Ollama: new TCP connections per sequential relay', value.toFixed(3), '≤ 0.05', value <= 0.05, 'upstream 0.01')
  } finally {
    if (saved === undefined) delete process.env.OLLAMA_HOST
    else process.env.OLLAMA_HOST = saved
    server.closeAllConnections()
    server.close()
  }
}
