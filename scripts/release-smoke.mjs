#!/usr/bin/env node
// `node scripts/release-smoke.mjs <folder of tarballs> <platform>`: the packages a release publishes,
// as a user on this machine gets them (.github/workflows/release.yml runs it on each OS). The
// folder holds what that workflow packs from `npm run release:assemble`'s release/:
// main/<the main package>.tgz and platforms/<one per platform>.tgz. Installs the main package and
// the platform package of <platform> (napi's name: linux-x64-gnu, darwin-arm64, win32-x64-msvc, …)
// into a fresh folder, then checks that this Node loads that addon from the platform package,
// that a relay to a JS backend answers through it, that the CLI runs, and, except on Windows,
// that a CLI backend answers under the supervisor the platform package ships.
//
// `--omit=optional`: the main package's optionalDependencies name every platform's package at the
// release's version, not on the registry before it is published; the one for this machine is
// given here as a tarball. __test__/release.spec.ts tests the install as a user types it.
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join, resolve } from 'node:path'

const [folder, platform] = process.argv.slice(2)
if (folder === undefined || platform === undefined) {
  console.error('usage: node scripts/release-smoke.mjs <folder of tarballs> <platform>')
  process.exit(2)
}
const windows = process.platform === 'win32'
const tarball = (sub, pick) => {
  const dir = resolve(folder, sub)
  const found = readdirSync(dir).filter((file) => file.endsWith('.tgz') && pick(file))
  if (found.length !== 1) throw new Error(`release-smoke: expected one tarball in ${dir}, found ${found.join(', ') || 'none'}`)
  return join(dir, found[0])
}
const main = tarball('main', () => true)
const platformTarball = tarball('platforms', (file) => file.includes(`-relay-${platform}-`))

// npm and npx are .cmd files on Windows, which only a shell starts.
const run = (command, args, options = {}) =>
  execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], shell: windows && command !== process.execPath, ...options })

const project = mkdtempSync(join(tmpdir(), 'paf-release-smoke-'))
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
run('npm', ['install', '--no-audit', '--no-fund', '--omit=optional', platformTarball, main], { cwd: project, stdio: 'inherit' })

const check = (what, actual, expected) => {
  if (actual !== expected) throw new Error(`release-smoke: ${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`)
  console.log(`ok: ${what}`)
}

const js = run(process.execPath, ['-e', `
  const { relay, registerBackend } = require('@phone-a-friend/relay')
  registerBackend({ name: 'echo', allowedSandboxes: ['read-only'], run: async (o) => 'echo:' + o.prompt.split('\\n').at(-1) })
  relay({ prompt: 'hello', repoPath: '.', backend: 'echo' }).then((answer) => {
    const addon = Object.keys(require.cache).find((file) => file.endsWith('.node'))
    console.log(JSON.stringify({ answer, addon: addon && addon.includes('relay-${platform}') }))
  }, (e) => console.log(JSON.stringify({ error: e.code + ': ' + e.message })))
`], { cwd: project })
check('a relay to a JS backend, through the platform package\'s addon', js.trim(), JSON.stringify({ answer: 'echo:hello', addon: true }))

const { version } = JSON.parse(readFileSync(join(project, 'node_modules', '@phone-a-friend', 'relay', 'package.json'), 'utf8'))
check('npx phone-a-friend --version', run('npx', ['--no-install', 'phone-a-friend', '--version'], { cwd: project }).trim(), version)

if (!windows) {
  // A CLI backend runs under the supervisor (none on Windows, where a Job Object does its work).
  const bin = mkdtempSync(join(tmpdir(), 'paf-release-smoke-bin-'))
  writeFileSync(join(bin, 'codex'), '#!/bin/sh\ncat > /dev/null\necho "answer from codex"\n')
  chmodSync(join(bin, 'codex'), 0o755)
  const cli = run(process.execPath, ['-e', `
    require('@phone-a-friend/relay').relay({ prompt: 'hello', repoPath: '.' }).then((a) => console.log(a), (e) => console.log(e.code + ': ' + e.message))
  `], { cwd: project, env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}` } })
  check('a relay to a CLI backend (codex) under the shipped supervisor', cli.trim(), 'answer from codex')
}
console.log(`release-smoke: ${platform} ok`)
