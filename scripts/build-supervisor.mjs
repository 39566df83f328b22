#!/usr/bin/env node
// `npm run build:supervisor`: the process supervisor for this machine's own platform, at the root
// beside the addon that `npm run build` leaves there (docs/DEVELOPMENT.md). On Linux it is the
// static musl build of this arch (scripts/supervisor-triple.mjs), whose Rust target this adds
// with rustup when it is missing; none on Windows, where a Job Object does its work
// (docs/ARCHITECTURE.md §4). Other targets: `npm run build:targets`.
import { execFileSync } from 'node:child_process'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { supervisorTriple } from './supervisor-triple.mjs'

const SUPERVISOR = 'phone-a-friend-supervisor'

if (process.platform === 'win32') {
  console.log('build:supervisor: none on Windows (a Job Object keeps the backend tree)')
  process.exit(0)
}
const host = /^host: (\S+)$/m.exec(execFileSync('rustc', ['-vV'], { encoding: 'utf8' }))?.[1]
if (host === undefined) throw new Error('build:supervisor: `rustc -vV` names no host triple')
const triple = supervisorTriple(host)
if (triple !== host) addRustTarget(triple)
execFileSync('cargo', ['build', '--quiet', '--release', '-p', SUPERVISOR, '--target', triple, '--target-dir', join('target', 'supervisor')], { stdio: 'inherit' })
copyFileSync(join('target', 'supervisor', triple, 'release', SUPERVISOR), SUPERVISOR)

/** `rustup target add`, once: the musl target's standard library is not installed with Rust. */
function addRustTarget(wanted) {
  let installed
  try {
    installed = execFileSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' })
  } catch (error) {
    throw new Error(`build:supervisor: the supervisor is built for ${wanted}, and without rustup (${error.message}) its standard library cannot be added: install ${wanted}'s std for this Rust`)
  }
  if (installed.split('\n').includes(wanted)) return
  console.log(`build:supervisor: rustup target add ${wanted} (the supervisor's target, once)`)
  execFileSync('rustup', ['target', 'add', wanted], { stdio: 'inherit' })
}
