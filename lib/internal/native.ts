import type * as Binding from '../../binding.js'

type BindingModule = typeof Binding

let loaded: BindingModule | undefined

/** The addon, loaded on first use: importing the package costs no native load (a few ms). */
function load(): BindingModule {
  if (loaded !== undefined) return loaded
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (loaded = require('../../binding.js') as BindingModule)
  } catch (error) {
    throw missingPlatformPackage(error) ?? error
  }
}

/* eslint-disable @typescript-eslint/no-require-imports */
/**
 * napi's loader, when this platform's package is not installed, says only "Cannot find native
 * binding" and blames an npm bug. This says which package is missing, why, and what to do
 * (`ERR_NATIVE_BINDING_MISSING`). A package that is installed but does not load keeps napi's error.
 */
function missingPlatformPackage(cause: unknown): Error | undefined {
  if (process.env.NAPI_RS_NATIVE_LIBRARY_PATH) return undefined
  const { name, optionalDependencies, napi } = require('../../package.json') as { name: string; optionalDependencies?: Record<string, string>; napi?: { binaryName?: string } }
  const platform = platformName()
  const wanted = `${name}-${platform}`
  // An addon beside binding.js (a build from source) that did not load: napi's error says why.
  const { existsSync } = require('node:fs') as typeof import('node:fs')
  const { join } = require('node:path') as typeof import('node:path')
  if (existsSync(join(__dirname, '..', '..', `${napi?.binaryName ?? 'relay'}.${platform}.node`))) return undefined
  try {
    require.resolve(`${wanted}/package.json`)
    return undefined
  } catch {
    // not installed: the case this is for
  }
  const { RelayError } = require('./errors.js') as typeof import('./errors.js')
  const published = Object.keys(optionalDependencies ?? {}).filter((dependency) => dependency.startsWith(`${name}-`))
  const message =
    published.length > 0 && !published.includes(wanted)
      ? `${name} has no native addon for this platform (${platform}): there is no package ${wanted}. ` +
        `It is built for ${published.map((dependency) => dependency.slice(name.length + 1)).join(', ')}.`
      : `${name} cannot load its native addon: the package ${wanted}, which holds it for this platform (${platform}), is not installed. ` +
        `npm installs it as an optional dependency: \`--omit=optional\` (or omit=optional in the npm config) leaves it out, ` +
        `and so can a package-lock.json made on another platform. Reinstall with optional dependencies enabled: ` +
        `\`npm install --include=optional\` (if the lock file came from another platform, delete node_modules and package-lock.json first).`
  return new RelayError(message, 'ERR_NATIVE_BINDING_MISSING', { cause })
}
/* eslint-enable @typescript-eslint/no-require-imports */

/** The platform as napi names its packages: `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`. */
function platformName(): string {
  const { platform, arch } = process
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'android') return arch === 'arm' ? 'android-arm-eabi' : `android-${arch}`
  if (platform !== 'linux') return `${platform}-${arch}`
  const libc = isMusl() ? 'musl' : 'gnu'
  return arch === 'arm' ? `linux-arm-${libc}eabihf` : `linux-${arch}-${libc}`
}

/** As napi's loader decides it: `ldd` names musl, else Node's report has no glibc version. */
function isMusl(): boolean {
  try {
    return (require('node:fs') as typeof import('node:fs')).readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
  } catch {
    ;(process.report as { excludeNetwork?: boolean }).excludeNetwork = true // as napi's loader does: no network lookups
    const { header } = process.report.getReport() as { header?: { glibcVersionRuntime?: string } }
    return header?.glibcVersionRuntime === undefined
  }
}

/** The addon's exports, each looked up (and the addon loaded) when first used. */
export const binding: BindingModule = new Proxy({} as BindingModule, {
  get: (_, name) => load()[name as keyof BindingModule],
})

let relayScope: Binding.RelayScope | undefined

/**
 * This module instance's scope: its backend registry, and the token its calls descend from.
 * Workers get their own; a scope's calls are cancelled when its thread ends. Made on first use,
 * with the addon.
 */
export function scope(): Binding.RelayScope {
  return (relayScope ??= new (load().RelayScope)())
}

let mainThread: boolean | undefined

/** Whether this module runs on the process's main thread, where native code reads `process.env` itself. */
export function onMainThread(): boolean {
  return (mainThread ??= load().onProcessMainThread())
}
