/**
 * Score fusion for hybrid retrieval (pure). Keyword (BM25) evidence leads; the semantic signal
 * re-scores the keyword candidates a little and brings in passages the keywords missed. With a
 * weak offline embedding model, fusing rank lists as equals (RRF) is measurably worse than BM25
 * alone, so the dense weight is small where keywords matched well.
 */
import type { Candidate } from './search/chunk-store.js';

export interface FusionOptions {
  /** Weight of the semantic score among keyword candidates (0..1). */
  denseWeight: number;
  /** BM25 score at which keyword evidence counts as half-strong: calibrates BM25 into 0..1. */
  bm25Half: number;
}

/**
 * Tuned on SciFact train with `bench/fusion-sweep.ts` (nDCG@10): BM25 alone 0.7012; w 0.1 /
 * half 16 → 0.7028; w 0.2 → 0.7005; w 0.3 → 0.6997. Larger dense weights lose.
 */
export const DEFAULT_FUSION: FusionOptions = { denseWeight: 0.1, bm25Half: 16 };

/** BM25 (≥ 0, unbounded) → 0..1, monotonic, comparable across queries: s / (s + half). */
export function calibrateBm25(score: number, half: number): number {
  return score <= 0 ? 0 : score / (score + half);
}

/**
 * Fuses keyword and semantic candidates into one list ordered by score (ties by chunk id).
 * `cosine` holds the similarity of every candidate that has a vector of the active model.
 */
export function fuse(
  keyword: readonly Candidate[],
  semantic: readonly Candidate[],
  cosine: ReadonlyMap<string, number>,
  options: FusionOptions = DEFAULT_FUSION,
): Candidate[] {
  const scores = new Map<string, number>();
  const w = options.denseWeight;
  for (const k of keyword) {
    const kw = calibrateBm25(k.score, options.bm25Half);
    const cos = Math.max(0, cosine.get(k.chunkId) ?? 0);
    scores.set(k.chunkId, (1 - w) * kw + w * cos);
  }
  // Passages without keyword evidence can only rank by meaning; they sit below keyword matches of
  // comparable strength, because the offline dense model is weak on its own.
  for (const s of semantic) {
    if (scores.has(s.chunkId)) continue;
    scores.set(s.chunkId, w * Math.max(0, s.score));
  }
  return [...scores]
    .map(([chunkId, score]) => ({ chunkId, score }))
    .sort(
      (a, b) => b.score - a.score || (a.chunkId < b.chunkId ? -1 : a.chunkId > b.chunkId ? 1 : 0),
    );
}
