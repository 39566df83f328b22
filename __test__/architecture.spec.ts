// docs/ARCHITECTURE.md kept true: the layers it draws are those of the import graph (each module
// uses only modules of the rows above its own), and every file, module, type and function it
// names in backticks exists in the sources.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type Graph, ROOT, rustGraph, tsGraph } from './support/module-graph.js'

const DOC = readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8')

/** The rows of the table whose header row starts with `| <first> |`: each row's cells. */
function table(first: string): string[][] {
  const lines = DOC.split('\n')
  const start = lines.findIndex((line) => line.startsWith(`| ${first} |`))
  const rows: string[][] = []
  for (let i = start + 2; start >= 0 && i < lines.length && lines[i].startsWith('|'); i++) {
    rows.push(lines[i].split('|').slice(1, -1).map((cell) => cell.trim()))
  }
  return rows
}

/** What `text` names in backticks, fenced code blocks left out. */
const backticked = (text: string): string[] => [...text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`]+)`/g)].map((match) => match[1])

/**
 * Where the layers table and the graph disagree: a module no row names, or an edge from a row
 * to its own row or one below it. A row's entry names a module and the modules inside it that
 * no other entry names (`a::*`: those inside `a` only).
 */
function layerFaults(graph: Graph, rows: string[][]): string[] {
  const entries = rows.flatMap((cells, level) => backticked(cells[1]).map((name) => ({ name: name.replace(/::\*$/, ''), level })))
  const entryOf = (module: string): { name: string; level: number } | undefined =>
    entries.filter(({ name }) => module === name || module.startsWith(`${name}::`) || module.startsWith(`${name}/`)).sort((a, b) => b.name.length - a.name.length)[0]
  const faults: string[] = []
  for (const [module, uses] of graph) {
    // The crate's root only declares the modules.
    if (module === 'lib') continue
    const from = entryOf(module)
    if (from === undefined) {
      faults.push(`${module}: in no row`)
      continue
    }
    for (const used of uses) {
      const to = entryOf(used)
      if (to === undefined || to.name === from.name) continue
      if (to.level >= from.level) faults.push(`${module} (${rows[from.level][0]}) uses ${used} (${rows[to.level][0]})`)
    }
  }
  return faults.sort()
}

/** The tracked files, as paths from the repository's root. */
const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean)
const sources = tracked.filter((file) => /\.(rs|ts|mjs|cjs|js|sh|toml|json)$/.test(file) && !file.startsWith('docs/') && !file.endsWith('.md'))
const code = sources.map((file) => readFileSync(join(ROOT, file), 'utf8')).join('\n')

describe('docs/ARCHITECTURE.md', () => {
  it("draws the core's layers as the import graph has them", () => {
    const rows = table('level').filter(([level]) => level !== '(addon)')
    expect(rows.length).toBeGreaterThan(5)
    expect(layerFaults(rustGraph('crates/core/src'), rows)).toEqual([])
  })

  it("draws lib/'s layers as the import graph has them", () => {
    const rows = table('lib level')
    expect(rows.length).toBeGreaterThan(3)
    const name = (file: string): string => file.replace(/^lib\//, '').replace(/\.ts$/, '')
    const inLib = (file: string): boolean => file.startsWith('lib/')
    const graph: Graph = new Map([...tsGraph()].filter(([file]) => inLib(file)).map(([file, uses]) => [name(file), new Set([...uses].filter(inLib).map(name))]))
    expect(layerFaults(graph, rows)).toEqual([])
  })

  it('names only files that exist', () => {
    const named = backticked(DOC).filter((name) => /^[\w./-]+\.(rs|ts|mjs|cjs|js|sh|md|json)$/.test(name))
    expect(named.length).toBeGreaterThan(30)
    // `dist/` is the compiled `lib/`.
    const source = (name: string): string => name.replace(/^dist\/(.+)\.js$/, 'lib/$1.ts')
    const missing = named.filter((name) => !tracked.some((file) => file === source(name) || file.endsWith(`/${name}`)))
    expect(missing).toEqual([])
  })

  it('names only modules, types and functions that exist', () => {
    // Identifiers and paths of them (`a::b`, `Type.method`, `name()`); flags, values and
    // commands are not code names.
    const names = backticked(DOC)
      .map((name) => name.replace(/\(\)$/, ''))
      .filter((name) => /^[A-Za-z_]\w*((::|\.)[A-Za-z_]\w*)*$/.test(name) && !/\.(rs|ts|mjs|md|json)$/.test(name))
    expect(names.length).toBeGreaterThan(100)
    const missing = [...new Set(names)].filter((name) => {
      const last = name.split(/::|\./).at(-1) ?? name
      return !new RegExp(`\\b${last}\\b`).test(code)
    })
    expect(missing).toEqual([])
  })
})
