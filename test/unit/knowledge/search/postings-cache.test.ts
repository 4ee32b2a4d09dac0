import { describe, expect, it } from 'vitest';
import { PostingsCache } from '../../../../src/knowledge/search/postgres/keyword/postings-cache.js';
import {
  PackedPostings,
  packPostings,
} from '../../../../src/knowledge/search/postgres/keyword/postings.js';

/** A term of one row of `n` postings (10 bytes each). */
const term = (n: number) => ({
  df: n,
  rows: [
    {
      documentId: 'd',
      projectKey: '',
      base: 1,
      postings: new PackedPostings(
        packPostings(Array.from({ length: n }, (_, i) => ({ offset: i, length: 5, count: 2 }))),
      ),
    },
  ],
});

describe('PostingsCache', () => {
  it('answers only at the generation its terms and statistics were read at', () => {
    const cache = new PostingsCache(1 << 20);
    const t = term(3);
    cache.set('a', 7, t);
    cache.setStats(7, { chunks: 10, tokens: 50 });
    expect(cache.get('a', 7)).toBe(t);
    expect(cache.stats(7)).toEqual({ chunks: 10, tokens: 50 });
    expect(cache.generation).toBe(7);
    expect(cache.get('a', 8)).toBeUndefined();
    expect(cache.stats(8)).toBeUndefined();
    expect(cache.get('b', 7)).toBeUndefined();
    // A term of another generation (newer, or older after a restore) replaces every entry.
    cache.set('b', 6, term(1));
    expect(cache.get('a', 7)).toBeUndefined();
    expect(cache.get('a', 6)).toBeUndefined();
    expect(cache.stats(6)).toBeUndefined();
    expect(cache.size).toMatchObject({ lexemes: 1, generation: 6 });
    // Statistics of another generation too.
    cache.setStats(9, { chunks: 1, tokens: 1 });
    expect(cache.size).toMatchObject({ lexemes: 0, generation: 9 });
    cache.set('c', 9, { df: 0, rows: [] }); // a lexeme in no chunk is kept too
    expect(cache.get('c', 9)).toEqual({ df: 0, rows: [] });
    cache.reset();
    expect(cache.get('c', 9)).toBeUndefined();
    expect(cache.stats(9)).toBeUndefined();
    expect(cache.generation).toBe(-1);
  });

  it('keeps the most recently used lexemes within its bytes', () => {
    const cache = new PostingsCache(3 * (1000 + 800 + 200 + 100)); // three terms of 100 postings
    for (const lexeme of ['a', 'b', 'c']) cache.set(lexeme, 1, term(100));
    expect(cache.get('a', 1)).toBeDefined(); // now the most recent
    cache.set('d', 1, term(100));
    expect(cache.get('b', 1)).toBeUndefined();
    for (const lexeme of ['a', 'c', 'd']) expect(cache.get(lexeme, 1)).toBeDefined();
    expect(cache.size.bytes).toBeLessThanOrEqual(3 * 2100);
    // A lexeme larger than the whole budget is not kept (and evicts nothing).
    cache.set('e', 1, term(1000));
    expect(cache.get('e', 1)).toBeUndefined();
    expect(cache.size.lexemes).toBe(3);
    const none = new PostingsCache(0);
    none.set('a', 1, term(1));
    none.setStats(1, { chunks: 1, tokens: 1 });
    expect(none.size.lexemes).toBe(0);
    expect(none.stats(1)).toBeUndefined();
  });
});
