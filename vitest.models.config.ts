import { defineConfig } from 'vitest/config';

/**
 * The real-model suites (`npm run test:models`): the transformers provider on installed weights,
 * the openai provider against a real embeddings server, reranking and the fusion on a judged set.
 * They need `npm run models:install` first; `npm test` never runs them.
 */
export default defineConfig({
  test: {
    include: ['test/models/**/*.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // One suite at a time: each loads models that use both cores.
    fileParallelism: false,
  },
});
