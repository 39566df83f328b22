import * as binding from '../binding.js'

/** This module instance's scope: its backend registry and its warning sink. Workers get their own. */
export const scope: number = binding.createScope((message: string) => {
  // Looked up on each call so a test's spy on console.error sees it.
  console.error(message)
})

export { binding }
