/**
 * The common tail of both stores' `search()`: merge the cosines, rank, then put the loaded rows
 * in rank order. Synchronous, so the SQLite store can call it inside its (synchronous) snapshot.
 */
import type { Candidate, ChunkHit, Evidence, RankedHit, Ranking } from './chunk-store.js';

/** Ranks the evidence; the cosine of each semantic candidate joins those of the keyword ones. */
export function rankEvidence(evidence: Evidence, rank: Ranking): Candidate[] {
  for (const s of evidence.semantic) evidence.cosine.set(s.chunkId, s.score);
  return rank(evidence);
}

/** The ranked candidates with their rows, in rank order; chunks deleted meanwhile are left out. */
export function inRankOrder(ranked: readonly Candidate[], rows: readonly ChunkHit[]): RankedHit[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ranked.flatMap((c) => {
    const chunk = byId.get(c.chunkId);
    return chunk === undefined ? [] : [{ score: c.score, chunk }];
  });
}
