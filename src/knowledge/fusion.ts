/**
 * Score fusion for hybrid retrieval (pure). Two tiers: every passage that matches the query's
 * words (keyword tier, score ≥ KEYWORD_FLOOR) ranks above every passage found by meaning only
 * (score < KEYWORD_FLOOR), so hybrid never buries a keyword match under a weak dense guess — even
 * on small collections, where BM25's IDF collapses to ~0 for words in half the chunks. Within the
 * keyword tier the semantic signal re-scores a little; meaning-only passages fill the rest.
 * With a weak offline embedding model, fusing rank lists as equals (RRF) is measurably worse
 * than BM25 alone.
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

/** Lowest score of a keyword match; meaning-only passages score below it. */
export const KEYWORD_FLOOR = 0.1;

/** BM25 (≥ 0, unbounded) → 0..1, monotonic, comparable across queries: s / (s + half). */
export function calibrateBm25(score: number, half: number): number {
  return score <= 0 ? 0 : score / (score + half);
}

/**
 * The score of a keyword match in `keyword` mode: KEYWORD_FLOOR + 0.9 × calibrated BM25, in
 * [0.1, 1). The floor keeps a match visible where SQLite's BM25 IDF collapses to ~0 (words in half
 * of a small collection's chunks).
 */
export function keywordScore(bm25: number, half = DEFAULT_FUSION.bm25Half): number {
  return KEYWORD_FLOOR + (1 - KEYWORD_FLOOR) * calibrateBm25(bm25, half);
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
  const span = 1 - KEYWORD_FLOOR;
  for (const k of keyword) {
    const kw = calibrateBm25(k.score, options.bm25Half);
    const cos = Math.max(0, cosine.get(k.chunkId) ?? 0);
    scores.set(k.chunkId, KEYWORD_FLOOR + span * ((1 - w) * kw + w * cos));
  }
  for (const s of semantic) {
    if (scores.has(s.chunkId)) continue;
    scores.set(s.chunkId, 0.99 * KEYWORD_FLOOR * Math.max(0, s.score));
  }
  return [...scores]
    .map(([chunkId, score]) => ({ chunkId, score }))
    .sort(
      (a, b) => b.score - a.score || (a.chunkId < b.chunkId ? -1 : a.chunkId > b.chunkId ? 1 : 0),
    );
}
