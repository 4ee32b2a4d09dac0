/**
 * `aps migrate-data`: how the answers of the two engines to one retrieval are compared (pure).
 */

/** A hit as compared: its chunk and score. */
export interface Hit {
  id: string;
  score: number;
}

/**
 * Scores closer than this are a tie: the engines compute cosines with their own rounding (a few
 * 1e-8 apart, and so the fused scores too); BM25, scored with SQLite's arithmetic on both, agreed
 * to the last bit in our runs.
 */
export const TIE = 1e-6;

/**
 * Whether two answers to one retrieval agree: `same` hits in the same order; `tied` when they
 * differ only among hits whose scores tie within TIE, that is position by position the same
 * scores, each run of tied scores the same set of chunks, but for the last run of a full answer
 * (`topK` hits), where each engine may have kept different ones of the chunks tied at the cut;
 * `different` otherwise. Ties are why exact order equality is not achievable: the ranking breaks
 * an exact tie by chunk id on both engines, but chunks of (nearly) the same text have cosines a
 * few 1e-8 apart that each engine computes with its own rounding (SQLite in float32 over its
 * copies, pgvector in float8 over float4), so their order flips between engines.
 */
export function compareHits(
  a: readonly Hit[],
  b: readonly Hit[],
  topK: number,
): 'same' | 'tied' | 'different' {
  if (a.length !== b.length) return 'different';
  if (a.every((h, i) => h.id === b[i]?.id)) return 'same';
  if (a.some((h, i) => Math.abs(h.score - (b[i]?.score ?? Number.NaN)) > TIE)) return 'different';
  for (let start = 0; start < a.length;) {
    let end = start + 1;
    while (end < a.length && Math.abs((a[end - 1]?.score ?? 0) - (a[end]?.score ?? 0)) <= TIE)
      end++;
    const atCut = end === a.length && a.length === topK;
    const ids = (hits: readonly Hit[]) => new Set(hits.slice(start, end).map((h) => h.id));
    const mine = ids(a);
    const theirs = ids(b);
    if (!atCut && (mine.size !== theirs.size || [...mine].some((id) => !theirs.has(id))))
      return 'different';
    start = end;
  }
  return 'tied';
}

/**
 * Whether the hits both answers hold have the same scores (within TIE) in the same order (up to
 * ties): the engines rank alike what they both found.
 */
export function commonAgree(a: readonly Hit[], b: readonly Hit[]): boolean {
  const inB = new Set(b.map((h) => h.id));
  const inA = new Set(a.map((h) => h.id));
  const common = (hits: readonly Hit[], other: Set<string>) => hits.filter((h) => other.has(h.id));
  const scoreInB = new Map(b.map((h) => [h.id, h.score]));
  return (
    a.every((h) => Math.abs(h.score - (scoreInB.get(h.id) ?? h.score)) <= TIE) &&
    compareHits(common(a, inB), common(b, inA), Number.POSITIVE_INFINITY) !== 'different'
  );
}

/**
 * The hits of `a` that `b` lacks and that `b`'s engine would have ranked in (not explained by its
 * cut: `b` holds fewer than `topK` hits, or the hit scores above `b`'s last one): chunks that
 * were not candidates there.
 */
export function notCandidatesOf(a: readonly Hit[], b: readonly Hit[], topK: number): string[] {
  const inB = new Set(b.map((h) => h.id));
  const floor = b.length < topK ? Number.NEGATIVE_INFINITY : (b.at(-1)?.score ?? 0) + TIE;
  return a.filter((h) => !inB.has(h.id) && h.score > floor).map((h) => h.id);
}
