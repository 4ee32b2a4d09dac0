/**
 * BM25 over postings rows, in memory (keyword-search.ts reads them): the same arithmetic in the
 * same order as SQLite's in-process keyword index (sqlite/keyword/keyword-index.ts), so both
 * engines give the same scores to the bit and the same ranking (ties in index order, by seq).
 */
import { B, idf, K1 } from '../../bm25.js';
import type { SearchFilter } from '../../chunk-store.js';
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
  touched: Int32Array,
  count: number,
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
  for (let t = 0; t < count; t++) {
    const slot = touched[t] as number;
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

/** The slots a pass touched, in a typed array (a JS array's push is 10–20× slower). */
class Touched {
  slots = new Int32Array(0);
  count = 0;

  reset(size: number): void {
    if (this.slots.length < size) this.slots = new Int32Array(size);
    this.count = 0;
  }
}

/**
 * Score arrays reused between searches: no 800 KB to allocate and collect per search at 100k.
 * Nothing awaits between filling them and clearing their touched slots.
 */
export class KeywordScorer {
  private scratch = new Float64Array(0);
  private partial = new Float64Array(0);
  private seen = new Uint16Array(0);
  private readonly touched = new Touched();
  private readonly hit = new Touched();

  /**
   * The `limit` best chunks for the lexeme groups (each all-of; a group of one is one word), with
   * the rows of each lexeme given (rows out of the filter's scope are skipped), N = `chunks` and
   * the average length `avgdl`; and the scores of the chunks `also` names (seqs) that match, in
   * scope, whatever their rank (a hybrid search's nearest chunks, postgres-searches.ts).
   */
  top(
    groups: readonly (readonly QueryLexeme[])[],
    rowsOf: (lexeme: string) => readonly PostingsRow[],
    filter: SearchFilter,
    chunks: number,
    avgdl: number,
    limit: number,
    also: readonly number[] = [],
  ): { top: ScoredSeq[]; also: ScoredSeq[] } {
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
    if (placed.length === 0) return { top: [], also: [] };
    const documents = [...byDocument.values()];
    let slots = 0;
    for (const doc of documents) {
      doc.start = slots;
      slots += doc.size;
    }
    for (const { row, list } of placed) {
      list.push({ start: byDocument.get(row.documentId)?.start ?? 0, row });
    }
    if (this.scratch.length < slots) this.scratch = new Float64Array(slots);
    const scores = this.scratch;
    const touched = this.touched;
    touched.reset(slots);
    // The scores of one lexeme added to `target` (`seen` counts the lexemes met per slot).
    const addLexeme = (
      { lexeme, df }: QueryLexeme,
      target: Float64Array,
      into: Touched,
      seen: Uint16Array | null,
    ): void => {
      const w = idf(chunks, df);
      const hit = into.slots;
      let count = into.count;
      for (const { start, row } of scoped.get(lexeme) ?? []) {
        const { offsets, size } = row.postings;
        const impacts = impactsOf(row, w, avgdl);
        for (let i = 0; i < size; i++) {
          const r = start + (offsets[i] as number);
          const score = target[r] as number;
          if (score === 0) hit[count++] = r;
          target[r] = score + (impacts[i] as number);
        }
        if (seen !== null) {
          for (let i = 0; i < size; i++) {
            const r = start + (offsets[i] as number);
            seen[r] = (seen[r] as number) + 1;
          }
        }
      }
      into.count = count;
    };
    for (const group of groups) {
      const first = group[0];
      if (first === undefined) continue;
      if (group.length === 1) {
        addLexeme(first, scores, touched, null);
        continue;
      }
      // An all-of group (a segmented word): its terms count only where every lexeme occurs.
      if (this.partial.length < slots) this.partial = new Float64Array(slots);
      if (this.seen.length < slots) this.seen = new Uint16Array(slots);
      const { partial, seen, hit } = this;
      hit.reset(slots);
      for (const lexeme of group) addLexeme(lexeme, partial, hit, seen);
      for (let h = 0; h < hit.count; h++) {
        const r = hit.slots[h] as number;
        if (seen[r] === group.length) {
          if (scores[r] === 0) touched.slots[touched.count++] = r;
          scores[r] = (scores[r] as number) + (partial[r] as number);
        }
        partial[r] = 0;
        seen[r] = 0;
      }
    }
    const seqOf = (slot: number): number => {
      // The document whose slots hold `slot` (documents in slot order).
      const doc = lastAtMost(documents, (d) => d.start, slot);
      return doc === undefined ? 0 : doc.base + (slot - doc.start);
    };
    const top = topK(scores, touched.slots, touched.count, seqOf, limit);
    const byBase = also.length === 0 ? [] : documents.toSorted((a, b) => a.base - b.base);
    const found = also.flatMap((seq) => {
      const slot = slotOf(byBase, seq);
      const score = slot === -1 ? 0 : (scores[slot] as number);
      return score > 0 ? [{ seq, score }] : [];
    });
    for (let t = 0; t < touched.count; t++) scores[touched.slots[t] as number] = 0;
    return { top: top.map(({ seq, score }) => ({ seq, score })), also: found };
  }
}

/**
 * The last of the documents (ascending by `key`) whose key is at most `value`, by binary search;
 * the first one when none is.
 */
function lastAtMost(
  documents: readonly DocumentSlots[],
  key: (d: DocumentSlots) => number,
  value: number,
): DocumentSlots | undefined {
  let lo = 0;
  let hi = documents.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (key(documents[mid] as DocumentSlots) <= value) lo = mid;
    else hi = mid - 1;
  }
  return documents[lo];
}

/** The slot of a seq among the documents' slots (sorted by base), -1 when none holds it. */
function slotOf(byBase: readonly DocumentSlots[], seq: number): number {
  const doc = lastAtMost(byBase, (d) => d.base, seq);
  return doc !== undefined && seq >= doc.base && seq < doc.base + doc.size
    ? doc.start + (seq - doc.base)
    : -1;
}
