// Bundles dist/internal/core.js (what tsc made of lib/internal/core.ts) with the modules it
// imports into that one file, and deletes those modules' own .js files: a first call then loads
// one module instead of sixteen (BENCHMARKS.md, "One file for the call's modules").
//
// Left outside, loaded by their own require() as before:
// - the modules the entry points load themselves (SHARED): one copy of each, so `instanceof
//   RelayError` holds for an error made in the bundle;
// - everything outside dist/internal (binding.js, package.json) and Node's own modules.
// Then every require() left in dist/ must name a file that exists: a module that still needs a
// deleted one fails the build here rather than a user's first call.
//
// Writes dist/internal/core.bundle.json, the sources now inside core.js, for release-assemble's
// check that dist/ is current.
import { build } from 'esbuild'
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const DIST = join(ROOT, 'dist')
const INTERNAL = join(DIST, 'internal')
const CORE = join(INTERNAL, 'core.js')
const BUNDLE_RECORD = join(INTERNAL, 'core.bundle.json')
const SHARED = new Set(['errors.js', 'limits.js'])

function fail(message) {
  console.error(`bundle-core: ${message}`)
  process.exit(1)
}

/** Bundles what is in dist/internal and not shared; leaves the rest to require() at run time. */
const keepShared = {
  name: 'keep-shared-modules-outside',
  setup(on) {
    on.onResolve({ filter: /^\.\.?\// }, ({ path, resolveDir }) => {
      const file = resolve(resolveDir, path)
      const inside = dirname(file) === INTERNAL && !SHARED.has(basename(file))
      return inside ? undefined : { path, external: true }
    })
  },
}

const { metafile } = await build({
  entryPoints: [CORE],
  outfile: CORE,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  packages: 'external',
  plugins: [keepShared],
  metafile: true,
  logLevel: 'warning',
})

const bundled = Object.keys(metafile.inputs).map((input) => resolve(ROOT, input)).filter((file) => file !== CORE)
for (const file of bundled) rmSync(file)
const sources = [CORE, ...bundled].map((file) => relative(DIST, file).split(sep).join('/').replace(/\.js$/, '.ts')).sort()
writeFileSync(BUNDLE_RECORD, `${JSON.stringify({ sources }, null, 2)}\n`)

const missing = []
for (const file of readdirSync(DIST, { recursive: true }).filter((name) => name.endsWith('.js'))) {
  const path = join(DIST, file)
  for (const [, target] of readFileSync(path, 'utf8').matchAll(/require\(["'](\.\.?\/[^"']+)["']\)/g)) {
    if (!existsSync(resolve(dirname(path), target))) missing.push(`dist/${file} requires ${target}`)
  }
}
if (missing.length > 0) fail(`modules need files the bundle replaced (load them through core.js):\n  ${missing.join('\n  ')}`)
console.log(`bundle-core: ${sources.length} modules in dist/internal/core.js`)
