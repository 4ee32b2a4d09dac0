/** The bound of a query's BM25 (bm25.ts) and the FTS5 query built from user text (fts-query.ts). */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { B, idf, K1, maxBm25 } from '../../../../src/knowledge/search/bm25.js';
import { queryTerms } from '../../../../src/knowledge/search/query-terms.js';
import { buildFtsQuery } from '../../../../src/knowledge/search/sqlite/keyword/fts-query.js';

describe('maxBm25', () => {
  it('bounds the BM25 of every chunk for the query words (FTS5 formula)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            idf: fc.double({ min: 1e-6, max: 15, noNaN: true }),
            f: fc.double({ min: 0, max: 1000, noNaN: true }),
          }),
          { maxLength: 12 },
        ),
        fc.double({ min: 1, max: 5000, noNaN: true }),
        fc.double({ min: 1, max: 5000, noNaN: true }),
        (terms, length, average) => {
          const score = terms.reduce(
            (sum, { idf, f }) =>
              sum + (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * length) / average)),
            0,
          );
          expect(score).toBeLessThanOrEqual(maxBm25(terms.map((t) => t.idf)));
        },
      ),
    );
    expect(maxBm25([])).toBe(0);
    expect(maxBm25([2, 3])).toBeCloseTo(5 * (K1 + 1), 12);
    // A word in no chunk counts with the idf of a word in none.
    expect(idf(1000, 0)).toBeCloseTo(Math.log(1000.5 / 0.5), 12);
  });
});

describe('buildFtsQuery', () => {
  const db = new Database(':memory:');
  db.exec(
    "create virtual table f using fts5(content, tokenize = 'porter unicode61 remove_diacritics 2')",
  );
  db.prepare('insert into f values (?)').run('The quick brown fox jumps over the lazy dog');
  const search = db.prepare('select count(*) as n from f where f match ?');

  it('never produces FTS5 syntax errors, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), (text) => {
        const q = buildFtsQuery(text);
        if (q !== null) expect(() => search.get(q)).not.toThrow();
      }),
      { numRuns: 500 },
    );
    for (const text of ['"', 'a OR', 'NEAR(', 'content:x', '*', 'AND NOT', '^x']) {
      const q = buildFtsQuery(text);
      if (q !== null) expect(() => search.get(q)).not.toThrow();
    }
  });

  it('drops stop words unless nothing else is left, matches stems', () => {
    expect(buildFtsQuery('the jumping foxes')).toBe('"jumping" OR "foxes"');
    expect(buildFtsQuery('to be or not to be')).toBe('"to" OR "be" OR "or" OR "not"');
    expect(buildFtsQuery('!!! ...')).toBeNull();
    expect(search.get(buildFtsQuery('jumping foxes'))).toEqual({ n: 1 });
    expect(queryTerms('Ünïcode-Wörds 42')).toEqual(['ünïcode', 'wörds', '42']);
  });
});
