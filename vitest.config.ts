import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    // Each file in its own process: the addon, the registry and process.env stay per file.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
