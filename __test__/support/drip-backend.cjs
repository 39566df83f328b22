// Preloaded into the CLI (`node --require drip-backend.cjs bin/phone-a-friend.js`) by
// cli-stream.spec.ts: registers `drip`, a JS backend that streams. No built-in backend streams its
// answer in parts yet (a CLI backend's answer, or Ollama's, comes as one chunk at the end), and a
// JS backend can only be registered inside the process that relays.
//
// `drip` runs a child process (its "CLI") that writes the chunks of DRIP_CHUNKS (a JSON array)
// DRIP_GAP_MS apart (each repeated DRIP_REPEAT times), and streams that child's stdout. DRIP_LOG is a folder where it records the
// child's pid (`pid`), the time its stream ended (`done`, ms since the epoch) and an abort
// (`aborted`). With DRIP_FAIL set, the child exits 3 after its chunks and the backend fails with
// that text. An abort kills the child.
const { spawn } = require('node:child_process')
const { writeFileSync } = require('node:fs')
const { join } = require('node:path')
const { BackendError, registerBackend } = require(join(__dirname, '..', '..'))

const CHILD = `
const chunks = JSON.parse(process.env.DRIP_CHUNKS).map((chunk) => chunk.repeat(Number(process.env.DRIP_REPEAT || 1)))
const gap = Number(process.env.DRIP_GAP_MS || 0)
let i = 0
const next = () => {
  if (i === chunks.length) {
    if (process.env.DRIP_FAIL) process.exitCode = 3
    return
  }
  process.stdout.write(chunks[i++], () => setTimeout(next, gap))
}
next()
`

const log = (name, text) => writeFileSync(join(process.env.DRIP_LOG, name), text)

async function* runStream(options) {
  // Not the preload again (NODE_OPTIONS may carry it): the child is a plain script.
  const { NODE_OPTIONS: _preload, ...env } = process.env
  const child = spawn(process.execPath, ['-e', CHILD], { env, stdio: ['ignore', 'pipe', 'ignore'] })
  log('pid', String(child.pid))
  const exited = new Promise((done) => child.on('close', (code) => done(code)))
  const kill = () => {
    log('aborted', String(Date.now()))
    child.kill('SIGKILL')
  }
  options.signal.addEventListener('abort', kill, { once: true })
  try {
    child.stdout.setEncoding('utf8')
    for await (const chunk of child.stdout) yield chunk
    const code = await exited
    if (code !== 0) throw new BackendError(process.env.DRIP_FAIL)
  } finally {
    options.signal.removeEventListener('abort', kill)
    log('done', String(Date.now()))
  }
}

registerBackend({
  name: 'drip',
  allowedSandboxes: ['read-only', 'workspace-write', 'danger-full-access'],
  async run(options) {
    let answer = ''
    for await (const chunk of runStream(options)) answer += chunk
    return answer
  },
  runStream,
})
