// `npm run test:node` (scripts/test-node-versions.mjs): the suites about this package on Node, run
// under each other Node version CI tests (scripts/platforms/node-versions.json), after `npm test`
// ran every suite under the default one (docs/DEVELOPMENT.md, "Node versions"). These are the
// suites whose subject Node's own behaviour decides: loading the package (CommonJS, ESM, types),
// the JS API and its values, the event loop, workers, AbortSignal, streams, child processes and
// signals (the host's death, a JS backend's lifetime), the CLI's stdio and exit codes, the MCP
// SDK client and the AI SDK. The rest (the Rust core's checks, the real backend CLIs, tsc, the npm
// registry, wine, the soak) tests the same Rust code whatever Node runs it.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      'package',
      'compat',
      'drop-in',
      'arguments',
      'env-codec',
      'version',
      'relay',
      'relay-all',
      'review',
      'hostile',
      'abort',
      'stream',
      'worker',
      'js-thread-relay',
      'thread-limit',
      'js-backend-lifetime',
      'host-death',
      'cli',
      'cli-stream',
      'mcp',
      'mcp-tasks',
      'ai-sdk',
    ].map((name) => `__test__/${name}.spec.ts`),
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
