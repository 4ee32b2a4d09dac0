/** fast-check arbitraries of the fusion's inputs and options (ranking.test.ts). */
import fc from 'fast-check';
import type { Candidate } from '../../../src/knowledge/search/chunk-store.js';

/** Raw BM25 in [0, 200] (two decimals) as FTS5 reports it, often near the calibration's half. */
export const bm25 = fc.oneof(
  fc.integer({ min: 0, max: 3000 }).map((n) => n / 100),
  fc.integer({ min: 0, max: 20_000 }).map((n) => n / 100),
);
export const options = fc.record({
  keywordHalf: fc.integer({ min: 1, max: 100 }).map((n) => n / 100),
  steepness: fc.integer({ min: 1, max: 8 }),
  denseWeight: fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
  trustScale: fc.integer({ min: 1, max: 16 }).map((n) => n / 4),
  standOutWeight: fc.integer({ min: 0, max: 50 }).map((n) => n / 100),
  standOutGap: fc.integer({ min: 1, max: 50 }).map((n) => n / 100),
  cosineFloor: fc.constant(0),
  cosineCeiling: fc.constant(1),
  roomShrink: fc.constant(1),
  normalize: fc.constant(false),
});
/** The sentence models' family: a calibrated cosine, room beside a full match, normalised. */
export const sentenceOptions = fc
  .record({
    keywordHalf: fc.integer({ min: 1, max: 100 }).map((n) => n / 100),
    steepness: fc.integer({ min: 1, max: 8 }),
    denseWeight: fc.integer({ min: 0, max: 300 }).map((n) => n / 100),
    trustScale: fc.integer({ min: 1, max: 16 }).map((n) => n / 4),
    standOutWeight: fc.integer({ min: 0, max: 50 }).map((n) => n / 100),
    standOutGap: fc.integer({ min: 1, max: 50 }).map((n) => n / 100),
    cosineFloor: fc.integer({ min: 0, max: 60 }).map((n) => n / 100),
    span: fc.integer({ min: 5, max: 100 }).map((n) => n / 100),
    roomShrink: fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
    normalize: fc.constant(true),
  })
  .map(({ span, ...o }) => ({ ...o, cosineCeiling: Math.min(1, o.cosineFloor + span) }));
/** Either family: what holds of every fusion. */
export const anyOptions = fc.oneof(options, sentenceOptions);
/**
 * Options whose calibration still tells raw scores 0.01 apart at the top (r = 1): (1 / half)^p at
 * most 2^26. Past ~2^52 every match near the best saturates to the same K, and then ties (ordered
 * by id) decide, not BM25.
 */
export const resolvingOptions = options.filter(
  (o) => (1 / o.keywordHalf) ** o.steepness <= 2 ** 26,
);

/**
 * A retrieval's inputs over a pool of at most `size` ids: keyword candidates (raw BM25), semantic
 * candidates and the cosine map (every semantic candidate and some keyword ones), cosines in
 * [-1, 1]; and the query's evidence: its largest attainable BM25 (at least its best match's, as
 * the stores compute it) and the embedding's coverage.
 */
export const retrieval = (size: number) =>
  fc
    .record({
      pool: fc.uniqueArray(
        fc.record({
          chunkId: fc.stringMatching(/^[a-e]{1,2}$/),
          isKeyword: fc.boolean(),
          isSemantic: fc.boolean(),
          hasVector: fc.boolean(),
          score: bm25,
          cos: fc.double({ min: -1, max: 1, noNaN: true }),
        }),
        { selector: (c) => c.chunkId, maxLength: size },
      ),
      headroom: fc.double({ min: 1, max: 20, noNaN: true }),
      floor: bm25,
      coverage: fc.double({ min: 0, max: 1, noNaN: true }),
    })
    .map(({ pool, headroom, floor, coverage }) => {
      const keyword: Candidate[] = [];
      const semantic: Candidate[] = [];
      const cosine = new Map<string, number>();
      for (const { chunkId, isKeyword, isSemantic, hasVector, score, cos } of pool) {
        if (isKeyword) keyword.push({ chunkId, score });
        if (isSemantic) semantic.push({ chunkId, score: cos });
        if (isSemantic || hasVector) cosine.set(chunkId, cos);
      }
      keyword.sort((a, b) => b.score - a.score);
      semantic.sort((a, b) => b.score - a.score);
      const keywordMax = Math.max(floor, (keyword[0]?.score ?? 0) * headroom);
      return { keyword, semantic, cosine, query: { keywordMax, coverage } };
    });
export const inputs = retrieval(25);

export const rankOf = (list: Candidate[], id: string) => list.findIndex((c) => c.chunkId === id);
export const byScore = (a: Candidate, b: Candidate) =>
  b.score - a.score || (a.chunkId < b.chunkId ? -1 : 1);
