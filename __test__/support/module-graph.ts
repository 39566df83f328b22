// The module graph of the sources: Rust (`crate::`/`super::` paths of a crate's modules) and
// TypeScript (lib/: relative imports); test-only code does not count. Read by
// module-cycles.spec.ts (no cycles) and architecture.spec.ts (the layers docs/ARCHITECTURE.md draws).
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export const ROOT = resolve(__dirname, '..', '..')

export function filesUnder(dir: string, extension: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(extension))
    .map((entry) => join(entry.parentPath, entry.name))
}

export type Graph = Map<string, Set<string>>

/** Every cycle's path, each found once from its first module (e.g. `a -> b -> a`). */
export function cycles(graph: Graph): string[] {
  const found: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (node: string): void => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next].join(' -> '))
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(node, 'done')
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node)
  return found
}

/** `<crate>/a/b.rs` -> `a::b`, `<crate>/a/mod.rs` -> `a`. */
function rustModuleOf(crate: string, file: string): string {
  const path = relative(crate, file).replace(/\.rs$/, '').replace(/\/mod$/, '')
  return path.split('/').join('::')
}

/** The source without `#[cfg(test)]` items: an inline module or function is skipped to its
 *  closing brace, `mod tests;` to its semicolon (its file is test-only). */
function withoutTestItems(source: string): { code: string; testFiles: string[] } {
  const lines = source.split('\n')
  const kept: string[] = []
  const testFiles: string[] = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '#[cfg(test)]') {
      kept.push(lines[i])
      continue
    }
    let path: string | undefined
    i++
    while (i < lines.length && lines[i].trim().startsWith('#[')) {
      path = /#\[path = "(.+)"\]/.exec(lines[i])?.[1] ?? path
      i++
    }
    const declared = /^\s*(?:pub(?:\(crate\))? )?mod (\w+);/.exec(lines[i])
    if (declared) {
      testFiles.push(path ?? `${declared[1]}.rs`)
      continue
    }
    let depth = 0
    for (; i < lines.length; i++) {
      depth += (lines[i].match(/\{/g) ?? []).length - (lines[i].match(/\}/g) ?? []).length
      if (depth === 0 && lines[i].includes('}')) break
    }
  }
  return { code: kept.join('\n'), testFiles }
}

/** The graph of one crate's modules, `src` its source folder. */
export function rustGraph(src: string): Graph {
  const crate = join(ROOT, src)
  const rustModule = (file: string): string => rustModuleOf(crate, file)
  const files = filesUnder(crate, '.rs').filter((file) => !file.endsWith('/main.rs'))
  const modules = new Set(files.map(rustModule))
  const sources = new Map<string, string>()
  const testOnly = new Set<string>()
  for (const file of files) {
    const { code, testFiles } = withoutTestItems(readFileSync(file, 'utf8'))
    sources.set(file, code)
    for (const test of testFiles) testOnly.add(join(dirname(file), test))
  }
  // The longest known module that `path` (segments from the crate root) names or is inside.
  const owner = (path: string[]): string | undefined => {
    for (let n = path.length; n > 0; n--) {
      const module = path.slice(0, n).join('::')
      if (modules.has(module)) return module
    }
    return undefined
  }
  const graph: Graph = new Map()
  for (const [file, code] of sources) {
    if (testOnly.has(file) || file.endsWith('/tests.rs')) continue
    const self = rustModule(file)
    const segments = self === 'lib' ? [] : self.split('::')
    const edges = new Set<string>()
    const paths = code
      .replace(/\/\/.*$/gm, '')
      .matchAll(/(?<![\w:])((?:crate|super|self|\w+)(?:::\w+)+)/g)
    for (const [path] of paths) {
      const [head, ...rest] = path.split('::')
      let absolute: string[] | undefined
      if (head === 'crate') absolute = rest
      else if (head === 'super') absolute = [...segments.slice(0, -1), ...rest]
      else if (head === 'self') absolute = [...segments, ...rest]
      else if (modules.has([...segments, head].join('::'))) absolute = [...segments, head, ...rest]
      const target = absolute && owner(absolute)
      if (target && target !== self && target !== 'lib') edges.add(target)
    }
    graph.set(self, edges)
  }
  return graph
}

export function tsGraph(): Graph {
  const files = filesUnder(join(ROOT, 'lib'), '.ts')
  const graph: Graph = new Map()
  for (const file of files) {
    const edges = new Set<string>()
    const imports = readFileSync(file, 'utf8').matchAll(/(?:from|import)\s+'(\.{1,2}\/[^']+)'/g)
    for (const [, specifier] of imports) {
      // `import type` is erased, but a cycle of types is still a cycle of ideas: counted too.
      edges.add(relative(ROOT, resolve(dirname(file), specifier.replace(/\.js$/, '.ts'))))
    }
    graph.set(relative(ROOT, file), edges)
  }
  return graph
}

