import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { calibrateBm25, fuse } from '../../src/knowledge/fusion.js';
import { buildFtsQuery, queryTerms } from '../../src/knowledge/search/fts-query.js';

const candidates = fc.uniqueArray(
  fc.record({
    chunkId: fc.stringMatching(/^[a-z]{1,6}$/),
    score: fc.integer({ min: 0, max: 5000 }).map((n) => n / 100),
  }),
  { selector: (c) => c.chunkId, maxLength: 30 },
);

describe('fuse', () => {
  it('with zero dense weight keeps the keyword order exactly', () => {
    fc.assert(
      fc.property(candidates, (keyword) => {
        const sorted = [...keyword].sort(
          (a, b) => b.score - a.score || (a.chunkId < b.chunkId ? -1 : 1),
        );
        const fused = fuse(sorted, [], new Map(), { denseWeight: 0, bm25Half: 16 });
        expect(fused.map((c) => c.chunkId)).toEqual(sorted.map((c) => c.chunkId));
      }),
    );
  });

  it('is ordered, deterministic, contains every candidate once, scores in [0, 1)', () => {
    fc.assert(
      fc.property(candidates, candidates, (keyword, semanticRaw) => {
        const semantic = semanticRaw.map((c) => ({ chunkId: c.chunkId, score: c.score / 50 }));
        const cosine = new Map(semantic.map((s) => [s.chunkId, s.score]));
        const fused = fuse(keyword, semantic, cosine);
        expect(fuse(keyword, semantic, cosine)).toEqual(fused);
        expect(new Set(fused.map((c) => c.chunkId))).toEqual(
          new Set([...keyword, ...semantic].map((c) => c.chunkId)),
        );
        for (let i = 1; i < fused.length; i++)
          expect(fused[i - 1]!.score).toBeGreaterThanOrEqual(fused[i]!.score);
        for (const c of fused) {
          expect(c.score).toBeGreaterThanOrEqual(0);
          expect(c.score).toBeLessThan(1);
        }
      }),
    );
  });

  it('every keyword match outranks every meaning-only passage, even with a near-zero BM25', () => {
    fc.assert(
      fc.property(candidates, candidates, (keyword, semanticRaw) => {
        const semantic = semanticRaw.map((c) => ({
          chunkId: `s${c.chunkId}`,
          score: c.score / 50,
        }));
        const cosine = new Map(semantic.map((c) => [c.chunkId, c.score]));
        const fused = fuse(
          keyword.map((k) => ({ chunkId: `k${k.chunkId}`, score: k.score * 1e-8 })),
          semantic,
          cosine,
        );
        const lastKeyword = fused.findLastIndex((c) => !c.chunkId.startsWith('s'));
        const firstSemantic = fused.findIndex((c) => c.chunkId.startsWith('s'));
        if (lastKeyword >= 0 && firstSemantic >= 0) expect(lastKeyword).toBeLessThan(firstSemantic);
      }),
    );
  });

  it('calibrates BM25 monotonically into [0, 1)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (a, b) => {
          if (a < b) expect(calibrateBm25(a, 16)).toBeLessThanOrEqual(calibrateBm25(b, 16));
          expect(calibrateBm25(a, 16)).toBeLessThan(1);
        },
      ),
    );
    expect(calibrateBm25(16, 16)).toBe(0.5);
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
