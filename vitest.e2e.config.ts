// End-to-end tests of the console in a real browser (npm run test:e2e): Debian's Chromium driven by
// playwright-core against the built server. Kept out of `npm test`, which needs no browser.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/e2e/**/*.e2e.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 90_000,
    pool: 'forks',
    // One browser and one server per file; two files at once would only fight for 2 cores.
    fileParallelism: false,
  },
});
