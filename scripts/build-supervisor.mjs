#!/usr/bin/env node
// `npm run build:supervisor`: the process supervisor for this machine's own platform, at the root
// beside the addon that `npm run build` leaves there (docs/DEVELOPMENT.md). Linked statically on
// Linux (it starts once per relay); none on Windows, where a Job Object does its work
// (docs/ARCHITECTURE.md §4). Other targets: `npm run build:targets`.
import { execFileSync } from 'node:child_process'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'

const SUPERVISOR = 'phone-a-friend-supervisor'

if (process.platform === 'win32') {
  console.log('build:supervisor: none on Windows (a Job Object keeps the backend tree)')
  process.exit(0)
}
const host = /^host: (\S+)$/m.exec(execFileSync('rustc', ['-vV'], { encoding: 'utf8' }))?.[1]
if (host === undefined) throw new Error('build:supervisor: `rustc -vV` names no host triple')
const env = host.includes('-linux-') ? { ...process.env, RUSTFLAGS: '-C target-feature=+crt-static' } : process.env
execFileSync('cargo', ['build', '--quiet', '--release', '-p', SUPERVISOR, '--target', host, '--target-dir', join('target', 'supervisor')], { stdio: 'inherit', env })
copyFileSync(join('target', 'supervisor', host, 'release', SUPERVISOR), SUPERVISOR)
