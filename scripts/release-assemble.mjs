#!/usr/bin/env node
// `npm run release:assemble [-- --all]`: the packages to publish, assembled under release/ (git-ignored)
// from what `npm run build` left in the repository:
//
//   release/                 @phone-a-friend/relay: the files its `files` field packs, and a package.json
//                            with `optionalDependencies` on each platform package below, at the same version
//   release/npm/<platform>/  @phone-a-friend/relay-<platform>, one per target of package.json's
//                            `napi.targets` that has been built: the addon relay.<platform>.node and the
//                            process supervisor phone-a-friend-supervisor (none on Windows, where a Job
//                            Object does its work)
//
// Publish the platform packages first, then the main one:
//   npm publish release/npm/<platform>   (each)
//   npm publish release
//
// napi's own commands do the napi part, on the staged copy: `create-npm-dirs` writes the platform
// manifests from the main one (so `napi.targets` is the one list of platforms), `artifacts` copies
// the addons in, `pre-publish --skip-optional-publish` checks the platform packages and writes the
// main package's `optionalDependencies`. This script adds the supervisor, which napi knows nothing of,
// and LICENSE. It builds nothing, and refuses a dist/ that is not what tsc makes of lib/ now.
// The staged main package names only the targets built here; `--all` fails unless every target is.
// `--out <folder>` stages elsewhere than release/ (a folder that is absent or empty).
import { execFileSync } from 'node:child_process'
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NapiCli, parseTriple } from '@napi-rs/cli'
import { supervisorTriple } from './supervisor-triple.mjs'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const out = process.argv.indexOf('--out')
const STAGE = out === -1 ? join(ROOT, 'release') : resolve(process.argv[out + 1] ?? '')
const SUPERVISOR = 'phone-a-friend-supervisor'
/** ELF `e_machine` of each Node arch the supervisor may be built for. */
const ELF_MACHINE = { x64: 62, arm64: 183, ia32: 3, arm: 40, riscv64: 243, ppc64: 21, s390x: 22, loong64: 258 }
/** Mach-O `cputype` (64-bit ABI flag included) of each Node arch macOS runs. */
const MACHO_CPU = { x64: 0x01000007, arm64: 0x0100000c }

function fail(message) {
  console.error(`release:assemble: ${message}`)
  process.exit(1)
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const writeJson = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)

/** The first 20 bytes of `file`: enough for an ELF or Mach-O header's machine field. */
function header(file) {
  const bytes = Buffer.alloc(20)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, bytes, 0, 20, 0)
  } finally {
    closeSync(fd)
  }
  return bytes
}

/** Whether `file` is an executable for `target`'s OS and arch (the supervisor at the root is for one target only). */
function isExecutableFor(file, target) {
  const bytes = header(file)
  if (target.platform === 'darwin') return bytes.readUInt32LE(0) === 0xfeedfacf && bytes.readUInt32LE(4) === MACHO_CPU[target.arch]
  if (bytes.readUInt32BE(0) !== 0x7f454c46) return false
  const machine = bytes[5] === 2 ? bytes.readUInt16BE(18) : bytes.readUInt16LE(18)
  return machine === ELF_MACHINE[target.arch]
}

/** Windows needs no supervisor: a Job Object does its work (docs/ARCHITECTURE.md §4). */
const needsSupervisor = (target) => target.platform !== 'win32'

/**
 * The supervisor built for `target`: `npm run build:targets` leaves it in
 * target/supervisor/<its triple>/release/ (on Linux the musl triple of the arch, for the gnu and
 * musl packages alike: scripts/supervisor-triple.mjs), and so does `npm run build:supervisor` for
 * the host, which also copies it to the root, taken for a Linux target of its arch.
 */
function supervisorFor(target) {
  const candidates = [join(ROOT, 'target', 'supervisor', supervisorTriple(target.triple), 'release', SUPERVISOR)]
  if (target.platform === 'linux') candidates.push(join(ROOT, SUPERVISOR))
  return candidates.find((file) => existsSync(file) && isExecutableFor(file, target))
}

/**
 * dist/ is what `npm run build` makes of lib/ now: no source newer than its output (for the
 * sources scripts/bundle-core.mjs put in dist/internal/core.js, that file), no output without a
 * source, and the bundle made.
 */
function checkDist() {
  const lib = join(ROOT, 'lib')
  const dist = join(ROOT, 'dist')
  if (!existsSync(join(dist, 'index.js'))) fail('dist/ is missing: run npm run build')
  const record = join(dist, 'internal', 'core.bundle.json')
  if (!existsSync(record)) fail('dist/internal/core.js is not bundled: run npm run build')
  const bundled = new Set(readJson(record).sources)
  const sources = readdirSync(lib, { recursive: true }).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
  for (const source of sources) {
    const output = join(dist, bundled.has(source) ? 'internal/core.js' : source.replace(/\.ts$/, '.js'))
    if (!existsSync(output) || statSync(output).mtimeMs < statSync(join(lib, source)).mtimeMs) fail(`dist/ is older than lib/${source}: run npm run build`)
  }
  const outputs = readdirSync(dist, { recursive: true }).filter((file) => file.endsWith('.js'))
  const stray = outputs.find((output) => !sources.includes(output.replace(/\.js$/, '.ts')))
  if (stray !== undefined) fail(`dist/${stray} has no source in lib/ and would be published: delete dist/ and run npm run build`)
}

const pkg = readJson(join(ROOT, 'package.json'))
const binaryName = pkg.napi.binaryName
const targets = pkg.napi.targets.map(parseTriple)
const addonOf = (target) => `${binaryName}.${target.platformArchABI}.node`
const built = targets.filter((target) => existsSync(join(ROOT, addonOf(target))))
const unbuilt = targets.filter((target) => !built.includes(target))

if (built.length === 0) fail(`no target of napi.targets is built (${targets.map(addonOf).join(', ')} missing): run npm run build`)
if (unbuilt.length > 0 && process.argv.includes('--all')) fail(`not built: ${unbuilt.map((target) => target.triple).join(', ')}`)
checkDist()
const supervisors = new Map(built.filter(needsSupervisor).map((target) => [target, supervisorFor(target)]))
for (const [target, supervisor] of supervisors) {
  if (supervisor === undefined) fail(`no ${SUPERVISOR} built for ${target.triple} (at the root or in target/supervisor/${target.triple}/release/): run npm run build:supervisor`)
}

if (out !== -1 && existsSync(STAGE) && readdirSync(STAGE).length > 0) fail(`--out ${STAGE}: not empty`)
rmSync(STAGE, { recursive: true, force: true })
mkdirSync(STAGE, { recursive: true })

// The main package: exactly what npm packs from the repository, and a manifest for users.
const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }))[0].files
for (const { path } of packed) {
  if (path === 'package.json') continue
  mkdirSync(dirname(join(STAGE, path)), { recursive: true })
  copyFileSync(join(ROOT, path), join(STAGE, path))
}
const { scripts, devDependencies, overrides, ...manifest } = pkg
void scripts, void devDependencies, void overrides
manifest.napi = { ...pkg.napi, targets: built.map((target) => target.triple) }
writeJson(join(STAGE, 'package.json'), manifest)

const napi = new NapiCli()
await napi.createNpmDirs({ cwd: STAGE })

// The addons, through napi's artifacts command from a folder of the built ones.
const artifacts = join(STAGE, 'artifacts')
mkdirSync(artifacts)
for (const target of built) copyFileSync(join(ROOT, addonOf(target)), join(artifacts, addonOf(target)))
await napi.artifacts({ cwd: STAGE, outputDir: 'artifacts' })
rmSync(artifacts, { recursive: true })
// napi artifacts also copies each addon beside the main package.json, for a local load: not shipped.
for (const target of built) rmSync(join(STAGE, addonOf(target)), { force: true })

for (const target of built) {
  const dir = join(STAGE, 'npm', target.platformArchABI)
  const supervisor = supervisors.get(target)
  if (supervisor !== undefined) {
    copyFileSync(supervisor, join(dir, SUPERVISOR))
    chmodSync(join(dir, SUPERVISOR), 0o755)
  }
  copyFileSync(join(ROOT, 'LICENSE'), join(dir, 'LICENSE')) // npm packs it; MIT asks for it with every copy
  const platformManifest = readJson(join(dir, 'package.json'))
  platformManifest.description =
    supervisor === undefined ? `The ${target.triple} addon of ${pkg.name}` : `The ${target.triple} addon and process supervisor of ${pkg.name}`
  if (supervisor !== undefined) platformManifest.files = [...new Set([...platformManifest.files, SUPERVISOR])]
  writeJson(join(dir, 'package.json'), platformManifest)
}

await napi.prePublish({ cwd: STAGE, skipOptionalPublish: true, ghRelease: false })

// What each package will publish, as npm packs it.
const show = (dir) => (relative(process.cwd(), dir).startsWith('..') ? dir : relative(process.cwd(), dir) || '.')
const contents = (dir) => JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, encoding: 'utf8' }))[0]
const summary = [STAGE, ...built.map((target) => join(STAGE, 'npm', target.platformArchABI))].map((dir) => {
  const { name, version, files, size } = contents(dir)
  return `  ${name}@${version}  ${(size / 1e6).toFixed(1)} MB packed, ${files.length} files  (${show(dir)})`
})
const shown = show(STAGE)
console.log(`Assembled in ${shown}:\n${summary.join('\n')}`)
if (unbuilt.length > 0) console.log(`Not built, so not assembled: ${unbuilt.map((target) => target.triple).join(', ')}`)
console.log(`Publish the platform packages first: npm publish ${join(shown, 'npm', '<platform>')}, then npm publish ${shown}`)
