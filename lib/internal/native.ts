import type * as Binding from '../../binding.js'

type BindingModule = typeof Binding

let loaded: BindingModule | undefined

/** The addon, loaded on first use: importing the package costs no native load (a few ms). */
function load(): BindingModule {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (loaded ??= require('../../binding.js') as BindingModule)
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
