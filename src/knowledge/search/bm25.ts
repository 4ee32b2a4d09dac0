/**
 * BM25 as SQLite FTS5's bm25() computes it (fts5_aux.c, fts5Bm25Function). Both engines score
 * keyword matches with these constants, so SQLite and PostgreSQL rank the same chunks the same:
 *
 *   idf(t)   = ln((N − n(t) + 0.5) / (n(t) + 0.5)), 1e-6 when not positive
 *   score(r) = Σ over the query words: idf · f·(k1 + 1) / (f + k1·(1 − b + b·D/avgD))
 *
 * with N the chunks, n(t) the chunks containing t, f the column-weighted count of t in the chunk,
 * D the chunk's words in all columns and avgD the mean of D.
 */

export const K1 = 1.2;
export const B = 0.75;

/**
 * Weights of the searched columns: a word in the section path counts twice, in the document
 * name one and a half times, in the text once.
 */
export const COLUMN_WEIGHTS = { name: 1.5, section: 2.0, content: 1.0 } as const;

/** FTS5's idf of a word found in `matching` of `rows` chunks. */
export function idf(rows: number, matching: number): number {
  const raw = Math.log((rows - matching + 0.5) / (matching + 0.5));
  return raw > 0 ? raw : 1e-6;
}

/**
 * The BM25 no chunk can reach for a query whose words have these idfs: a word's part,
 * idf · f·(k1 + 1) / (f + k1·(…)), grows with its count f towards idf · (k1 + 1) (BM25's
 * saturation). A query word found in no chunk counts with the idf of a word in none
 * (`idf(rows, 0)`): it is part of what the query asks for. The fusion measures keyword evidence
 * against this, so that one rare identifier matched in full counts as much as a long question
 * matched in full.
 */
export function maxBm25(idfs: Iterable<number>): number {
  let max = 0;
  for (const x of idfs) max += x * (K1 + 1);
  return max;
}
