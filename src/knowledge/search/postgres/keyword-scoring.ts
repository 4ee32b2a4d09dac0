/**
 * BM25 over postings rows, in memory (keyword-search.ts reads them): the same arithmetic in the
 * same order as SQLite's in-process index (sqlite/keyword-index.ts), so both engines give the same
 * scores to the bit and the same ranking (ties in index order, by seq).
 */
import { B, idf, K1 } from '../bm25.js';
import type { SearchFilter } from '../chunk-store.js';
import type { PostingsRow } from './postings-cache.js';

/** A query lexeme and its chunk count n(t). */
export interface QueryLexeme {
  lexeme: string;
  df: number;
}

/** A scored chunk: its keyword row's seq (index order) and BM25. */
export interface ScoredSeq {
  seq: number;
  score: number;
}

/** A document's slots in the score arrays: its chunks' seqs from `base`, `size` of them. */
interface DocumentSlots {
  base: number;
  start: number;
  size: number;
}

interface Ranked {
  slot: number;
  seq: number;
  score: number;
}

/** `a` ranks below `b`: a lower score, or the same score and a later seq. */
const below = (a: Ranked, b: Ranked) => a.score < b.score || (a.score === b.score && a.seq > b.seq);

/**
 * The `limit` best (score, slot) pairs, best first, ties by seq (index order, as SQLite's rowid):
 * one pass keeping a heap of the `limit` best so far (its worst on top), so that only slots that
 * enter it are looked up and turned into objects.
 */
function topK(
  scores: Float64Array,
  touched: readonly number[],
  seqOf: (slot: number) => number,
  limit: number,
): Ranked[] {
  const heap: Ranked[] = [];
  const down = (from: number) => {
    for (let i = from; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < heap.length && below(heap[l] as Ranked, heap[worst] as Ranked)) worst = l;
      if (r < heap.length && below(heap[r] as Ranked, heap[worst] as Ranked)) worst = r;
      if (worst === i) return;
      [heap[i], heap[worst]] = [heap[worst] as Ranked, heap[i] as Ranked];
      i = worst;
    }
  };
  for (const slot of touched) {
    const score = scores[slot] as number;
    if (heap.length < limit) {
      heap.push({ slot, seq: seqOf(slot), score });
      for (let i = heap.length - 1; i > 0;) {
        const parent = (i - 1) >> 1;
        if (!below(heap[i] as Ranked, heap[parent] as Ranked)) break;
        [heap[i], heap[parent]] = [heap[parent] as Ranked, heap[i] as Ranked];
        i = parent;
      }
      continue;
    }
    const top = heap[0] as Ranked;
    if (score < top.score) continue;
    const candidate = { slot, seq: seqOf(slot), score };
    if (!below(top, candidate)) continue;
    heap[0] = candidate;
    down(0);
  }
  return heap.sort((a, b) => b.score - a.score || a.seq - b.seq);
}

/**
 * A row's BM25 parts of its lexeme, one per posting (FTS5's formula, as keyword-index.ts writes
 * it): kept on the row, since a cached row is scored again with the same idf and average length
 * until the generation changes (checked here too: they are the row's key).
 */
function impactsOf(row: PostingsRow, w: number, avgdl: number): Float64Array {
  const kept = row.impacts;
  if (kept !== undefined && kept.w === w && kept.avgdl === avgdl) return kept.values;
  const { lengths, counts, size } = row.postings;
  const values = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    const f = (counts[i] as number) / 2;
    const d = lengths[i] as number;
    values[i] = w * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + (B * d) / avgdl)));
  }
  row.impacts = { w, avgdl, values };
  return values;
}

/** Whether a row (of a searchable document) is in the scope of the filter's plain conditions. */
function scopeOf(filter: SearchFilter): (row: PostingsRow) => boolean {
  const allowed = filter.documentIds === undefined ? null : new Set(filter.documentIds);
  return (row) =>
    (filter.projectId === undefined || row.projectKey === filter.projectId) &&
    (filter.documentId === undefined || row.documentId === filter.documentId) &&
    (allowed === null || allowed.has(row.documentId));
}

/** Score arrays reused between searches: no 800 KB to allocate and collect per search at 100k. */
export class KeywordScorer {
  private scratch = new Float64Array(0);

  /**
   * The `limit` best chunks for the lexeme groups (each all-of; a group of one is one word), with
   * the rows of each lexeme given (rows out of the filter's scope are skipped), N = `chunks` and
   * the average length `avgdl`.
   */
  top(
    groups: readonly (readonly QueryLexeme[])[],
    rowsOf: (lexeme: string) => readonly PostingsRow[],
    filter: SearchFilter,
    chunks: number,
    avgdl: number,
    limit: number,
  ): ScoredSeq[] {
    const inScope = scopeOf(filter);
    // Each document's slots: from its first chunk's seq to the last one any lexeme holds.
    const byDocument = new Map<string, DocumentSlots>();
    const scoped = new Map<string, { start: number; row: PostingsRow }[]>();
    const placed: { row: PostingsRow; list: { start: number; row: PostingsRow }[] }[] = [];
    for (const lexeme of new Set(groups.flat().map((l) => l.lexeme))) {
      const list: { start: number; row: PostingsRow }[] = [];
      scoped.set(lexeme, list);
      for (const row of rowsOf(lexeme)) {
        if (!inScope(row)) continue;
        placed.push({ row, list });
        const { postings } = row;
        const last = postings.size === 0 ? 0 : (postings.offsets[postings.size - 1] ?? 0);
        const doc = byDocument.get(row.documentId);
        if (doc === undefined) {
          byDocument.set(row.documentId, { base: row.base, start: 0, size: last + 1 });
        } else doc.size = Math.max(doc.size, last + 1);
      }
    }
    if (placed.length === 0) return [];
    const documents = [...byDocument.values()];
    let slots = 0;
    for (const doc of documents) {
      doc.start = slots;
      slots += doc.size;
    }
    for (const { row, list } of placed) {
      list.push({ start: byDocument.get(row.documentId)?.start ?? 0, row });
    }
    // Nothing awaits between filling the reused array and clearing its touched slots.
    if (this.scratch.length < slots) this.scratch = new Float64Array(slots);
    const scores = this.scratch;
    const touched: number[] = [];
    // The scores of one lexeme added to `target`.
    const addLexeme = (
      { lexeme, df }: QueryLexeme,
      target: Float64Array,
      hit: number[],
      seen: Uint16Array | null,
    ): void => {
      const w = idf(chunks, df);
      for (const { start, row } of scoped.get(lexeme) ?? []) {
        const { offsets, size } = row.postings;
        const impacts = impactsOf(row, w, avgdl);
        for (let i = 0; i < size; i++) {
          const r = start + (offsets[i] as number);
          if (target[r] === 0) hit.push(r);
          target[r] = (target[r] as number) + (impacts[i] as number);
          if (seen !== null) seen[r] = (seen[r] as number) + 1;
        }
      }
    };
    let partial: Float64Array | null = null;
    let seen: Uint16Array | null = null;
    for (const group of groups) {
      const first = group[0];
      if (first === undefined) continue;
      if (group.length === 1) {
        addLexeme(first, scores, touched, null);
        continue;
      }
      // An all-of group (a segmented word): its terms count only where every lexeme occurs.
      partial ??= new Float64Array(slots);
      seen ??= new Uint16Array(slots);
      const hit: number[] = [];
      for (const lexeme of group) addLexeme(lexeme, partial, hit, seen);
      for (const r of hit) {
        if (seen[r] === group.length) {
          if (scores[r] === 0) touched.push(r);
          scores[r] = (scores[r] as number) + (partial[r] as number);
        }
        partial[r] = 0;
        seen[r] = 0;
      }
    }
    const seqOf = (slot: number): number => {
      // The document whose slots hold `slot` (documents in slot order).
      let lo = 0;
      let hi = documents.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if ((documents[mid]?.start ?? 0) <= slot) lo = mid;
        else hi = mid - 1;
      }
      const doc = documents[lo];
      return doc === undefined ? 0 : doc.base + (slot - doc.start);
    };
    const top = topK(scores, touched, seqOf, limit);
    for (const slot of touched) scores[slot] = 0;
    return top.map(({ seq, score }) => ({ seq, score }));
  }
}
