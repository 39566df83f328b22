#!/usr/bin/env node
// Unpacks an npm package's tarball into a folder, without installing it: the Node binaries of
// other versions and platforms (npm refuses to install an arm64 or Windows package on x64) and one
// arm64 module vitest needs. Idempotent: a folder holding that version already is left alone.
//
//   node scripts/platforms/unpack-npm.mjs <name>@<version> <folder>
//
// A package named in node-versions.json's `integrity` must be the tarball pinned there, whatever
// the registry serves later (npm itself checks the tarball against the registry's integrity).
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'

const [spec, folder] = process.argv.slice(2)
if (!spec || !folder || !/^(@[^@/]+\/)?[^@/]+@[^@]+$/.test(spec)) {
  console.error('usage: unpack-npm.mjs <name>@<version> <folder>')
  process.exit(2)
}
const version = spec.slice(spec.lastIndexOf('@') + 1)
const installedVersion = () => {
  try {
    return JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')).version
  } catch {
    return undefined
  }
}
if (installedVersion() === version) process.exit(0)

const pinned = JSON.parse(readFileSync(new URL('./node-versions.json', import.meta.url), 'utf8')).integrity[spec]
console.log(`unpack-npm: ${spec} -> ${folder}`)
mkdirSync(dirname(folder), { recursive: true })
const pack = mkdtempSync(join(dirname(folder), '.unpack-'))
try {
  const [{ filename, integrity }] = JSON.parse(execFileSync('npm', ['pack', spec, '--json', '--silent', '--pack-destination', pack], { encoding: 'utf8' }))
  if (pinned !== undefined && integrity !== pinned) throw new Error(`${spec} has integrity ${integrity}, not the pinned ${pinned}`)
  rmSync(folder, { recursive: true, force: true })
  mkdirSync(folder, { recursive: true })
  execFileSync('tar', ['-xzf', join(pack, filename), '-C', folder, '--strip-components=1'])
} catch (error) {
  console.error(`unpack-npm: ${error.message}`)
  process.exitCode = 1
} finally {
  rmSync(pack, { recursive: true, force: true })
}
