// `npm run test:node` (scripts/test-node-versions.mjs): the suites whose subject is this package on
// Node, run under each other Node version CI tests (scripts/platforms/node-versions.json), after
// `npm test` ran every suite under the default one (docs/DEVELOPMENT.md, "Node versions"). Left
// out: the suites whose subject is not Node's behaviour but a tool's, which the default run covers:
// the real backend CLIs (e2e-*, doctor), tsc (typings), the npm registry (release), wine
// (platforms/), the long soak and the static checks of the repository's files.
import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    exclude: [
      ...configDefaults.exclude,
      '__test__/e2e-*.spec.ts',
      '__test__/doctor.spec.ts',
      '__test__/typings.spec.ts',
      '__test__/release.spec.ts',
      '__test__/soak.spec.ts',
      '__test__/platforms/**',
      '__test__/docs-links.spec.ts',
      '__test__/module-cycles.spec.ts',
      '__test__/workflows.spec.ts',
    ],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
