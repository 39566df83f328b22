// The modules form a graph without cycles, in Rust (the core, crates/core/src/, and the addon,
// src/: a crate of its own each, so the addon can reach the core but never the reverse) and in
// TypeScript (lib/): a module only
// uses modules below it, so each can be read, tested and moved on its own. The graph is read from
// the sources (`crate::`/`super::` paths, relative imports); test-only code does not count.
import { describe, expect, it } from 'vitest'
import { cycles, rustGraph, tsGraph } from './support/module-graph.js'

describe('the module graph', () => {
  it('has no cycle among the Rust modules of the core', () => {
    const graph = rustGraph('crates/core/src')
    expect(graph.get('relay::prepare')?.has('backend')).toBe(true) // the reader sees the edges
    expect(cycles(graph)).toEqual([])
  })

  it('has no cycle among the Rust modules of the addon', () => {
    const graph = rustGraph('src')
    expect(graph.get('scope')?.has('call')).toBe(true) // the reader sees the edges
    expect(cycles(graph)).toEqual([])
  })

  it('has no cycle among the TypeScript modules', () => {
    const graph = tsGraph()
    expect(graph.get('lib/index.ts')?.size).toBeGreaterThan(0)
    expect(cycles(graph)).toEqual([])
  })
})
