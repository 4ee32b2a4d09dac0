/**
 * Which candidates of a hybrid search need their exact cosine. Each one is a vector read from the
 * table: a random page of a large file, ~0.13 ms apiece when the file is not in the page cache
 * (at a million chunks, a hybrid search's reads of ~60 vectors were a third of its time). Yet an
 * answer of ten needs few of them exactly.
 *
 * Every candidate's cosine has bounds without a read (its int8 copy's, vector/vector-rows.ts
 * `cosineBounds`), and fusion is non-decreasing in the cosine (retrieval/ranking.ts
 * `fusedScorer`), so a candidate's fused score lies between its score at the lower bound and at
 * the upper one. With
 * the `top`-th best of the lower scores as the floor, a candidate whose upper score is below it
 * scores less than `top` others: it cannot enter the answer, and only the others are read.
 *
 * The answer is then the same, passages, order and scores, as with every cosine read:
 * - A keyword candidate left unread is fused without its cosine, lower still (below the floor).
 * - The nearest chunks enter the fusion only when read, the best `top` of those read. When all
 *   `top` nearest are read, those are they. When one is not, it scores below the floor, and so
 *   does every farther chunk without a keyword match (at most its score): such a chunk read
 *   instead cannot enter the answer either.
 * Which of several chunks with the very same cosine (duplicates) count as the nearest is left
 * to the order they come in, as when every cosine is read.
 */
import type { Candidate } from '../chunk-store.js';
import { keepFloor } from './common/top-k.js';
import type { BoundedNearest, CosineBounds } from './vector/vector-types.js';

/** A candidate of a fused answer: its BM25 (0: no keyword match) and its cosine's bounds. */
export interface BoundedCandidate extends CosineBounds {
  chunkId: string;
  bm25: number;
}

/**
 * The ids of the candidates (one per chunk) whose exact cosine can change the top `top` of the
 * fused answer; `score(bm25, cosine)`: the fused score, non-decreasing in the cosine.
 */
export function cosinesNeeded(
  candidates: readonly BoundedCandidate[],
  score: (bm25: number, cosine: number) => number,
  top: number,
): string[] {
  const floor = keepFloor(
    candidates.map((c) => score(c.bm25, c.lower)),
    top,
  );
  return candidates
    .filter((c) => c.lower !== c.upper && score(c.bm25, c.upper) >= floor)
    .map((c) => c.chunkId);
}

/**
 * The nearest chunks that can be among the best `keep` by exact cosine: those whose upper bound
 * reaches the `keep`-th best lower bound (all when there are no more than `keep`).
 */
export function nearestContenders<T extends CosineBounds>(
  nearest: readonly T[],
  keep: number,
): T[] {
  const floor = keepFloor(
    nearest.map((n) => n.lower),
    keep,
  );
  return nearest.filter((n) => n.upper >= floor);
}

/** Where a fused search gets its candidates' cosines: bounds without a read, and exact reads. */
export interface CosineSource {
  /** Bounds of the cosines of the chunks that have a vector. */
  bounds(chunkIds: readonly string[]): Map<string, CosineBounds>;
  /** Exact cosines of the chunks that have a vector. */
  read(chunkIds: readonly string[]): Map<string, number>;
}

/**
 * The evidence of a fused answer of `top` (retrieval/ranking.ts `fuse`), given the keyword
 * candidates and the chunks that can be among the `top` nearest (`nearestContenders`): every
 * keyword candidate, the best `top` of the nearest chunks whose cosine was read, and the cosines
 * read (only those `cosinesNeeded` names).
 */
export function fusedEvidence(
  keyword: readonly Candidate[],
  nearest: readonly BoundedNearest[],
  cosines: CosineSource,
  score: (bm25: number, cosine: number) => number,
  top: number,
): { keyword: Candidate[]; semantic: Candidate[]; cosine: Map<string, number> } {
  const pool = new Map<string, BoundedCandidate>();
  const bounds = cosines.bounds(keyword.map((k) => k.chunkId));
  for (const k of keyword) {
    const { lower, upper } = bounds.get(k.chunkId) ?? { lower: 0, upper: 0 };
    const bm25 = Math.max(k.score, pool.get(k.chunkId)?.bm25 ?? 0);
    pool.set(k.chunkId, { chunkId: k.chunkId, bm25, lower, upper });
  }
  for (const n of nearest) {
    if (!pool.has(n.chunkId)) pool.set(n.chunkId, { ...n, bm25: 0 });
  }
  const needed = cosinesNeeded([...pool.values()], score, top);
  const cosine = needed.length === 0 ? new Map<string, number>() : cosines.read(needed);
  // A cosine its bounds pin down is known without a read.
  for (const c of pool.values()) if (c.lower === c.upper) cosine.set(c.chunkId, c.lower);
  const semantic: Candidate[] = [];
  for (const n of nearest) {
    const c = cosine.get(n.chunkId);
    if (c !== undefined) semantic.push({ chunkId: n.chunkId, score: c });
  }
  // The `top` nearest of those read: the nearest chunks themselves when all of them were read.
  semantic.sort((a, b) => b.score - a.score);
  return { keyword: [...keyword], semantic: semantic.slice(0, top), cosine };
}
