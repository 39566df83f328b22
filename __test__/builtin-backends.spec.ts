// The built-in backends are written once, in the Rust table (crates/core/src/backends/builtin.rs) the addon
// exposes as builtinBackends(). Text that cannot read it at run time is checked against it here:
// package.json, README and docs/, the TypeScript doc comments and the CLI's help.
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { BuiltinBackend } from '../binding.js'
import { COMMAND_HELP, HELP } from '../lib/cli/usage.js'

const ROOT = resolve(__dirname, '..')

function read(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8')
}

/** The items of a list in prose: `a, b, c or d` (also `a, b, or d`). */
function items(list: string): string[] {
  return list
    .split(/,\s*|\s+or\s+|\s+and\s+/)
    .map((item) => item.replace(/^(?:or|and)\s+/, '').trim())
    .filter((item) => item !== '')
}

/** The words of `text` written `like this` or 'like this'. */
function quoted(text: string, quote: '`' | "'"): string[] {
  return [...text.matchAll(new RegExp(`${quote}([^${quote}]+)${quote}`, 'g'))].map((match) => match[1])
}

/** The one part of `text` between `start` and `end`. */
function between(text: string, start: string, end: string): string {
  const from = text.indexOf(start)
  expect(from, start).toBeGreaterThanOrEqual(0)
  const to = text.indexOf(end, from + start.length)
  expect(to, end).toBeGreaterThan(from)
  return text.slice(from + start.length, to)
}

let table: BuiltinBackend[]
let names: string[]
let clis: string[]
let servers: string[]

beforeAll(async () => {
  const native = await import('../binding.js')
  table = native.builtinBackends()
  names = table.map((backend) => backend.name)
  clis = table.filter((backend) => backend.reach === 'cli').map((backend) => backend.name)
  servers = table.filter((backend) => backend.reach === 'server').map((backend) => backend.name)
})

describe('the table of built-in backends', () => {
  it('holds the six built-ins, the CLIs before the server', () => {
    expect(names).toEqual(['codex', 'gemini', 'claude', 'opencode', 'antigravity', 'ollama'])
    expect(servers).toEqual(['ollama'])
    for (const backend of table) {
      const sandboxes = backend.name === 'antigravity' ? ['read-only'] : ['read-only', 'workspace-write', 'danger-full-access']
      expect(backend.sandboxes, backend.name).toEqual(sandboxes)
    }
    // Each CLI is its executable, but antigravity's is agy; only a CLI never run here has a documented version.
    expect(table.map((backend) => backend.executable)).toEqual(['codex', 'gemini', 'claude', 'opencode', 'agy', 'ollama'])
    expect(table.filter((backend) => backend.documentedVersion).map((backend) => backend.name)).toEqual(['antigravity'])
  })

  it('is what checkBackends() reports on', async () => {
    const native = await import('../binding.js')
    expect(Object.keys(native.checkBackends()).sort()).toEqual([...names].sort())
  })

  it('verified each CLI at the version the devDependencies install', () => {
    const { devDependencies } = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> }
    for (const backend of table) {
      if (backend.npmPackage === undefined || backend.npmPackage === null) continue
      expect(devDependencies[backend.npmPackage], backend.name).toBe(backend.verifiedVersion)
    }
  })
})

describe('text that cannot read the table names exactly its backends', () => {
  it("package.json's description and keywords", () => {
    const { description, keywords } = JSON.parse(read('package.json')) as { description: string; keywords: string[] }
    const listed = items(between(description, '(', ')')).filter((item) => item !== 'your own backend')
    expect(listed).toEqual(names)
    expect(keywords).toEqual(expect.arrayContaining(names))
  })

  it('the doc comments of the `backend` options and of the package', () => {
    // Written once, in the Rust request type; napi copies it into the shipped typings.
    const options = read('binding.d.ts')
    const docs = [...options.matchAll(/Backend name: (.*) or one passed to `registerBackend\(\)`/g)].map((match) => quoted(match[1], '`'))
    // RelayRequest, from which RelayOptions and ReviewRelayOptions are made.
    expect(docs).toEqual([names])
    const index = read('lib/index.ts')
    expect(items(between(index, 'ask another coding agent (', ')')).filter((item) => item !== 'your own backend')).toEqual(names)
    expect(quoted(between(index, '/** Whether the ', ' CLIs are on'), '`').sort()).toEqual([...names].sort())
  })

  it("README's backends and install hints", () => {
    const readme = read('README.md')
    const intro = between(readme, 'hands it to a backend: ', 'or a backend you write in JavaScript')
    expect(quoted(intro, '`')).toEqual(clis)
    for (const backend of table.filter((b) => b.reach === 'server')) expect(intro).toContain(backend.what)
    const requirements = between(readme, 'Backends you want to use:', '## Install')
    const hints = [...requirements.matchAll(/`(npm install -g [^`]+)`|\]\(([^)]+)\)/g)].map((match) => match[1] ?? match[2])
    expect(hints).toEqual(table.map((backend) => backend.install))
  })

  it("docs/API.md's option comment and checkBackends() row", () => {
    const api = read('docs/API.md')
    expect(quoted(between(api, "backend: 'gemini',", '\n'), "'")).toEqual(names)
    expect(quoted(between(api, '| whether the ', ' CLIs are on'), '`').sort()).toEqual([...names].sort())
  })

  it("docs/USING-BACKENDS.md's table of built-in backends and their install hints", () => {
    const backends = read('docs/USING-BACKENDS.md')
    const rows = between(backends, '| backend | needs | run | review |\n|---|---|---|---|\n', '\n\n').split('\n')
    expect(rows.map((row) => quoted(row.split('|')[1], '`')[0])).toEqual(names)
    for (const [i, backend] of table.entries()) {
      if (backend.reach !== 'cli') continue
      expect(rows[i], backend.name).toContain(`\`${backend.install}\``)
      // A CLI never run here names the version of the documentation it was checked against.
      if (!backend.verifiedVersion) {
        expect(rows[i], backend.name).toContain(`not tested: checked against the documentation of ${backend.executable} ${backend.documentedVersion}`)
        continue
      }
      // "tested with 0.169" names the verified version, trailing `.0`s left out.
      const tested = /tested with ([\d.]+)/.exec(rows[i])?.[1]
      expect(tested, backend.name).toBeDefined()
      expect(`${tested}.0.0`.split('.').slice(0, 3).join('.'), backend.name).toBe(backend.verifiedVersion)
    }
  })

  it("the CLI's help", () => {
    for (const help of [HELP, COMMAND_HELP.relay]) {
      expect(items(between(help, '-t, --to <backend>', '\n'))).toEqual(names)
    }
    // Each backend's paragraph starts on a line of its own, indented by two.
    const doctor = between(COMMAND_HELP.doctor, '--json]\n\n', '-m, --model')
    const heads = doctor.split('\n').filter((line) => /^ {2}\S/.test(line))
    expect(heads.map((line) => items(line.trim().split(/\s{2,}/)[0]))).toEqual([clis, servers])
  })

  it('the CLI doctor repeats no install hint: it reads them from the table', () => {
    const doctor = read('lib/cli/doctor.ts')
    for (const backend of table) expect(doctor).not.toContain(backend.install)
  })
})
