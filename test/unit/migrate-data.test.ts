/** `aps migrate-data`'s pure parts: how answers of the two engines are compared, and batching. */
import { describe, expect, it } from 'vitest';
import { batches } from '../../src/cli/migrate-data-copy.js';
import {
  commonAgree,
  compareHits,
  notCandidatesOf,
  TIE,
} from '../../src/cli/migrate-data-compare.js';

const hits = (...pairs: [string, number][]) => pairs.map(([id, score]) => ({ id, score }));

describe('compareHits', () => {
  it('same ids in the same order are the same, whatever the float noise', () => {
    expect(compareHits(hits(['a', 0.9], ['b', 0.5]), hits(['a', 0.9 + 1e-8], ['b', 0.5]), 10)).toBe(
      'same',
    );
  });

  it('tied hits swapped are the same up to ties', () => {
    const a = hits(['a', 0.9], ['b', 0.7], ['c', 0.7 + TIE / 2], ['d', 0.1]);
    const b = hits(['a', 0.9], ['c', 0.7], ['b', 0.7], ['d', 0.1]);
    expect(compareHits(a, b, 10)).toBe('tied');
  });

  it('swapped hits of different scores differ', () => {
    const a = hits(['a', 0.9], ['b', 0.7], ['c', 0.6]);
    const b = hits(['a', 0.9], ['c', 0.7], ['b', 0.6]);
    expect(compareHits(a, b, 10)).toBe('different');
  });

  it('another chunk tied at the cut of a full answer is a tie; anywhere else it differs', () => {
    const a = hits(['a', 0.9], ['b', 0.5], ['c', 0.5]);
    const b = hits(['a', 0.9], ['c', 0.5], ['x', 0.5]);
    expect(compareHits(a, b, 3)).toBe('tied');
    // Not a full answer: nothing was cut, so the answers hold different chunks.
    expect(compareHits(a, b, 10)).toBe('different');
    const early = hits(['x', 0.9], ['b', 0.5], ['c', 0.5]);
    expect(compareHits(early, a, 3)).toBe('different');
  });

  it('answers of different lengths or scores differ', () => {
    expect(compareHits(hits(['a', 0.9]), hits(['a', 0.9], ['b', 0.2]), 10)).toBe('different');
    expect(compareHits(hits(['a', 0.9], ['b', 0.8]), hits(['b', 0.9], ['a', 0.8 - 1e-3]), 2)).toBe(
      'different',
    );
  });
});

describe('commonAgree and notCandidatesOf (hybrid answers that differ by candidates)', () => {
  // The second engine also had `x` as a candidate: it enters, and pushes `d` out at the cut.
  const a = hits(['a', 0.9], ['b', 0.8], ['c', 0.7], ['d', 0.6]);
  const b = hits(['a', 0.9], ['b', 0.8], ['x', 0.75], ['c', 0.7]);

  it('the hits both hold agree in score and order', () => {
    expect(commonAgree(a, b)).toBe(true);
    expect(commonAgree(a, hits(['b', 0.9], ['a', 0.8]))).toBe(false);
    expect(commonAgree(a, hits(['a', 0.9], ['b', 0.7]))).toBe(false);
  });

  it('names the hits the other engine would have ranked in, not those its cut explains', () => {
    expect(notCandidatesOf(b, a, 4)).toEqual(['x']);
    expect(notCandidatesOf(a, b, 4)).toEqual([]); // d scores under b's last hit
    expect(notCandidatesOf(a, b, 10)).toEqual(['d']); // b is not full: nothing was cut
  });
});

describe('batches', () => {
  const docs = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `d${i}` }));

  it('groups small documents up to the chunk budget, keeping order and every document once', () => {
    const counts = new Map(docs(10).map((d, i) => [d.id, i === 4 ? 50 : 3]));
    const out = batches(docs(10), counts, 10);
    expect(out.flat().map((d) => d.id)).toEqual(docs(10).map((d) => d.id));
    for (const batch of out) {
      const size = batch.reduce((s, d) => s + (counts.get(d.id as string) ?? 0), 0);
      // Over the budget only as a document alone.
      if (size > 10) expect(batch).toHaveLength(1);
    }
    expect(out.find((b) => b.some((d) => d.id === 'd4'))).toHaveLength(1);
  });

  it('a budget of one chunk puts each document in a batch of its own', () => {
    const counts = new Map(docs(5).map((d) => [d.id, 2]));
    expect(batches(docs(5), counts, 1)).toHaveLength(5);
  });
});
