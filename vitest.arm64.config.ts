// `npm run test:arm64` (scripts/test-arm64.mjs): the package test and the process-lifetime tests, run
// by vitest itself under the arm64 Node through qemu-user (docs/DEVELOPMENT.md, "linux-arm64 under
// qemu"). Emulated code runs several times slower: longer limits, one file at a time.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/package.spec.ts', '__test__/host-death.spec.ts', '__test__/cli-backends.spec.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 600_000,
  },
})
