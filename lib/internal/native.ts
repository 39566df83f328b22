import * as binding from '../binding.js'
import type { NativeWarning } from '../binding.js'
import { abortInvocation } from './invocations.js'
import { callRecord } from './calls.js'

/**
 * This module instance's scope: its backend registry, its warning sink, and how its JS backends
 * are told to stop. Workers get their own; a scope's calls are cancelled when its thread ends.
 */
export const scope: number = binding.createScope((warning: NativeWarning) => {
  const onWarning = callRecord(warning.callTag)?.onWarning
  if (onWarning) {
    try {
      onWarning(warning.message)
    } catch {
      // A caller's callback that throws must not take the relay down with it.
    }
    return
  }
  // Looked up on each call so a test's spy on console.error sees it.
  console.error(warning.message)
}, abortInvocation)

/** Whether this module runs on the process's main thread, where native code reads `process.env` itself. */
export const onMainThread: boolean = binding.onProcessMainThread()

export { binding }
