import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  calibrateBm25,
  DEFAULT_FUSION,
  FUSION_PROFILES,
  fuse,
  fusionFor,
  fusionProfileOf,
  SENTENCE_FUSION,
  keywordEvidence,
  keywordScore,
  PADDING_FRACTION,
  rank,
  standOutFactor,
} from '../../../src/knowledge/retrieval/ranking.js';
import type { Candidate } from '../../../src/knowledge/search/chunk-store.js';

import {
  bm25,
  options,
  anyOptions,
  resolvingOptions,
  retrieval,
  inputs,
  rankOf,
  byScore,
} from './fusion-arbitraries.js';

describe('fuse', () => {
  it('is ordered, deterministic, contains every candidate once, scores in [0, 1)', () => {
    fc.assert(
      fc.property(inputs, anyOptions, ({ keyword, semantic, cosine, query }, o) => {
        const fused = fuse(keyword, semantic, cosine, query, o);
        expect(fuse(keyword, semantic, cosine, query, o)).toEqual(fused);
        expect(fuse([...keyword].reverse(), [...semantic].reverse(), cosine, query, o)).toEqual(
          fused,
        );
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

  it('scores a passage between S × K and S × (K + room), room = denseWeight × coverage × (1 − shrink × best K); normalised: both / (1 + room)', () => {
    fc.assert(
      fc.property(inputs, anyOptions, ({ keyword, semantic, cosine, query }, o) => {
        const K = (b: number) => keywordEvidence(b, query.keywordMax, o);
        const best = Math.max(0, ...keyword.map((k) => K(k.score)));
        const room = o.denseWeight * query.coverage * (1 - o.roomShrink * best);
        const S = standOutFactor(keyword, query.keywordMax, o) / (o.normalize ? 1 + room : 1);
        const bm25Of = new Map(keyword.map((k) => [k.chunkId, k.score]));
        for (const c of fuse(keyword, semantic, cosine, query, o)) {
          const evidence = K(bm25Of.get(c.chunkId) ?? 0);
          expect(c.score).toBeGreaterThanOrEqual(evidence * S);
          expect(c.score).toBeLessThanOrEqual((evidence + room) * S + 1e-12);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("raising a passage's BM25 (or making it a keyword match) never lowers its rank or its score before S", () => {
    fc.assert(
      fc.property(
        // Small pools, so that the raised passage is often the best keyword match.
        retrieval(5),
        anyOptions,
        fc.nat(),
        bm25.filter((b) => b > 0),
        ({ keyword, semantic, cosine, query }, o, pick, raise) => {
          const pool = [...new Set([...keyword, ...semantic].map((c) => c.chunkId))];
          fc.pre(pool.length > 0);
          const id = pool[pick % pool.length]!;
          const before = fuse(keyword, semantic, cosine, query, o);
          const old = keyword.find((k) => k.chunkId === id)?.score ?? 0;
          const raised = [
            ...keyword.filter((k) => k.chunkId !== id),
            { chunkId: id, score: old + raise },
          ];
          // The query's attainable maximum is the query's, not the passages': it stays.
          const after = fuse(raised, semantic, cosine, query, o);
          const scoreOf = (list: Candidate[]) => list[rankOf(list, id)]!.score;
          expect(rankOf(after, id)).toBeLessThanOrEqual(rankOf(before, id));
          // Before S (weight 0); with S, too, where the passage was already the best match (its
          // lead can only grow). Otherwise closing in on the best shrinks the query's S.
          const noS = { ...o, standOutWeight: 0 };
          expect(scoreOf(fuse(raised, semantic, cosine, query, noS))).toBeGreaterThanOrEqual(
            scoreOf(fuse(keyword, semantic, cosine, query, noS)) - 1e-12,
          );
          if (keyword.every((k) => k.chunkId === id || k.score < old))
            expect(scoreOf(after)).toBeGreaterThanOrEqual(scoreOf(before) - 1e-12);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("raising a passage's cosine never lowers its score or rank", () => {
    fc.assert(
      fc.property(
        inputs,
        anyOptions,
        fc.nat(),
        fc.double({ min: 0, max: 2, noNaN: true }),
        ({ keyword, semantic, cosine, query }, o, pick, raise) => {
          const pool = [...new Set([...keyword, ...semantic].map((c) => c.chunkId))];
          fc.pre(pool.length > 0);
          const id = pool[pick % pool.length]!;
          const cos = Math.min(1, (cosine.get(id) ?? -1) + raise);
          const sem = semantic.some((s) => s.chunkId === id)
            ? semantic.map((s) => (s.chunkId === id ? { chunkId: id, score: cos } : s))
            : semantic;
          const before = fuse(keyword, semantic, cosine, query, o);
          const after = fuse(keyword, sem, new Map(cosine).set(id, cos), query, o);
          expect(after[rankOf(after, id)]!.score).toBeGreaterThanOrEqual(
            before[rankOf(before, id)]!.score,
          );
          expect(rankOf(after, id)).toBeLessThanOrEqual(rankOf(before, id));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('lowering the coverage never raises a score; at coverage 0 the keyword order rules', () => {
    fc.assert(
      fc.property(
        inputs,
        options,
        fc.double({ min: 0, max: 1, noNaN: true }),
        ({ keyword, semantic, cosine, query }, o, factor) => {
          const full = fuse(keyword, semantic, cosine, query, o);
          const less = fuse(
            keyword,
            semantic,
            cosine,
            { ...query, coverage: query.coverage * factor },
            o,
          );
          const scoreIn = (list: Candidate[], id: string) => list[rankOf(list, id)]!.score;
          for (const c of less)
            expect(c.score).toBeLessThanOrEqual(scoreIn(full, c.chunkId) + 1e-15);
          // The model understood nothing: every score is the keyword evidence alone (times S).
          const none = fuse(keyword, semantic, cosine, { ...query, coverage: 0 }, o);
          const bm25Of = new Map(keyword.map((k) => [k.chunkId, k.score]));
          const S = standOutFactor(keyword, query.keywordMax, o);
          for (const c of none) {
            expect(c.score).toBe(
              keywordEvidence(bm25Of.get(c.chunkId) ?? 0, query.keywordMax, o) * S,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('with zero dense weight keeps the BM25 order exactly; without keyword evidence, the cosine order', () => {
    // Exactly: where K has resolution, i.e. (r / half)^p well below 2^52 (r ≤ 1 here).
    fc.assert(
      fc.property(inputs, resolvingOptions, ({ keyword, semantic, cosine, query }, o) => {
        const keywordOnly = fuse(keyword, [], new Map(), query, { ...o, denseWeight: 0 });
        expect(keywordOnly.map((c) => c.chunkId)).toEqual(
          [...keyword].sort(byScore).map((c) => c.chunkId),
        );
        const semanticOnly = fuse(
          [],
          semantic,
          cosine,
          { ...query, coverage: 1 },
          {
            ...o,
            denseWeight: 1,
          },
        );
        // Without a keyword match S is 1 − standOutWeight; a score stays below 1 (ranking.ts
        // MAX_SCORE, 1 − 2^-52: a cosine of 1 − 2^-53 scores that).
        const S = 1 - o.standOutWeight;
        expect(semanticOnly).toEqual(
          semantic
            .map((s) => ({
              chunkId: s.chunkId,
              score: Math.min(Math.max(0, s.score) * S, 1 - 2 ** -52),
            }))
            .sort(byScore),
        );
      }),
    );
  });

  it('keeps an exact identifier match first; lets the cosine rank a paraphrase (examples)', () => {
    const cosine = new Map([
      ['exact', 0.2],
      ['common-word', 0.3],
      ['meaning', 0.8],
    ]);
    // `BZ_NO_STDIO`: one rare identifier (idf ≈ 6, so the query can score at most 13.2) matched in
    // full scores a BM25 of 9; the model knows none of it (coverage 0.1).
    const identifier = fuse(
      [{ chunkId: 'exact', score: 9 }],
      [{ chunkId: 'meaning', score: 0.8 }],
      cosine,
      { keywordMax: 13.2, coverage: 0.1 },
    );
    expect(identifier.map((c) => c.chunkId)).toEqual(['exact', 'meaning']);
    expect(identifier[0]!.score).toBeGreaterThan(0.9);
    // Even with a model that knows every word, a full match of the query leaves dense no room.
    const understood = fuse(
      [{ chunkId: 'exact', score: 9 }],
      [{ chunkId: 'meaning', score: 0.8 }],
      cosine,
      { keywordMax: 13.2, coverage: 1 },
    );
    expect(understood.map((c) => c.chunkId)).toEqual(['exact', 'meaning']);
    // A paraphrase: six informative words (max 80), one common one matched (BM25 4, r = 0.05).
    const paraphrase = fuse(
      [{ chunkId: 'common-word', score: 4 }],
      [
        { chunkId: 'meaning', score: 0.8 },
        { chunkId: 'common-word', score: 0.3 },
      ],
      cosine,
      { keywordMax: 80, coverage: 0.95 },
    );
    expect(paraphrase.map((c) => c.chunkId)).toEqual(['meaning', 'common-word']);
    // Its one match leads by 4 / 80 = 0.05 of what the query could score: S = 1 − 0.15 × 0.5.
    const room = 0.9 * 0.95 * (1 - keywordEvidence(4, 80));
    expect(paraphrase[0]!.score).toBeCloseTo(room * 0.8 * 0.925, 12);
    // A tiny collection where every idf collapses to ~0: even a full match says nothing (T ≈ 0),
    // the cosine ranks, and a match without a vector still scores above 0.
    const collapsed = fuse(
      [{ chunkId: 'exact', score: 2e-6 }],
      [{ chunkId: 'meaning', score: 0.8 }],
      cosine,
      { keywordMax: 4.4e-6, coverage: 1 },
    );
    expect(collapsed.map((c) => c.chunkId)).toEqual(['meaning', 'exact']);
    const stale = fuse([{ chunkId: 'stale', score: 1e-6 }], [], new Map(), {
      keywordMax: 2.2e-6,
      coverage: 1,
    });
    expect(stale[0]!.score).toBeGreaterThan(0);
    // The bound holds at the extremes: full dense weight, a cosine of 1, a BM25 beyond resolution.
    const w1 = { ...DEFAULT_FUSION, denseWeight: 1 };
    for (const score of [0, 1e-6, 16, 1e6, 1e300]) {
      const fused = fuse(
        [{ chunkId: 'x', score }],
        [],
        new Map([['x', 1]]),
        {
          keywordMax: 20,
          coverage: 1,
        },
        w1,
      );
      expect(fused[0]!.score).toBeLessThan(1);
    }
  });

  it('scales every score of a query by one S: the order is the order without it', () => {
    fc.assert(
      fc.property(inputs, anyOptions, ({ keyword, semantic, cosine, query }, o) => {
        const without = fuse(keyword, semantic, cosine, query, { ...o, standOutWeight: 0 });
        const withS = fuse(keyword, semantic, cosine, query, o);
        const S = standOutFactor(keyword, query.keywordMax, o);
        expect(S).toBeGreaterThanOrEqual(1 - o.standOutWeight);
        expect(S).toBeLessThanOrEqual(1);
        // Same order, except where rounding makes two scores equal (then by id, like any tie).
        const plain = new Map(without.map((c) => [c.chunkId, c.score]));
        for (let i = 1; i < withS.length; i++) {
          const [a, b] = [withS[i - 1]!, withS[i]!];
          if (a.score !== b.score)
            expect(plain.get(a.chunkId)!).toBeGreaterThan(plain.get(b.chunkId)!);
        }
        for (const c of withS) expect(c.score).toBeCloseTo(plain.get(c.chunkId)! * S, 12);
      }),
      { numRuns: 300 },
    );
  });

  it('S: 1 when the best match leads the next by standOutGap × M; exact duplicates do not count', () => {
    const o = DEFAULT_FUSION; // weight 0.15, gap 0.1
    const k = (chunkId: string, score: number) => ({ chunkId, score });
    // M 40: the best (20) leads the next (10) by 0.25 M → 1.
    expect(standOutFactor([k('a', 20), k('b', 10)], 40, o)).toBe(1);
    // Leads by 1 / 40 = 0.025 M: a quarter of the gap → 1 − 0.15 × 0.75.
    expect(standOutFactor([k('a', 20), k('b', 19)], 40, o)).toBeCloseTo(0.8875, 12);
    // An exact duplicate of the best is the same passage twice: the lead is over 19.
    expect(standOutFactor([k('a', 20), k('a2', 20), k('b', 19)], 40, o)).toBeCloseTo(0.8875, 12);
    // A lone match leads by its own score; no match at all: 1 − weight.
    expect(standOutFactor([k('a', 2)], 40, o)).toBeCloseTo(1 - 0.15 * 0.5, 12);
    expect(standOutFactor([], 40, o)).toBe(0.85);
    // An on-topic question the documents do not answer scores lower than one they answer with
    // the same evidence, where its best match does not stand out.
    const cosine = new Map([
      ['a', 0.7],
      ['b', 0.7],
    ]);
    const query = { keywordMax: 40, coverage: 0.9 };
    const answered = fuse([k('a', 12), k('b', 6)], [], cosine, query);
    const common = fuse([k('a', 12), k('b', 11.5)], [], cosine, query);
    expect(common[0]!.score).toBeLessThan(answered[0]!.score - 0.1);
  });

  it('keeps the documented defaults and the keyword-mode score', () => {
    expect(DEFAULT_FUSION).toEqual({
      keywordHalf: 0.2,
      steepness: 3,
      denseWeight: 0.9,
      trustScale: 4,
      standOutWeight: 0.15,
      standOutGap: 0.1,
      cosineFloor: 0,
      cosineCeiling: 1,
      roomShrink: 1,
      normalize: false,
    });
    expect(SENTENCE_FUSION).toEqual({
      keywordHalf: 0.5,
      steepness: 3,
      denseWeight: 1.2,
      trustScale: 4,
      standOutWeight: 0.15,
      standOutGap: 0.1,
      cosineFloor: 0.25,
      cosineCeiling: 0.85,
      roomShrink: 0.75,
      normalize: true,
    });
    // A catalogue model brings the range of its cosines; another model keeps the profile's.
    expect(fusionFor('transformers:bge-small-en-v1.5@q8')).toEqual({
      ...SENTENCE_FUSION,
      cosineFloor: 0.4,
      cosineCeiling: 0.9,
    });
    expect(fusionFor('transformers:Xenova/all-MiniLM-L6-v2')).toMatchObject({
      cosineFloor: 0.1,
      cosineCeiling: 0.8,
    });
    expect(fusionFor('openai:text-embedding-3-small')).toEqual(SENTENCE_FUSION);
    expect(fusionFor('glove-sif-100d')).toEqual(DEFAULT_FUSION);
    expect(FUSION_PROFILES).toEqual({ 'word-vectors': DEFAULT_FUSION, sentence: SENTENCE_FUSION });
    expect(fusionProfileOf('glove-sif-100d')).toBe('word-vectors');
    expect(fusionProfileOf('transformers:bge-small-en-v1.5')).toBe('sentence');
    expect(fusionProfileOf('openai:text-embedding-3-small')).toBe('sentence');
    expect(keywordScore(16)).toBeCloseTo(0.55, 10);
    expect(keywordScore(0)).toBe(0.1);
    expect(keywordScore(1e300)).toBeLessThan(1);
  });
});

type Input = typeof inputs extends fc.Arbitrary<infer T> ? T : never;

describe('rank', () => {
  const modes = fc.constantFrom<'keyword' | 'semantic' | 'hybrid'>('keyword', 'semantic', 'hybrid');
  const ask = (mode: 'keyword' | 'semantic' | 'hybrid', input: Input, minScore?: number) =>
    rank(
      { mode, topK: 100, ...(minScore === undefined ? {} : { minScore }) },
      { vector: new Float32Array(0), coverage: input.query.coverage },
      {
        keyword: input.keyword,
        semantic: input.semantic,
        cosine: input.cosine,
        keywordMax: input.query.keywordMax,
      },
    );

  it('drops padding only: a hit under PADDING_FRACTION of the best evidence, in every mode', () => {
    fc.assert(
      fc.property(inputs, modes, (input, mode) => {
        const all = ask(mode, input, -1);
        const kept = ask(mode, input);
        // The kept hits are the positive hits of the full answer, in its order, minus a tail.
        const positive = all.filter((c) => c.score > 0);
        expect(positive.slice(0, kept.length)).toEqual(kept);
        const strength = (c: Candidate) =>
          mode === 'keyword'
            ? (input.keyword.find((k) => k.chunkId === c.chunkId)?.score ?? 0)
            : mode === 'semantic'
              ? Math.min(1, Math.max(0, c.score))
              : c.score;
        const best = Math.max(0, ...positive.map(strength));
        for (const c of positive) {
          const isKept = kept.some((k) => k.chunkId === c.chunkId);
          expect(isKept).toBe(strength(c) >= PADDING_FRACTION * best);
        }
      }),
    );
  });

  it('keeps every hit minScore keeps when minScore is given (it overrides the padding rule)', () => {
    fc.assert(
      fc.property(
        inputs,
        modes,
        fc.double({ min: -1, max: 0.5, noNaN: true }),
        (input, mode, min) => {
          const all = ask(mode, input, -1);
          expect(ask(mode, input, min)).toEqual(all.filter((c) => c.score >= min));
        },
      ),
    );
  });

  it("keeps the exact answer and drops what only resembles the query (the issue's example)", () => {
    // A flag matched in full by two passages; three others share none of its words.
    const keyword = [
      { chunkId: 'flag', score: 14 },
      { chunkId: 'mention', score: 6 },
    ];
    const semantic = ['a', 'b', 'c'].map((chunkId, i) => ({ chunkId, score: 0.5 - i * 0.05 }));
    const hits = rank(
      { mode: 'hybrid', topK: 5 },
      { vector: new Float32Array(0), coverage: 1 },
      { keyword, semantic, cosine: new Map(), keywordMax: 15 },
    );
    expect(hits.map((h) => h.chunkId)).toEqual(['flag', 'mention']);
  });
});

describe('keywordEvidence', () => {
  it("depends on the share of the query's largest attainable BM25, not on its scale", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.001, max: 1, noNaN: true }),
        fc.double({ min: 200, max: 1000, noNaN: true }),
        fc.double({ min: 200, max: 1000, noNaN: true }),
        (r, a, b) => {
          // Beyond ~40 trust scales T is 1 to double precision.
          expect(keywordEvidence(r * a, a)).toBeCloseTo(keywordEvidence(r * b, b), 12);
        },
      ),
    );
    const { keywordHalf, trustScale } = DEFAULT_FUSION;
    expect(keywordEvidence(keywordHalf * 1000, 1000)).toBeCloseTo(0.5, 12);
    // A weak query (every word common): the same share counts for less.
    expect(keywordEvidence(0.5, 1)).toBeCloseTo(
      (1 - Math.exp(-1 / trustScale)) * keywordEvidence(500, 1000),
      12,
    );
    expect(keywordEvidence(0, 10)).toBe(0);
    expect(keywordEvidence(5, 0)).toBe(0);
  });

  it('is monotonic in BM25 and in [0, 1)', () => {
    fc.assert(
      fc.property(bm25, bm25, bm25, options, (a, b, max, o) => {
        const [lo, hi] = a < b ? [a, b] : [b, a];
        expect(keywordEvidence(lo, max, o)).toBeLessThanOrEqual(keywordEvidence(hi, max, o));
        expect(keywordEvidence(hi, max, o)).toBeLessThan(1);
        expect(keywordEvidence(lo, max, o)).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});

describe('calibrateBm25', () => {
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
