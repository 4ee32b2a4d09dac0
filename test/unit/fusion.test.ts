import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  calibrateBm25,
  DEFAULT_FUSION,
  fuse,
  keywordScore,
  type FusionOptions,
} from '../../src/knowledge/fusion.js';
import type { Candidate } from '../../src/knowledge/search/chunk-store.js';
import { queryTerms } from '../../src/knowledge/search/query-terms.js';
import { buildFtsQuery } from '../../src/knowledge/search/sqlite/fts-query.js';

/** Raw BM25 in [0, 200] (two decimals) as FTS5 reports it, often near the calibration's half. */
const bm25 = fc.oneof(
  fc.integer({ min: 0, max: 3000 }).map((n) => n / 100),
  fc.integer({ min: 0, max: 20_000 }).map((n) => n / 100),
);
const options = fc.record({
  bm25Half: fc.integer({ min: 1, max: 64 }),
  bm25Steepness: fc.integer({ min: 1, max: 8 }),
  denseWeight: fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
});

/**
 * A retrieval's inputs over a pool of at most `size` ids: keyword candidates (raw BM25), semantic
 * candidates and the cosine map (every semantic candidate and some keyword ones), cosines in [-1, 1].
 */
const retrieval = (size: number) =>
  fc
    .uniqueArray(
      fc.record({
        chunkId: fc.stringMatching(/^[a-e]{1,2}$/),
        isKeyword: fc.boolean(),
        isSemantic: fc.boolean(),
        hasVector: fc.boolean(),
        score: bm25,
        cos: fc.double({ min: -1, max: 1, noNaN: true }),
      }),
      { selector: (c) => c.chunkId, maxLength: size },
    )
    .map((pool) => {
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
      return { keyword, semantic, cosine };
    });
const inputs = retrieval(25);

const K = (score: number, o: FusionOptions) => calibrateBm25(score, o.bm25Half, o.bm25Steepness);
const rankOf = (list: Candidate[], id: string) => list.findIndex((c) => c.chunkId === id);

describe('fuse', () => {
  it('is ordered, deterministic, contains every candidate once, scores in [0, 1)', () => {
    fc.assert(
      fc.property(inputs, options, ({ keyword, semantic, cosine }, o) => {
        const fused = fuse(keyword, semantic, cosine, o);
        expect(fuse(keyword, semantic, cosine, o)).toEqual(fused);
        expect(fuse([...keyword].reverse(), [...semantic].reverse(), cosine, o)).toEqual(fused);
        expect(fused.map((c) => c.chunkId).sort()).toEqual(
          [...new Set([...keyword, ...semantic].map((c) => c.chunkId))].sort(),
        );
        for (let i = 1; i < fused.length; i++) {
          const [a, b] = [fused[i - 1]!, fused[i]!];
          expect(a.score > b.score || (a.score === b.score && a.chunkId < b.chunkId)).toBe(true);
        }
        for (const c of fused) {
          expect(c.score).toBeGreaterThanOrEqual(0);
          expect(c.score).toBeLessThan(1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('scores a passage between its keyword evidence K and K + denseWeight × (1 − best K)', () => {
    fc.assert(
      fc.property(inputs, options, ({ keyword, semantic, cosine }, o) => {
        const best = Math.max(0, ...keyword.map((k) => K(k.score, o)));
        const room = o.denseWeight * (1 - best);
        const bm25Of = new Map(keyword.map((k) => [k.chunkId, k.score]));
        for (const c of fuse(keyword, semantic, cosine, o)) {
          const evidence = K(bm25Of.get(c.chunkId) ?? 0, o);
          expect(c.score).toBeGreaterThanOrEqual(evidence);
          expect(c.score).toBeLessThanOrEqual(evidence + room + 1e-12);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("raising a passage's BM25 (or making it a keyword match) never lowers its score or rank", () => {
    fc.assert(
      fc.property(
        // Small pools, so that the raised passage is often the best keyword match.
        retrieval(5),
        options,
        fc.nat(),
        bm25.filter((b) => b > 0),
        ({ keyword, semantic, cosine }, o, pick, raise) => {
          const pool = [...new Set([...keyword, ...semantic].map((c) => c.chunkId))];
          fc.pre(pool.length > 0);
          const id = pool[pick % pool.length]!;
          const before = fuse(keyword, semantic, cosine, o);
          const old = keyword.find((k) => k.chunkId === id)?.score ?? 0;
          const raised = [
            ...keyword.filter((k) => k.chunkId !== id),
            { chunkId: id, score: old + raise },
          ];
          const after = fuse(raised, semantic, cosine, o);
          const scoreOf = (list: Candidate[]) => list[rankOf(list, id)]!.score;
          expect(scoreOf(after)).toBeGreaterThanOrEqual(scoreOf(before) - 1e-12);
          expect(rankOf(after, id)).toBeLessThanOrEqual(rankOf(before, id));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("raising a passage's cosine never lowers its score or rank", () => {
    fc.assert(
      fc.property(
        inputs,
        options,
        fc.nat(),
        fc.double({ min: 0, max: 2, noNaN: true }),
        ({ keyword, semantic, cosine }, o, pick, raise) => {
          const pool = [...new Set([...keyword, ...semantic].map((c) => c.chunkId))];
          fc.pre(pool.length > 0);
          const id = pool[pick % pool.length]!;
          const cos = Math.min(1, (cosine.get(id) ?? -1) + raise);
          const sem = semantic.some((s) => s.chunkId === id)
            ? semantic.map((s) => (s.chunkId === id ? { chunkId: id, score: cos } : s))
            : semantic;
          const before = fuse(keyword, semantic, cosine, o);
          const after = fuse(keyword, sem, new Map(cosine).set(id, cos), o);
          expect(after[rankOf(after, id)]!.score).toBeGreaterThanOrEqual(
            before[rankOf(before, id)]!.score,
          );
          expect(rankOf(after, id)).toBeLessThanOrEqual(rankOf(before, id));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('with zero dense weight keeps the BM25 order exactly; without keyword evidence, the cosine order', () => {
    // Exactly: where K has resolution, i.e. (BM25 / half)^p well below 2^52 (BM25 ≤ 200 here).
    const resolved = fc.record({
      bm25Half: fc.integer({ min: 8, max: 64 }),
      bm25Steepness: fc.integer({ min: 1, max: 6 }),
      denseWeight: fc.constant(0),
    });
    fc.assert(
      fc.property(inputs, resolved, ({ keyword, semantic, cosine }, o) => {
        const byScore = (a: Candidate, b: Candidate) =>
          b.score - a.score || (a.chunkId < b.chunkId ? -1 : 1);
        const keywordOnly = fuse(keyword, [], new Map(), { ...o, denseWeight: 0 });
        expect(keywordOnly.map((c) => c.chunkId)).toEqual(
          [...keyword].sort(byScore).map((c) => c.chunkId),
        );
        const semanticOnly = fuse([], semantic, cosine, { ...o, denseWeight: 1 });
        expect(semanticOnly).toEqual(
          semantic.map((s) => ({ chunkId: s.chunkId, score: Math.max(0, s.score) })).sort(byScore),
        );
      }),
    );
  });

  it('a strong keyword match leaves dense no room; a weak one lets cosine rank (examples)', () => {
    const cosine = new Map([
      ['exact', 0.3],
      ['common-word', 0.2],
      ['meaning', 0.75],
    ]);
    // SciFact-like: the best BM25 is 3 × bm25Half, so K* ≈ 0.996 and dense moves scores by ≤ 0.004.
    const strong = fuse(
      [
        { chunkId: 'exact', score: 48 },
        { chunkId: 'common-word', score: 20 },
      ],
      [{ chunkId: 'meaning', score: 0.75 }],
      cosine,
    );
    expect(strong.map((c) => c.chunkId)).toEqual(['exact', 'common-word', 'meaning']);
    expect(strong[2]!.score).toBeLessThan(0.01);
    // Paraphrase-like: only a common word matched (BM25 3, K ≈ 0.0002): the cosine decides.
    const weak = fuse(
      [{ chunkId: 'common-word', score: 3 }],
      [
        { chunkId: 'meaning', score: 0.75 },
        { chunkId: 'common-word', score: 0.2 },
      ],
      cosine,
    );
    expect(weak.map((c) => c.chunkId)).toEqual(['meaning', 'common-word']);
    expect(weak[0]!.score).toBeCloseTo(0.9 * 0.75, 2);
    // A tiny collection where BM25's IDF collapses: the matches still score above 0 without a vector.
    const collapsed = fuse([{ chunkId: 'stale', score: 1e-6 }], [], new Map());
    expect(collapsed[0]!.score).toBeGreaterThan(0);
    // The bound holds at the extremes: full dense weight, a cosine of 1, a BM25 beyond resolution.
    const w1 = { ...DEFAULT_FUSION, denseWeight: 1 };
    for (const score of [0, 1e-6, 16, 1e6, 1e300])
      expect(fuse([{ chunkId: 'x', score }], [], new Map([['x', 1]]), w1)[0]!.score).toBeLessThan(
        1,
      );
  });

  it('keeps the documented defaults and the keyword-mode score', () => {
    expect(DEFAULT_FUSION).toEqual({ bm25Half: 16, bm25Steepness: 5, denseWeight: 0.9 });
    expect(keywordScore(16)).toBeCloseTo(0.55, 10);
    expect(keywordScore(0)).toBe(0.1);
    expect(keywordScore(1e300)).toBeLessThan(1);
  });

  it('calibrates BM25 monotonically into [0, 1), 0.5 at half, s / (s + half) at steepness 1', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e300, noNaN: true }),
        fc.double({ min: 0, max: 1e300, noNaN: true }),
        fc.integer({ min: 1, max: 8 }),
        (a, b, p) => {
          const [lo, hi] = a < b ? [a, b] : [b, a];
          expect(calibrateBm25(lo, 16, p)).toBeLessThanOrEqual(calibrateBm25(hi, 16, p));
          expect(calibrateBm25(hi, 16, p)).toBeLessThan(1);
          expect(calibrateBm25(lo, 16, p)).toBeGreaterThanOrEqual(0);
          if (lo > 1e-6) expect(calibrateBm25(lo, 16, p)).toBeGreaterThan(0);
        },
      ),
    );
    for (const p of [1, 2, 5, 8]) expect(calibrateBm25(16, 16, p)).toBe(0.5);
    expect(calibrateBm25(48, 16)).toBe(48 / 64);
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
