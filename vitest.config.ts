import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The console's browser tests (`npm run test:e2e`) and the real-model suites
    // (`npm run test:models`) have configs of their own.
    exclude: [...configDefaults.exclude, 'test/e2e/**', 'test/models/**'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
