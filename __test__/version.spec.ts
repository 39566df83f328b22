// The version a user sees is one version: package.json's, the platform package's, the crates' (the
// MCP server reports the core's as its `serverInfo.version`), with its dated CHANGELOG section;
// and `npm test` says what it is doing before each of its long, quiet phases.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(__dirname, '..')
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8')
const PKG = JSON.parse(read('package.json')) as { version: string; scripts: Record<string, string> }

describe('the version', () => {
  it("the CHANGELOG's latest release is package.json's version, dated, under [Unreleased]", () => {
    const headings = read('CHANGELOG.md')
      .split('\n')
      .filter((line) => line.startsWith('## '))
    expect(headings[0]).toBe('## [Unreleased]')
    expect(headings[1]).toMatch(new RegExp(`^## \\[${PKG.version.replaceAll('.', '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`))
    // What had piled up under [Unreleased] since 0.1.0 was released as 0.2.0.
    expect(headings).toContain('## [0.2.0] - 2026-11-25')
  })

  it('the platform package and the crates carry it', () => {
    expect((JSON.parse(read('npm/linux-x64-gnu/package.json')) as { version: string }).version).toBe(PKG.version)
    for (const manifest of ['Cargo.toml', 'crates/core/Cargo.toml', 'supervisor/Cargo.toml']) {
      expect(/^version = "([^"]+)"$/m.exec(read(manifest))?.[1], manifest).toBe(PKG.version)
    }
  })
})

describe('npm test', () => {
  it('prints a line before each phase: the cargo build, compiling and running the Rust tests, vitest', () => {
    const commands = PKG.scripts.test.split(' && ')
    const phases = commands.filter((command) => /^(cargo|vitest) /.test(command))
    expect(phases.length).toBeGreaterThanOrEqual(3)
    for (const phase of phases) {
      const before = commands[commands.indexOf(phase) - 1] ?? ''
      expect(before, phase).toMatch(/^echo '> npm test \d\/\d: [^']+'$/)
    }
    // The minutes of compiling have their own line, apart from running the tests.
    expect(phases).toContain('cargo test --workspace --quiet --no-run')
  })
})
