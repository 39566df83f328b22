#!/usr/bin/env node
// A stand-in CLI for windows.spec.ts, installed as npm installs a CLI on Windows (npm's cmd-shim
// writes the `.cmd` beside it) and run by the relay under wine. What it does is in fake-cli.json
// beside it, not in its environment or arguments, which are what it reports: argv and stdin
// (exactly as they arrived) go to call.json in the log folder.
'use strict'
const { spawn } = require('node:child_process')
const { readFileSync, renameSync, writeFileSync } = require('node:fs')
const { join } = require('node:path')

const config = JSON.parse(readFileSync(join(__dirname, 'fake-cli.json'), 'utf8'))

/** Written whole or not at all: the test polls for these files. */
function report(name, value) {
  const file = join(config.log, name)
  writeFileSync(`${file}.tmp`, JSON.stringify(value))
  renameSync(`${file}.tmp`, file)
}

const chunks = []
process.stdin.on('data', (chunk) => chunks.push(chunk))
process.stdin.on('end', () => {
  report('call.json', {
    argv: process.argv.slice(2),
    stdin: Buffer.concat(chunks).toString('utf8'),
    cwd: process.cwd(),
    pid: process.pid,
  })
  if (config.mode === 'answer') {
    process.stdout.write(config.answer)
    return
  }
  // hang-with-grandchild: a grandchild that outlives this process unless something kills it.
  // Detached, it is outside the job libuv gives this process's children (which dies with this
  // process): only the relay's own job can take it down, as the relay must. Its argv carries
  // the case's mark, by which the test finds it.
  const grandchild = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)', config.mark], {
    detached: true,
    stdio: 'ignore',
  })
  grandchild.unref()
  report('grandchild.json', { pid: grandchild.pid })
  setInterval(() => {}, 1000)
})
