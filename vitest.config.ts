import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The console's browser tests run with `npm run test:e2e` (vitest.e2e.config.ts), never here.
    exclude: [...configDefaults.exclude, 'test/e2e/**'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
