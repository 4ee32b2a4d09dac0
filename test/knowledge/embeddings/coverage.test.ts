import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryCoverage } from '../../../src/knowledge/embeddings/static/embed.js';
import type { StaticModel } from '../../../src/knowledge/embeddings/static/format.js';
import { StaticEmbeddingProvider } from '../../../src/knowledge/embeddings/static/static-provider.js';
import { BUILD_TIMEOUT_MS, STATIC_TEST_CACHE_DIR, sharedStaticModel } from './static-cache-dir.js';

let model: StaticModel;
beforeAll(async () => {
  model = await sharedStaticModel();
}, BUILD_TIMEOUT_MS);

describe('queryCoverage', () => {
  it('is 1 for plain English, 0 for identifiers and codes the model has no vector for', () => {
    expect(queryCoverage(model, 'how do I make the database file smaller')).toBe(1);
    expect(queryCoverage(model, 'BZ_NO_STDIO')).toBe(0);
    expect(queryCoverage(model, 'CrcWordByWord')).toBe(0);
    expect(queryCoverage(model, 'salsa20r12')).toBe(0);
    expect(queryCoverage(model, '')).toBe(0);
    expect(queryCoverage(model, '?!')).toBe(0);
  });

  it('weighs words by how informative they are: a common word barely counts', () => {
    // "ninja" is a rare known word (weight ≈ 1), "t" a single letter (left out), "cleandead" unknown.
    const command = queryCoverage(model, 'ninja -t cleandead');
    expect(command).toBeGreaterThan(0.4);
    expect(command).toBeLessThan(0.6);
    // The same unknown identifier in a question of common words: still mostly not understood.
    expect(queryCoverage(model, 'what is BZ_NO_STDIO')).toBeLessThan(0.5);
    // One unknown word among informative ones.
    const mostly = queryCoverage(model, 'compress archive quickly zpipe');
    expect(mostly).toBeGreaterThan(0.6);
    expect(mostly).toBeLessThan(0.8);
  });

  it('is in [0, 1], does not depend on case, and never rises when an unknown word is added', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.stringMatching(/^[a-z]{3,8}$/), (text, w) => {
        const c = queryCoverage(model, text);
        expect(c).toBeGreaterThanOrEqual(0);
        expect(c).toBeLessThanOrEqual(1);
        expect(queryCoverage(model, text.toUpperCase())).toBeCloseTo(
          queryCoverage(model, text.toLowerCase()),
          12,
        );
        expect(queryCoverage(model, `${text} qz${w}_xq`)).toBeLessThanOrEqual(c + 1e-12);
      }),
      { numRuns: 200 },
    );
  });
});

describe('StaticEmbeddingProvider.embedSearchQuery', () => {
  const provider = new StaticEmbeddingProvider({ cacheDir: STATIC_TEST_CACHE_DIR });
  afterAll(() => provider.close());

  it('answers the vector of embedQuery with the coverage computed in the worker', async () => {
    for (const text of ['white matter imaging', 'BZ_NO_STDIO', 'ninja -t cleandead']) {
      const { vector, coverage } = await provider.embedSearchQuery(text);
      expect(vector).toEqual(await provider.embedQuery(text));
      expect(coverage).toBeCloseTo(queryCoverage(model, text), 6);
    }
  });
});
