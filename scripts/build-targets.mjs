#!/usr/bin/env node
// `npm run build:targets [-- --target <triple>...] [-- --check]`: the release addon and the process
// supervisor for every target of package.json's `napi.targets` (or the ones named), from this Linux
// x64 machine, with the toolchains scripts/platforms/cross-setup.sh installs. Per target:
//
//   relay.<platform>.node                                     at the root, as `napi build --platform`
//                                                             names it
//   target/supervisor/<triple>/release/phone-a-friend-supervisor   (not on Windows), where
//                                                             scripts/release-assemble.mjs looks;
//                                                             on Linux <triple> is the musl one of
//                                                             the arch (scripts/supervisor-triple.mjs)
//
// How each target links (docs/DEVELOPMENT.md, "Every target"):
//   linux gnu      zig (`napi build -x --target <triple>.2.17`, cargo-zigbuild) against glibc 2.17's
//                  symbol versions, so it loads on any glibc from 2.17 (napi-rs's floor; the host's
//                  cc would tie it to this machine's 2.36); the supervisor is the musl one
//   linux musl     zig (`napi build -x`, cargo-zigbuild); supervisor static, linked by zig, and
//                  shipped in the gnu package of its arch too
//   darwin         zig: the addon is a cdylib with napi's dyn-symbols, so it needs no Node library,
//                  and zig cc compiles ring's C without an Apple SDK; the supervisor links libSystem
//                  (macOS has no static libc). MACOSX_DEPLOYMENT_TARGET sets the oldest macOS
//                  (zig's default is its newest)
//   windows msvc   built with the x86_64-pc-windows-gnu toolchain (mingw) and named
//                  relay.win32-x64-msvc.node, the name binding.js loads on a standard node.exe: Node
//                  calls it through N-API's C ABI only. No supervisor (Windows uses a Job Object).
//
// Every binary built is then read by crates/binary-facts against its target's floor (the newest
// glibc symbol versions, macOS minimum and code signature, the libraries or DLLs it may load),
// and the figures go in the summary.
//
// `--check` runs `cargo clippy --workspace --all-targets -- -D warnings` for each target instead
// of building it (what CI can afford for the targets it does not link).
// Every target is tried; the summary says which failed and why, and the exit code is 1 if any did.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, renameSync, statSync } from 'node:fs'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseTriple } from '@napi-rs/cli'
import { supervisorTriple } from './supervisor-triple.mjs'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const SUPERVISOR = 'phone-a-friend-supervisor'
/** Where cross-setup.sh links zig and cargo-zigbuild (pip puts them where PATH may not look). */
const TOOLS = join(ROOT, 'target', 'platforms', 'bin')
const SETUP = 'bash scripts/platforms/cross-setup.sh --no-qemu'
/** The oldest glibc the linux-gnu binaries load on (napi-rs's); crates/binary-facts checks it. */
const GLIBC_FLOOR = '2.17'
/** The oldest macOS per darwin arch: 11.0 is the first on arm64; Node 20 runs on x64 from 10.15. */
const MACOS_FLOOR = { arm64: '11.0', x64: '10.15' }

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const binaryName = pkg.napi.binaryName

function usage(message) {
  console.error(`build:targets: ${message}`)
  console.error('usage: npm run build:targets [-- [--check] [--target <triple>]...]')
  console.error(`targets (package.json napi.targets): ${pkg.napi.targets.join(', ')}`)
  process.exit(2)
}

function parseArgs(argv) {
  const wanted = []
  let check = false
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--check') check = true
    else if (argv[i] === '--target' || argv[i] === '-t') {
      const triple = argv[++i]
      if (triple === undefined) usage('--target needs a triple')
      if (!pkg.napi.targets.includes(triple)) usage(`${triple} is not in package.json napi.targets`)
      wanted.push(triple)
    } else usage(`unknown argument ${argv[i]}`)
  }
  return { check, triples: wanted.length > 0 ? wanted : pkg.napi.targets }
}

const HOST_ARCH = { x64: 'x86_64', arm64: 'aarch64' }[process.arch]

/**
 * How `triple` is built here: the triple cargo compiles, the tool that links it, the supervisor's
 * linking (or none; a static one is the musl build, linked by zig), and the environment that
 * points cargo and the cc crate at the cross tools.
 */
function planFor(triple) {
  const target = parseTriple(triple)
  const cargoEnv = (cargoTriple, tool) => {
    const key = cargoTriple.replaceAll('-', '_')
    return {
      [`CARGO_TARGET_${key.toUpperCase()}_LINKER`]: `${tool}-gcc`,
      [`CC_${key}`]: `${tool}-gcc`,
      [`AR_${key}`]: `${tool}-ar`,
    }
  }
  const addon = `${binaryName}.${target.platformArchABI}.node`
  if (target.platform === 'linux' && target.abi === 'gnu') {
    // cargo-zigbuild reads the suffix as the glibc to link against; cargo builds the bare triple.
    return { target, addon, cargoTriple: triple, zigTarget: `${triple}.${GLIBC_FLOOR}`, linker: 'zig', zig: true, supervisor: 'static', floor: 'linux-gnu', env: {} }
  }
  if (target.platform === 'linux' && target.abi === 'musl') {
    return { target, addon, cargoTriple: triple, linker: 'zig', zig: true, supervisor: 'static', floor: 'linux-musl', env: {} }
  }
  if (target.platform === 'darwin') {
    // Read by rustc, by cargo-zigbuild (which makes it zig's target version) and by the cc crate.
    const env = { MACOSX_DEPLOYMENT_TARGET: MACOS_FLOOR[target.arch] }
    return { target, addon, cargoTriple: triple, linker: 'zig', zig: true, supervisor: 'libSystem', floor: `darwin-${target.arch}`, env }
  }
  if (triple === 'x86_64-pc-windows-msvc') {
    const cargoTriple = 'x86_64-pc-windows-gnu'
    return { target, addon, cargoTriple, linker: 'x86_64-w64-mingw32', zig: false, supervisor: null, floor: 'windows', env: cargoEnv(cargoTriple, 'x86_64-w64-mingw32') }
  }
  return null
}

/** PATH with the cross tools first; fails naming what is missing. */
function toolsPath(plans) {
  const PATH = [TOOLS, process.env.PATH].join(delimiter)
  const need = new Set()
  for (const plan of plans) {
    if (plan.zig || plan.supervisor === 'static') need.add('zig').add('cargo-zigbuild')
    if (plan.linker !== 'cc' && plan.linker !== 'zig') need.add(`${plan.linker}-gcc`)
  }
  const missing = [...need].filter((tool) => !PATH.split(delimiter).some((dir) => existsSync(join(dir, tool))))
  if (missing.length > 0) {
    console.error(`build:targets: missing ${missing.join(', ')}: run ${SETUP}`)
    process.exit(1)
  }
  return PATH
}

function run(command, args, env) {
  console.log(`\n> ${Object.entries(env.shown ?? {}).map(([k, v]) => `${k}=${v} `).join('')}${command} ${args.join(' ')}`)
  execFileSync(command, args, { cwd: ROOT, stdio: 'inherit', env: env.full })
}

function timed(step) {
  const start = process.hrtime.bigint()
  step()
  return Number(process.hrtime.bigint() - start) / 1e9
}

/** `readelf -d` NEEDED entries and whether the file asks for an ELF interpreter (not static). */
function elfLinking(file) {
  const dynamic = execFileSync('readelf', ['-d', file], { encoding: 'utf8' })
  const needed = [...dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1])
  const interpreter = /Requesting program interpreter/.test(execFileSync('readelf', ['-l', file], { encoding: 'utf8' }))
  return { needed, interpreter }
}

/** crates/binary-facts, built for this machine once per run (a debug build: seconds). */
function binaryFactsTool() {
  execFileSync('cargo', ['build', '--quiet', '-p', 'binary-facts'], { cwd: ROOT, stdio: 'inherit' })
  return join(ROOT, 'target', 'debug', 'binary-facts')
}

/**
 * Reads `file` against `floor` (crates/binary-facts: linux-gnu, linux-musl, darwin-arm64,
 * darwin-x64, windows): returns its line of facts, and throws with every way it asks for more.
 */
function checkFloor(tool, floor, file) {
  try {
    return execFileSync(tool, ['--floor', floor, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim().replace(`${file}: `, '')
  } catch (error) {
    throw new Error(`${file} fails the ${floor} floor:\n${`${error.stdout ?? ''}${error.stderr ?? error.message}`.trim()}`)
  }
}

/**
 * Loads a musl addon with musl's own loader (scripts/platforms/musl-load.c), which binds every
 * symbol at load time: a glibc-only symbol fails here. There is no musl Node on npm to load it in.
 */
function muslLoad(addon) {
  const probe = join(ROOT, 'target', 'platforms', 'musl-load')
  try {
    execFileSync('musl-gcc', ['-O2', '-o', probe, join(ROOT, 'scripts', 'platforms', 'musl-load.c')], { stdio: 'inherit' })
  } catch (error) {
    if (error.code === 'ENOENT') return 'not load-checked: musl-gcc missing (musl-tools)'
    throw error
  }
  try {
    execFileSync(probe, [addon], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    throw new Error(`musl's loader refuses ${addon}: ${`${error.stderr ?? error.message}`.trim()}`)
  }
  return "loads with musl's loader"
}

function build(plan, env, factsTool) {
  const { target, cargoTriple } = plan
  const result = { triple: target.triple, addon: plan.addon }
  const napiArgs = ['napi', 'build', '--platform', '--release', '--no-const-enum', '--js', 'binding.js', '--dts', 'binding.d.ts', '--target', plan.zigTarget ?? cargoTriple]
  if (plan.zig) napiArgs.push('--cross-compile')
  result.addonSeconds = timed(() => run('npx', napiArgs, env))
  if (cargoTriple !== target.triple) {
    // napi names the file after the triple it built; binding.js looks for the target's name.
    renameSync(join(ROOT, `${binaryName}.${parseTriple(cargoTriple).platformArchABI}.node`), join(ROOT, plan.addon))
  }
  result.addonBytes = statSync(join(ROOT, plan.addon)).size
  // The libraries it may load (the C library's own parts; Windows' own DLLs, no mingw runtime),
  // the newest glibc symbol versions, the macOS minimum and code signature.
  result.addonFacts = checkFloor(factsTool, plan.floor, join(ROOT, plan.addon))
  if (target.platform === 'linux' && target.abi === 'musl' && target.triple.startsWith(`${HOST_ARCH}-`)) result.addonLoads = muslLoad(join(ROOT, plan.addon))
  if (plan.supervisor !== null) {
    // The supervisor starts once per relay: static, it skips the dynamic loader (BENCHMARKS.md).
    const triple = supervisorTriple(cargoTriple)
    const linkedByZig = plan.zig || plan.supervisor === 'static'
    const supervisorArgs = [linkedByZig ? 'zigbuild' : 'build', '--release', '-p', SUPERVISOR, '--target', triple, '--target-dir', 'target/supervisor']
    result.supervisorSeconds = timed(() => run('cargo', supervisorArgs, env))
    const file = join(ROOT, 'target', 'supervisor', triple, 'release', SUPERVISOR)
    result.supervisorBytes = statSync(file).size
    if (plan.supervisor === 'static') {
      const { needed, interpreter } = elfLinking(file)
      if (needed.length > 0 || interpreter) throw new Error(`${file} is not static: needs ${needed.join(', ') || 'an interpreter'}`)
      result.supervisorLinking = 'static'
    } else {
      result.supervisorLinking = plan.supervisor
      result.supervisorFacts = checkFloor(factsTool, plan.floor, file)
    }
  }
  return result
}

function check(plan, env) {
  // cargo-zigbuild's clippy puts zig cc in place for the build scripts that compile C (ring).
  const command = plan.zig ? 'cargo-zigbuild' : 'cargo'
  const args = ['clippy', '--workspace', '--all-targets', '--target', plan.cargoTriple, '--', '-D', 'warnings']
  return { triple: plan.target.triple, checkSeconds: timed(() => run(command, args, env)) }
}

const { check: checkOnly, triples } = parseArgs(process.argv.slice(2))
const plans = triples.map((triple) => planFor(triple) ?? usage(`no recipe for ${triple} here (see scripts/build-targets.mjs)`))
const PATH = toolsPath(plans)
const factsTool = checkOnly ? null : binaryFactsTool()
const results = []
for (const plan of plans) {
  const env = { shown: plan.env, full: { ...process.env, ...plan.env, PATH } }
  console.log(`\n=== ${plan.target.triple}${plan.cargoTriple !== plan.target.triple ? ` (built as ${plan.cargoTriple})` : ''}: ${checkOnly ? 'clippy' : 'build'}, linked by ${plan.linker}`)
  try {
    results.push(checkOnly ? check(plan, env) : build(plan, env, factsTool))
  } catch (error) {
    // execFileSync's message starts "Command failed: <command line>"; the command's own output is above.
    const why = typeof error.status === 'number' ? `${error.message.split('\n')[0]}: exit ${error.status} (its output is above)` : error.message
    console.error(`\nbuild:targets: ${plan.target.triple} FAILED: ${why}`)
    results.push({ triple: plan.target.triple, failed: why })
  }
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`
const s = (seconds) => `${seconds.toFixed(0)} s`
console.log('\n=== build:targets summary')
for (const r of results) {
  if (r.failed) console.log(`  ${r.triple}: FAILED (${r.failed})`)
  else if (checkOnly) console.log(`  ${r.triple}: clippy clean, ${s(r.checkSeconds)}`)
  else {
    const supervisor = r.supervisorBytes === undefined ? 'no supervisor' : `supervisor ${mb(r.supervisorBytes)} ${r.supervisorLinking} in ${s(r.supervisorSeconds)}`
    console.log(`  ${r.triple}: ${r.addon} ${mb(r.addonBytes)} in ${s(r.addonSeconds)}${r.addonLoads ? `, ${r.addonLoads}` : ''}; ${supervisor}`)
    console.log(`    addon: ${r.addonFacts}`)
    if (r.supervisorFacts) console.log(`    supervisor: ${r.supervisorFacts}`)
  }
}
const failed = results.filter((r) => r.failed).map((r) => r.triple)
if (failed.length > 0) {
  console.error(`build:targets: ${failed.length} of ${results.length} failed: ${failed.join(', ')}`)
  process.exit(1)
}
