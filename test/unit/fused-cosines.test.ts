/**
 * A hybrid search reads the cosines of only the keyword candidates that could enter the answer
 * (src/knowledge/search/fused-cosines.ts): the fused top k is the same, scores and order, as with
 * every cosine read, for any bound at least the cosine; and `fusedScorer` scores as `fuse` does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuse, fusedScorer } from '../../src/knowledge/fusion.js';
import type { Candidate } from '../../src/knowledge/search/chunk-store.js';
import { cosinesNeeded } from '../../src/knowledge/search/fused-cosines.js';

/** Keyword candidates (BM25, best first), nearest chunks and every candidate's cosine. */
const search = fc
  .record({
    pool: fc.uniqueArray(
      fc.record({
        chunkId: fc.stringMatching(/^[a-f]{1,2}$/),
        // Often close together, so that a cosine decides between keyword matches.
        bm25: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 1, max: 3000 }).map((n) => n / 100),
          fc.integer({ min: 950, max: 1000 }).map((n) => n / 100),
        ),
        cos: fc.integer({ min: -20, max: 100 }).map((n) => n / 100),
        hasVector: fc.boolean(),
      }),
      { selector: (c) => c.chunkId, minLength: 1, maxLength: 30 },
    ),
    nearest: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })),
    top: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 12 })),
    headroom: fc.double({ min: 1, max: 50, noNaN: true }),
    coverage: fc.double({ min: 0, max: 1, noNaN: true }),
    slack: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.5, noNaN: true })),
  })
  .map(({ pool, nearest, top, headroom, coverage, slack }) => {
    const keyword: Candidate[] = pool
      .filter((c) => c.bm25 > 0)
      .map((c) => ({ chunkId: c.chunkId, score: c.bm25 }))
      .sort((a, b) => b.score - a.score);
    const cosOf = new Map(pool.filter((c) => c.hasVector).map((c) => [c.chunkId, c.cos]));
    // The nearest chunks: the pool's best cosines (what the vector search returns).
    const semantic = [...cosOf]
      .map(([chunkId, score]) => ({ chunkId, score }))
      .sort((a, b) => b.score - a.score)
      .slice(0, nearest);
    const keywordMax = (keyword[0]?.score ?? 1) * headroom;
    return { keyword, semantic, cosOf, top, query: { keywordMax, coverage }, slack };
  });

type Search = typeof search extends fc.Arbitrary<infer T> ? T : never;

/** The fused top `top` from the given cosines (the semantic ones join them, as the stores do). */
function answer(
  keyword: Candidate[],
  semantic: Candidate[],
  cosine: Map<string, number>,
  query: { keywordMax: number; coverage: number },
  top: number,
) {
  const all = new Map(cosine);
  for (const s of semantic) all.set(s.chunkId, s.score);
  return fuse(keyword, semantic, all, query).slice(0, top);
}

/** The answer when only the first `top` and the needed keyword candidates' cosines are read. */
function pruned({ keyword, semantic, cosOf, top, query }: Search, bound: (id: string) => number) {
  const read = (ids: string[]) =>
    new Map(ids.filter((id) => cosOf.has(id)).map((id) => [id, cosOf.get(id) ?? 0]));
  const looked = Math.min(top, keyword.length);
  const cosine = read(keyword.slice(0, looked).map((k) => k.chunkId));
  const score = fusedScorer(keyword, query);
  const more = cosinesNeeded(keyword, looked, cosine, semantic, score, top, bound);
  for (const [id, c] of read(more)) cosine.set(id, c);
  return { answer: answer(keyword, semantic, cosine, query, top), read: looked + more.length };
}

describe('cosinesNeeded', () => {
  it('leaves the fused top k as it is with every cosine read, for any bound at least the cosine', () => {
    let skipped = 0;
    fc.assert(
      fc.property(search, (s) => {
        const full = answer(s.keyword, s.semantic, new Map(s.cosOf), s.query, s.top);
        // A bound: the cosine (0 without a vector) plus some slack, as the int8 bounds are.
        const bound = (id: string) => (s.cosOf.get(id) ?? 0) + s.slack;
        const got = pruned(s, bound);
        expect(got.answer).toEqual(full);
        skipped += s.keyword.length - got.read;
      }),
      { numRuns: 500 },
    );
    // Not vacuous: many cosines were never read.
    expect(skipped).toBeGreaterThan(200);
  });

  it('needs the bound: one below the cosine drops a passage the answer holds (example)', () => {
    // Two weak keyword matches (BM25 10 and 9.9 of an attainable 200): the second one's larger
    // cosine puts it first.
    const s: Search = {
      keyword: [
        { chunkId: 'a', score: 10 },
        { chunkId: 'b', score: 9.9 },
      ],
      semantic: [],
      cosOf: new Map([
        ['a', 0.3],
        ['b', 0.35],
      ]),
      top: 1,
      query: { keywordMax: 200, coverage: 1 },
      slack: 0,
    };
    const full = answer(s.keyword, s.semantic, new Map(s.cosOf), s.query, s.top);
    expect(full.map((c) => c.chunkId)).toEqual(['b']);
    expect(pruned(s, (id) => s.cosOf.get(id) ?? 0).answer).toEqual(full);
    expect(pruned(s, (id) => (s.cosOf.get(id) ?? 0) - 0.3).answer).not.toEqual(full);
  });

  it('fusedScorer gives each passage the score fuse gives it', () => {
    fc.assert(
      fc.property(search, ({ keyword, semantic, cosOf, query }) => {
        const all = new Map(cosOf);
        for (const s of semantic) all.set(s.chunkId, s.score);
        const score = fusedScorer(keyword, query);
        const bm25 = new Map(keyword.map((k) => [k.chunkId, k.score]));
        for (const c of fuse(keyword, semantic, all, query)) {
          expect(c.score).toBe(score(bm25.get(c.chunkId) ?? 0, all.get(c.chunkId) ?? 0));
        }
      }),
      { numRuns: 300 },
    );
  });
});
