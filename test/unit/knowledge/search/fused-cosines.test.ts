/**
 * A hybrid search reads the cosines of only the candidates that could enter the answer
 * (src/knowledge/search/sqlite/fused-cosines.ts): the fused top k is the same, scores and order, as with
 * every cosine read and the nearest chunks found exactly, for any true bounds of the cosines; and
 * `fusedScorer` scores as `fuse` does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FUSION,
  fuse,
  fusedScorer,
  SENTENCE_FUSION,
} from '../../../../src/knowledge/retrieval/ranking.js';
import type { Candidate } from '../../../../src/knowledge/search/chunk-store.js';
import {
  cosinesNeeded,
  fusedEvidence,
  nearestContenders,
  type CosineSource,
} from '../../../../src/knowledge/search/sqlite/fused-cosines.js';

/**
 * Keyword candidates (BM25, best first), every candidate's cosine (distinct: which of equal
 * cosines counts as nearest is the caller's order), the answer's length, and the slack of the
 * bounds below and above each cosine (as the int8 bounds are).
 */
const search = fc
  .record({
    pool: fc.uniqueArray(
      fc.record({
        chunkId: fc.stringMatching(/^[a-f]{1,2}$/),
        // Often close together, so that a cosine decides between keyword matches.
        bm25: fc.oneof(
          { arbitrary: fc.constant(0), weight: 2 },
          { arbitrary: fc.integer({ min: 1, max: 3000 }).map((n) => n / 100), weight: 1 },
          { arbitrary: fc.integer({ min: 950, max: 1000 }).map((n) => n / 100), weight: 1 },
        ),
        cos: fc.integer({ min: -20, max: 100 }).map((n) => n / 100),
        hasVector: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, fc.constant(false)),
        // Integers scaled: fast-check's doubles lean to tiny values, which vanish in a sum.
        below: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 1, max: 50 }).map((n) => n / 100),
        ),
        above: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 1, max: 50 }).map((n) => n / 100),
        ),
      }),
      { selector: (c) => c.chunkId, minLength: 1, maxLength: 30 },
    ),
    top: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 12 })),
    /** Candidates of the vector search beyond the nearest `top`. */
    farther: fc.integer({ min: 0, max: 8 }),
    headroom: fc.integer({ min: 10, max: 500 }).map((n) => n / 10),
    coverage: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 1, max: 100 }).map((n) => n / 100),
    ),
    /** Word vectors' fusion or sentence models' (a calibrated cosine, normalised scores). */
    fusion: fc.constantFrom(DEFAULT_FUSION, SENTENCE_FUSION),
  })
  .map(({ pool, top, farther, headroom, coverage, fusion }) => {
    const keyword: Candidate[] = pool
      .filter((c) => c.bm25 > 0)
      .map((c) => ({ chunkId: c.chunkId, score: c.bm25 }))
      .sort((a, b) => b.score - a.score);
    const withVector = pool.filter((c) => c.hasVector);
    const cosOf = new Map(withVector.map((c, i) => [c.chunkId, c.cos + i * 1e-7]));
    const bounds = new Map(
      withVector.map((c) => {
        const cos = cosOf.get(c.chunkId) ?? 0;
        return [c.chunkId, { lower: cos - c.below, upper: cos + c.above }];
      }),
    );
    // The vector search's candidates, nearest first, as deep as the search looked.
    const looked = [...cosOf].sort((a, b) => b[1] - a[1]).slice(0, top + farther);
    const keywordMax = (keyword[0]?.score ?? 1) * headroom;
    return { keyword, cosOf, bounds, looked, top, query: { keywordMax, coverage }, fusion };
  });

type Search = typeof search extends fc.Arbitrary<infer T> ? T : never;

/** The fused top `top` with every cosine read and the `top` nearest chunks (as the store did). */
function full({ keyword, cosOf, looked, top, query, fusion }: Search) {
  const semantic = looked.slice(0, top).map(([chunkId, score]) => ({ chunkId, score }));
  return fuse(keyword, semantic, cosOf, query, fusion).slice(0, top);
}

/** The fused top `top` reading only the cosines `cosinesNeeded` names; and how many it read. */
function pruned(s: Search) {
  let read = 0;
  const source: CosineSource = {
    bounds: (ids) =>
      new Map(ids.flatMap((id) => (s.bounds.has(id) ? [[id, s.bounds.get(id)!]] : []))),
    read: (ids) => {
      read += ids.length;
      return new Map(ids.flatMap((id) => (s.cosOf.has(id) ? [[id, s.cosOf.get(id)!]] : [])));
    },
  };
  const nearest = nearestContenders(
    s.looked.map(([chunkId]) => ({ chunkId, documentId: 'd', ...s.bounds.get(chunkId)! })),
    s.top,
  );
  const score = fusedScorer(s.keyword, s.query, s.fusion);
  const evidence = fusedEvidence(s.keyword, nearest, source, score, s.top);
  const answer = fuse(evidence.keyword, evidence.semantic, evidence.cosine, s.query, s.fusion);
  return { answer: answer.slice(0, s.top), read };
}

describe('cosinesNeeded', () => {
  it('leaves the fused top k as it is with every cosine read, for any bounds of the cosines', () => {
    let skipped = 0;
    fc.assert(
      fc.property(search, (s) => {
        const got = pruned(s);
        expect(got.answer).toEqual(full(s));
        skipped +=
          new Set([...s.keyword.map((k) => k.chunkId), ...s.looked.map(([id]) => id)]).size -
          got.read;
      }),
      { numRuns: 1500 },
    );
    // Not vacuous: many cosines were never read.
    expect(skipped).toBeGreaterThan(200);
  });

  it('needs true bounds: an upper bound below the cosine drops a passage the answer holds', () => {
    // Two weak keyword matches (BM25 10 and 9.9 of an attainable 200): the second one's larger
    // cosine puts it first.
    const exact = (upper: number): Search => ({
      keyword: [
        { chunkId: 'a', score: 10 },
        { chunkId: 'b', score: 9.9 },
      ],
      cosOf: new Map([
        ['a', 0.3],
        ['b', 0.35],
      ]),
      bounds: new Map([
        ['a', { lower: 0.3, upper: 0.3 + 1e-9 }],
        ['b', { lower: 0.35 - upper, upper: 0.35 - upper + 1e-9 }],
      ]),
      looked: [],
      top: 1,
      query: { keywordMax: 200, coverage: 1 },
      fusion: DEFAULT_FUSION,
    });
    expect(full(exact(0)).map((c) => c.chunkId)).toEqual(['b']);
    expect(pruned(exact(0)).answer).toEqual(full(exact(0)));
    expect(pruned(exact(0.3)).answer).not.toEqual(full(exact(0.3)));
  });

  it('reads nothing that is known: a candidate without a vector has cosine 0', () => {
    const score = (bm25: number, cosine: number) => bm25 + cosine;
    const candidates = [
      { chunkId: 'a', bm25: 5, lower: 0, upper: 0 },
      { chunkId: 'b', bm25: 4, lower: 0.1, upper: 0.2 },
      { chunkId: 'c', bm25: 1, lower: 0.1, upper: 0.2 },
    ];
    expect(cosinesNeeded(candidates, score, 1)).toEqual([]);
    expect(cosinesNeeded(candidates, score, 2)).toEqual(['b']);
    expect(cosinesNeeded(candidates, score, 3)).toEqual(['b', 'c']);
  });

  it('fusedScorer gives each passage the score fuse gives it', () => {
    fc.assert(
      fc.property(search, ({ keyword, cosOf, looked, query, fusion }) => {
        const semantic = looked.map(([chunkId, score]) => ({ chunkId, score }));
        const all = new Map(cosOf);
        const score = fusedScorer(keyword, query, fusion);
        const bm25 = new Map(keyword.map((k) => [k.chunkId, k.score]));
        for (const c of fuse(keyword, semantic, all, query, fusion)) {
          expect(c.score).toBe(score(bm25.get(c.chunkId) ?? 0, all.get(c.chunkId) ?? 0));
        }
      }),
      { numRuns: 300 },
    );
  });
});
