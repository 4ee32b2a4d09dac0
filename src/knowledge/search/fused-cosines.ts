/**
 * Which keyword candidates of a hybrid search still need their exact cosine. Each one is a vector
 * read from the table (a random page of a large file: at a million chunks these reads were a
 * fifth of a hybrid search's time when the file was not in the page cache), yet most of the
 * hundred candidates cannot enter an answer of ten.
 *
 * Fusion is non-decreasing in the cosine (fusion.ts `fusedScorer`), and each cosine has an upper
 * bound without a read (its int8 copy's, vector-rows.ts `cosineBounds`): a candidate whose score
 * at its bound is below the `top`-th best score already known exactly (the first `top` keyword
 * candidates, whose cosines were read, and the nearest chunks, whose cosines the vector search
 * computed) scores less than every passage of the answer. Fused without its cosine (as if it had
 * none), it scores less still: the answer, its order and its scores are the same as with every
 * cosine read.
 */
import type { Candidate } from './chunk-store.js';

/**
 * The ids of the keyword candidates after the first `looked` whose cosine could still change the
 * top `top` of the fused answer. `cosine` holds what was read of the first `looked` (a candidate
 * without a vector has none: 0 to fusion); `semantic`: the nearest chunks and their cosines;
 * `bound(id)`: at least the cosine a read would give.
 */
export function cosinesNeeded(
  keyword: readonly Candidate[],
  looked: number,
  cosine: ReadonlyMap<string, number>,
  semantic: readonly Candidate[],
  score: (bm25: number, cosine: number) => number,
  top: number,
  bound: (id: string) => number,
): string[] {
  const bm25 = new Map<string, number>();
  for (const k of keyword) bm25.set(k.chunkId, Math.max(k.score, bm25.get(k.chunkId) ?? 0));
  const known = new Map<string, number>();
  for (const k of keyword.slice(0, looked)) known.set(k.chunkId, cosine.get(k.chunkId) ?? 0);
  for (const s of semantic) known.set(s.chunkId, s.score);
  const rest = [...new Set(keyword.slice(looked).map((k) => k.chunkId))].filter(
    (id) => !known.has(id),
  );
  if (rest.length === 0 || known.size < top) return rest;
  const scores = [...known].map(([id, c]) => score(bm25.get(id) ?? 0, c)).sort((a, b) => b - a);
  const floor = scores[top - 1] as number;
  return rest.filter((id) => score(bm25.get(id) ?? 0, bound(id)) >= floor);
}
