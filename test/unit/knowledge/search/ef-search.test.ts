/**
 * The HNSW beam of a PostgreSQL vector search by its table's size (table-sizes.ts): the measured
 * bands, at least twice the rows fetched, at most pgvector's limit, the widest without an estimate.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  efSearchFor,
  HNSW_EF_SEARCH_MAX_BAND,
} from '../../../../src/knowledge/search/postgres/vector/table-sizes.js';

describe('efSearchFor', () => {
  it('narrows the beam for smaller tables, by the measured bands', () => {
    expect(efSearchFor(20_000, 10)).toBe(100);
    expect(efSearchFor(50_000, 10)).toBe(100);
    expect(efSearchFor(50_001, 10)).toBe(200);
    expect(efSearchFor(100_000, 10)).toBe(200);
    expect(efSearchFor(100_001, 10)).toBe(300);
    expect(efSearchFor(300_000, 10)).toBe(300);
    expect(efSearchFor(300_001, 10)).toBe(HNSW_EF_SEARCH_MAX_BAND);
    expect(efSearchFor(1_000_000, 10)).toBe(HNSW_EF_SEARCH_MAX_BAND);
  });

  it('without an estimate, uses the widest band', () => {
    expect(efSearchFor(undefined, 10)).toBe(HNSW_EF_SEARCH_MAX_BAND);
  });

  it('is at least twice the rows fetched, at most 1000, and never narrower for a larger table', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 1, max: 1000 }),
        (a, b, limit) => {
          const [small, large] = a <= b ? [a, b] : [b, a];
          const ef = efSearchFor(small, limit);
          expect(ef).toBeGreaterThanOrEqual(Math.min(1000, 2 * limit));
          expect(ef).toBeLessThanOrEqual(1000);
          expect(efSearchFor(large, limit)).toBeGreaterThanOrEqual(ef);
          expect(efSearchFor(undefined, limit)).toBeGreaterThanOrEqual(efSearchFor(large, limit));
        },
      ),
    );
  });
});
