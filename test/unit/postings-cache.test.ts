import { describe, expect, it } from 'vitest';
import { PostingsCache } from '../../src/knowledge/search/postgres/postings-cache.js';
import { PackedPostings, packPostings } from '../../src/knowledge/search/postgres/postings.js';

/** One row of `n` postings (10 bytes each). */
const rows = (n: number) => [
  {
    documentId: 'd',
    projectKey: '',
    base: 1,
    postings: new PackedPostings(
      packPostings(Array.from({ length: n }, (_, i) => ({ offset: i, length: 5, count: 2 }))),
    ),
  },
];

describe('PostingsCache', () => {
  it('answers only at the generation its rows were read at', () => {
    const cache = new PostingsCache(1 << 20);
    const r = rows(3);
    cache.set('a', 7, r);
    expect(cache.get('a', 7)).toBe(r);
    expect(cache.get('a', 8)).toBeUndefined();
    expect(cache.get('b', 7)).toBeUndefined();
    // Rows of another generation (newer, or older after a restore) replace every entry.
    cache.set('b', 6, rows(1));
    expect(cache.get('a', 7)).toBeUndefined();
    expect(cache.get('a', 6)).toBeUndefined();
    expect(cache.size).toMatchObject({ lexemes: 1, generation: 6 });
  });

  it('keeps the most recently used lexemes within its bytes', () => {
    const cache = new PostingsCache(3 * (1000 + 800 + 200)); // three rows of 100 postings
    for (const lexeme of ['a', 'b', 'c']) cache.set(lexeme, 1, rows(100));
    expect(cache.get('a', 1)).toBeDefined(); // now the most recent
    cache.set('d', 1, rows(100));
    expect(cache.get('b', 1)).toBeUndefined();
    for (const lexeme of ['a', 'c', 'd']) expect(cache.get(lexeme, 1)).toBeDefined();
    expect(cache.size.bytes).toBeLessThanOrEqual(3 * 2000);
    // A lexeme larger than the whole budget is not kept (and evicts nothing).
    cache.set('e', 1, rows(1000));
    expect(cache.get('e', 1)).toBeUndefined();
    expect(cache.size.lexemes).toBe(3);
    expect(new PostingsCache(0).size.lexemes).toBe(0);
  });
});
