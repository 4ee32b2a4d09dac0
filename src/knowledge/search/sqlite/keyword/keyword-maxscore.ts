/**
 * The keyword index's search for a query of several words (keyword-index.ts), document at a
 * time with MaxScore (Turtle & Flood 1995, as Lucene's MaxScoreBulkScorer): the words' posting
 * lists are walked together, row by row, and a row's score is summed on the spot, so no score
 * array the size of the index is written and read back.
 *
 * Each word's BM25 term is at most a bound (`idf · (k1 + 1) · times`, or tighter from its list's
 * largest count and shortest row, posting-skips.ts). With the lists sorted by
 * bound, the first ones whose bounds together cannot lift a row above the k-th best so far are
 * non-essential: rows are taken only from the other lists, and a non-essential list is looked in
 * (a jump through its skip entries, posting-skips.ts) only while the row could still make the
 * top k. The rarer words lead; a row that only holds common words is never visited once the top
 * k is good enough.
 *
 * Scores are summed in query order for the rows that are kept, as FTS5 and the term-at-a-time
 * search add them: the same numbers, bit for bit, and the same top k (ties by row).
 */
import { idf as idfOf, B, K1 } from '../../bm25.js';
import { END } from './keyword-postings.js';
import type { PostingLists } from './posting-lists.js';
import { SkipCursor, type PostingSkips } from './posting-skips.js';
import { TopK } from '../common/top-k.js';

/**
 * Relative margin of the bound checks: the partial sums add the words in another order than the
 * exact score (a few ulps apart), so a row is passed over only when it falls short by more.
 */
const SLACK = 1e-9;

/** What the search reads of the index. */
export interface MaxScoreIndex {
  lists: PostingLists;
  skips: PostingSkips;
  /** Live rows (FTS5's N) and the live rows holding a lexeme (n(t)). */
  size: number;
  matching(id: number): number;
  alive: Uint8Array;
  lengths: Int32Array;
  projectOf: Int32Array;
  documentOf: Int32Array;
}

/** The scope of one search: project number (-2: any), allowed documents (null: any). */
export interface MaxScoreScope {
  project: number;
  allowed: Uint8Array | null;
  avgdl: number;
}

/**
 * The best `limit` rows for the query's lexemes (query order, one per word, -1 for a lexeme no
 * text had) within the scope.
 */
export function maxScoreSearch(
  index: MaxScoreIndex,
  lexemes: readonly number[],
  scope: MaxScoreScope,
  limit: number,
): TopK {
  const { lists, skips, lengths } = index;
  const { project, allowed, avgdl } = scope;
  // The distinct lexemes with live rows, by bound (ascending), and their cursors. A word adds
  // less than idf · (k1 + 1) per time; with its list's largest count and shortest row known, the
  // bound is that count's term in that row.
  const distinct = [...new Set(lexemes)]
    .map((id) => {
      const hits = index.matching(id);
      const idf = hits === 0 ? 0 : idfOf(index.size, hits);
      const times = lexemes.filter((x) => x === id).length;
      const list = hits === 0 ? null : skips.of(lists, id, lengths);
      const f = (list?.maxDoubled ?? 0) / 2;
      const most =
        list === null ? K1 + 1 : (f * (K1 + 1)) / (f + K1 * (1 - B + (B * list.minLength) / avgdl));
      return { id, idf, times, list, bound: times * idf * most };
    })
    .filter((t) => t.idf > 0)
    .sort((a, b) => a.bound - b.bound);
  const m = distinct.length;
  const top = new TopK(limit);
  if (m === 0) return top;
  const cursors = distinct.map(
    (t) =>
      new SkipCursor(lists.bytes, lists.start[t.id] as number, lists.used[t.id] as number, t.list),
  );
  const idfs = Float64Array.from(distinct, (t) => t.idf);
  const times = Int32Array.from(distinct, (t) => t.times);
  /** prefix[i]: the bounds of lists 0…i together. */
  const prefix = new Float64Array(m);
  distinct.reduce((sum, t, i) => (prefix[i] = sum + t.bound), 0);
  /** The query's words in order, as cursor numbers (-1: no live row holds it). */
  const order = Int32Array.from(lexemes, (id) => distinct.findIndex((t) => t.id === id));
  const doubled = new Int32Array(m);
  const { alive, projectOf, documentOf } = index;
  // A word's term in a row whose length part is `norm` (K1 · (1 − B + B · d / avgdl), the same
  // number the term-at-a-time search computes in line).
  const term = (i: number, f: number, norm: number) =>
    (idfs[i] as number) * ((f * (K1 + 1.0)) / (f + norm));
  let floor = Number.NEGATIVE_INFINITY;
  /** Lists before `essential` are non-essential. */
  let essential = 0;
  for (;;) {
    let row = END;
    for (let i = essential; i < m; i++) row = Math.min(row, (cursors[i] as SkipCursor).row);
    if (row === END) break;
    const skip =
      alive[row] !== 1 ||
      (project !== -2 && projectOf[row] !== project) ||
      (allowed !== null && allowed[documentOf[row] as number] !== 1);
    const norm = K1 * (1 - B + (B * (lengths[row] as number)) / avgdl);
    let partial = 0;
    for (let i = essential; i < m; i++) {
      const cursor = cursors[i] as SkipCursor;
      if (cursor.row === row) {
        doubled[i] = cursor.doubled;
        if (!skip) partial += (times[i] as number) * term(i, cursor.doubled / 2, norm);
        cursor.next();
      } else doubled[i] = 0;
    }
    if (skip) continue;
    // The non-essential lists, largest bound first, while the row could still make the top k.
    let reachable = true;
    for (let i = essential - 1; i >= 0; i--) {
      if ((partial + (prefix[i] as number)) * (1 + SLACK) <= floor) {
        reachable = false;
        break;
      }
      const cursor = cursors[i] as SkipCursor;
      cursor.seek(row);
      doubled[i] = cursor.row === row ? cursor.doubled : 0;
      if (doubled[i] !== 0)
        partial += (times[i] as number) * term(i, (doubled[i] as number) / 2, norm);
    }
    if (!reachable || partial * (1 + SLACK) <= floor) continue;
    // The exact score: each word's term in query order.
    let score = 0;
    for (let q = 0; q < order.length; q++) {
      const i = order[q] as number;
      if (i >= 0 && doubled[i] !== 0) score += term(i, (doubled[i] as number) / 2, norm);
    }
    top.push(score, row);
    if (top.floor > floor) {
      floor = top.floor;
      while (essential < m && (prefix[essential] as number) * (1 + SLACK) <= floor) essential++;
    }
  }
  return top;
}
