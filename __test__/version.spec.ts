// `npm test` says what it is doing before each of its long, quiet phases.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(__dirname, '..')
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8')
const PKG = JSON.parse(read('package.json')) as { version: string; scripts: Record<string, string> }

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
