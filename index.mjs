// ESM entry: the same objects as the CommonJS one, so `instanceof RelayError` holds across both.
// Loaded with require() and named here, rather than `export * from './index.js'`, which makes
// Node parse the CommonJS source for its names (a few milliseconds of every import); a test
// checks that both entries export the same names.
import { createRequire } from 'node:module'

const api = createRequire(import.meta.url)('./dist/index.js')

export const {
  RelayError,
  BackendError,
  registerBackend,
  DEFAULT_BACKEND,
  DEFAULT_SANDBOX,
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  MAX_CONTEXT_FILE_BYTES,
  MAX_DIFF_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_PROMPT_BYTES,
  MAX_RELAY_DEPTH,
  relay,
  relayDetailed,
  relayStream,
  relayStreamDetailed,
  relayAll,
  reviewRelay,
  reviewRelayDetailed,
  listSessions,
  deleteSession,
  pruneSessions,
  parseVerdict,
  detectDefaultBranch,
  gitDiffBase,
  checkBackends,
  doctor,
  _resetRegistry,
} = api
export default api
