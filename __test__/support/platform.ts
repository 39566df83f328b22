// The native files these tests run: the addon binding.js loads on this machine, and the supervisor
// it finds beside it (crates/core/src/supervisor.rs). On x64 they are what `npm run build` leaves at
// the root; under `npm run test:arm64` (docs/DEVELOPMENT.md, "linux-arm64 under qemu") the arm64
// Node loads the arm64 addon, from the root or from the folder NAPI_RS_NATIVE_LIBRARY_PATH names.
import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, openSync, readSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { supervisorTriple } from '../../scripts/supervisor-triple.mjs'

const ROOT = resolve(__dirname, '..', '..')
export const SUPERVISOR_NAME = 'phone-a-friend-supervisor'

/**
 * napi's name for this platform (`linux-x64-gnu`, `linux-x64-musl`, `darwin-arm64`,
 * `win32-x64-msvc`): the platform package's suffix, as binding.js picks it (a Linux without glibc
 * is musl), so that the hosted CI's Alpine job (docs/DEVELOPMENT.md, "Hosted CI") names its addon.
 */
export const PLATFORM = napiPlatform()

function napiPlatform(): string {
  if (process.platform === 'linux') {
    const { header } = process.report.getReport() as { header?: { glibcVersionRuntime?: string } }
    return `linux-${process.arch}-${header?.glibcVersionRuntime === undefined ? 'musl' : 'gnu'}`
  }
  return process.platform === 'win32' ? `win32-${process.arch}-msvc` : `${process.platform}-${process.arch}`
}

/** The addon binding.js loads here. */
export const ADDON = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ?? join(ROOT, `relay.${PLATFORM}.node`)

/** The supervisor the addon runs CLI backends under: the one beside it. */
export const SUPERVISOR = join(dirname(ADDON), SUPERVISOR_NAME)

const ELF_MACHINE: Record<string, number> = { x64: 62, arm64: 183 }
const TRIPLE: Record<string, string> = { x64: 'x86_64-unknown-linux-gnu', arm64: 'aarch64-unknown-linux-gnu' }

function isElfFor(file: string, arch: string): boolean {
  const header = Buffer.alloc(20)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, header, 0, 20, 0)
  } finally {
    closeSync(fd)
  }
  return header.readUInt32BE(0) === 0x7f454c46 && header.readUInt16LE(18) === ELF_MACHINE[arch]
}

/**
 * The supervisor built for this machine's arch, to ship in its platform package: the one at the root
 * if it is for this arch (`npm run build:supervisor`), else `npm run build:targets`'.
 */
export function supervisorForThisArch(): string {
  const candidates = [join(ROOT, SUPERVISOR_NAME), join(ROOT, 'target', 'supervisor', supervisorTriple(TRIPLE[process.arch] ?? ''), 'release', SUPERVISOR_NAME)]
  const found = candidates.find((file) => existsSync(file) && isElfFor(file, process.arch))
  if (found === undefined) throw new Error(`no ${SUPERVISOR_NAME} built for ${process.arch}: looked at ${candidates.join(', ')}`)
  return found
}

/**
 * Why `supervisor` cannot start a program here, or undefined when it can. Asked only under qemu-user
 * (`npm run test:arm64` sets PAF_QEMU): Debian's qemu 7.2 refuses `prctl(PR_SET_CHILD_SUBREAPER)`
 * with EINVAL, which the supervisor needs (docs/ARCHITECTURE.md §4); real arm64 kernels have it.
 * Any other failure is not excused: the tests then run and fail.
 */
function subreaperRefused(supervisor: string): string | undefined {
  if (process.env.PAF_QEMU === undefined || !existsSync(supervisor)) return undefined
  const probe = spawnSync(supervisor, ['--parent', String(process.pid), '--', 'true'], { encoding: 'utf8', timeout: 30_000 })
  if (probe.status === 0) return undefined
  const said = `${probe.stderr ?? ''}`.trim()
  return said.endsWith(': Invalid argument (os error 22)') ? said : undefined
}

const refusals = new Map<string, string | undefined>()

/**
 * True when the tests of `what`, which need `supervisor` (default: the one beside the addon) to be
 * a child subreaper, must be skipped because qemu-user refuses it; says so on stderr.
 */
export function skipWithoutSubreaper(what: string, supervisor = SUPERVISOR): boolean {
  if (!refusals.has(supervisor)) refusals.set(supervisor, subreaperRefused(supervisor))
  const refused = refusals.get(supervisor)
  if (refused !== undefined) {
    console.warn(`[qemu: skipped] ${what}: ${supervisor} cannot start here ("${refused}"): qemu-user does not implement prctl(PR_SET_CHILD_SUBREAPER); see docs/DEVELOPMENT.md`)
  }
  return refused !== undefined
}
