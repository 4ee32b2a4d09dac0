/**
 * An in-process inverted index of the FTS5 table `knowledge_chunks_fts` that ranks exactly as
 * FTS5's bm25() does, in a fraction of the time: FTS5 calls bm25() once per matching row
 * (~0.8 µs each, ~25 ms for a common query word at 100k chunks); this index scores the same
 * postings from typed arrays in well under a millisecond.
 *
 * Scores are FTS5's, term for term (../bm25.ts), summed over the query phrases in order.
 * Lexemes are the ids of one Fts5Lexer, so they are FTS5's own.
 *
 * A query of several words is searched document at a time with MaxScore pruning
 * (keyword-maxscore.ts); one word, or a CJK word of several lexemes (all-of), term at a time.
 *
 * The FTS5 table stays the source of truth; the in-process copies (copies/in-process-copies.ts)
 * load this index from it and keep it in step (like the vector index).
 */
import { idf as idfOf, B, K1, maxBm25 } from '../../bm25.js';
import type { DocumentCandidate, IndexScope } from '../../chunk-store.js';
import { maxScoreSearch, type MaxScoreIndex } from './keyword-maxscore.js';
import { KeywordStore, type KeywordState } from './keyword-store.js';
import { PostingSkips, SkipCursor, SKIP_EVERY } from './posting-skips.js';
import { TopK } from '../common/top-k.js';

export type { KeywordRow, KeywordState } from './keyword-store.js';

/** The scope of one search: project number (-2: any), allowed documents by number (null: any). */
interface Scope {
  project: number;
  allowed: Uint8Array | null;
  avgdl: number;
}

interface KeywordHit extends DocumentCandidate {
  rowid: number;
  /** BM25, higher is better: minus FTS5's bm25(). */
  score: number;
}

/**
 * Row numbers a search collects, in a buffer kept from one search to the next: a common word
 * matches most rows, and a fresh array per search (8 bytes a row, grown by copies) was garbage
 * enough to make the heap grow under queries.
 */
class RowList {
  rows = new Int32Array(1024);
  length = 0;

  push(r: number): void {
    if (this.length === this.rows.length) {
      const rows = new Int32Array(this.rows.length * 2);
      rows.set(this.rows);
      this.rows = rows;
    }
    this.rows[this.length++] = r;
  }
}

export class KeywordIndex extends KeywordStore {
  private readonly touched = new RowList();
  private readonly groupRows = new RowList();
  private readonly skips: PostingSkips;
  /** False: every matching row is scored (the tests' and bench:keyword's reference). */
  prune: boolean;

  /** `skipEvery`: postings between skip entries (posting-skips.ts), small in tests. */
  constructor(options: { skipEvery?: number; prune?: boolean } = {}) {
    super();
    this.skips = new PostingSkips(options.skipEvery ?? SKIP_EVERY);
    this.prune = options.prune ?? true;
  }

  protected override compact(): void {
    super.compact();
    this.skips.clear();
  }

  override memoryReport(): Record<string, number> {
    return { ...super.memoryReport(), 'keyword skip entries': this.skips.byteLength };
  }

  /**
   * An index holding a snapshot's rows (keyword-store.ts `restore`; `owned`: the row arrays are
   * the index's to keep, a snapshot file's sections).
   */
  static fromState(
    state: KeywordState,
    lexemeIds: Int32Array,
    owned = false,
    options: ConstructorParameters<typeof KeywordIndex>[0] = {},
  ): KeywordIndex {
    const index = new KeywordIndex(options);
    index.restore(state, lexemeIds, owned);
    if (state.skips !== undefined) {
      index.skips.load(state.skips, index.lists, (id) => lexemeIds[id] ?? -1, index.count);
    }
    return index;
  }

  /** The rows and postings, and the long lists' skip entries (copies), for a snapshot. */
  override state(): KeywordState {
    return { ...super.state(), skips: this.skips.save() };
  }

  /**
   * Live rows holding the lexeme (FTS5's n(t)); 0 for -1 or an unknown id. Kept per lexeme
   * until a delete: counted again from its list then (decoded in line, as forEachPosting does).
   */
  private matching(id: number): number {
    if (id < 0 || id >= this.lists.capacity) return 0;
    if (this.liveAt[id] === this.epoch) return this.liveRows[id] as number;
    const { bytes, start, used } = this.lists;
    const end = (start[id] as number) + (used[id] as number);
    const alive = this.alive;
    let hits = 0;
    let row = -1;
    for (let p = start[id] as number; p < end;) {
      let b = bytes[p++] as number;
      let v = b & 0x7f;
      for (let shift = 7; b >= 0x80; shift += 7) {
        b = bytes[p++] as number;
        v |= (b & 0x7f) << shift;
      }
      row += v >>> 1;
      // The count's bytes: skipped.
      if ((v & 1) === 0) while ((bytes[p++] as number) >= 0x80);
      hits += alive[row] as number;
    }
    this.liveRows[id] = hits;
    this.liveAt[id] = this.epoch;
    return hits;
  }

  /**
   * Readies every list for searches, in slices (`slice` between them), so that searches do not
   * pay for it: counts the live rows of a list whose count is not known (a snapshot of an earlier
   * build, or after a delete), and makes the skip entries a long list lacks (posting-skips.ts: a
   * pass over the whole list, which a search made on its first look). How many lists were
   * counted or given entries: what a snapshot taken before lacks.
   */
  async prepareLists(slice: () => Promise<void>): Promise<number> {
    let readied = 0;
    for (let id = 0; id < this.lists.capacity; id++) {
      let work = this.liveAt[id] !== this.epoch;
      if (work) this.matching(id);
      if (!this.skips.has(id) && this.skips.of(this.lists, id, this.lengths) !== null) work = true;
      if (work) readied++;
      if (work || (id & 0xff) === 0) await slice();
    }
    return readied;
  }

  /**
   * The largest BM25 a row could score for the query's lexemes (one per query word, -1 for a
   * lexeme no text had; a word FTS5 splits gives several), from their idfs over the whole index
   * as the scores use them (bm25.ts maxBm25); 0 on an empty index. Counting each lexeme of a
   * split word on its own is what PostgreSQL does with the same word.
   */
  maxScore(lexemes: readonly number[]): number {
    const n = this.size;
    return n === 0 ? 0 : maxBm25(lexemes.map((id) => idfOf(n, this.matching(id))));
  }

  /**
   * The `limit` best rows for the query groups (the lexeme ids of each query word, -1 for a
   * lexeme no text had, in query order, repeats counted as FTS5 counts them) within the scope
   * filter, best first, ties by rowid. A group of several lexemes (a segmented CJK word) scores
   * only in the rows holding all of them, as FTS5 scores `("a" AND "b") OR "c"`.
   */
  search(groups: readonly (readonly number[])[], filter: IndexScope, limit: number): KeywordHit[] {
    const n = this.size;
    if (n === 0 || limit <= 0) return [];
    let project = -2;
    if (filter.projectId !== undefined) {
      project = this.projectNumbers.get(filter.projectId) ?? -3;
      if (project === -3) return [];
    }
    // The documents in scope, by number: one flag per document, checked per matching row.
    let allowed: Uint8Array | null = null;
    if (filter.documents !== undefined) {
      allowed = new Uint8Array(this.documentIds.length);
      let any = false;
      for (const id of filter.documents) {
        const number = this.documentNumbers.get(id);
        if (number === undefined) continue;
        allowed[number] = 1;
        any = true;
      }
      if (!any) return [];
    }
    const scope: Scope = { project, allowed, avgdl: this.tokens / n };
    const words = this.prune && groups.length > 1 && groups.every((g) => g.length === 1);
    const top = words
      ? maxScoreSearch(this.searchable(), groups.flat(), scope, limit)
      : this.all(groups, scope, limit);
    return top.sorted().map(({ row, score }) => ({
      rowid: this.rowids[row] ?? 0,
      chunkId: this.chunkIds.get(row),
      documentId: this.documentIds[this.documentOf[row] ?? 0] ?? '',
      score,
    }));
  }

  /**
   * The BM25 of some chunks for the query groups (as `search` takes them), by chunk id, each the
   * very number `search` would give it: those holding the query's words (a chunk not in the index,
   * deleted, or matching nothing is left out; `place`: where among its document's rows it likely
   * is). A hybrid search scores its nearest chunks so (sqlite-searches.ts): a few jumps per
   * word through the skip entries, no list walked.
   */
  scoresOf(
    groups: readonly (readonly number[])[],
    chunks: readonly { chunkId: string; documentId: string; place?: number }[],
  ): Map<string, number> {
    const scores = new Map<string, number>();
    const n = this.size;
    const found: { row: number; chunkId: string }[] = [];
    for (const { chunkId, documentId, place } of chunks) {
      const document = this.documentNumbers.get(documentId);
      const rows = document === undefined ? undefined : this.rowsOfDocument.get(document);
      // The row at the hinted place among the document's, if it holds the chunk; else searched.
      const hinted = place === undefined ? undefined : rows?.[place];
      const row =
        rows === undefined
          ? -1
          : hinted !== undefined && this.chunkIds.equals(hinted, chunkId)
            ? hinted
            : this.chunkIds.find(rows, chunkId);
      if (row >= 0 && this.alive[row] === 1) found.push({ row, chunkId });
    }
    if (n === 0 || found.length === 0) return scores;
    found.sort((a, b) => a.row - b.row);
    // Each word's idf, and its doubled count in each row found (0: not there), rows ascending.
    const { bytes, start, used } = this.lists;
    const words = new Map<number, { idf: number; counts: Int32Array }>();
    for (const id of new Set(groups.flat())) {
      const hits = this.matching(id);
      if (hits === 0) continue;
      const skips = this.skips.of(this.lists, id, this.lengths);
      const cursor = new SkipCursor(bytes, start[id] as number, used[id] as number, skips);
      const counts = Int32Array.from(found, ({ row }) => {
        cursor.seek(row);
        return cursor.row === row ? cursor.doubled : 0;
      });
      words.set(id, { idf: idfOf(n, hits), counts });
    }
    const avgdl = this.tokens / n;
    for (const [k, { row, chunkId }] of found.entries()) {
      // Summed as the searches sum them: words in query order, a group's terms first on their own.
      const d = this.lengths[row] as number;
      let score = 0;
      for (const group of groups) {
        let partial = 0;
        let complete = true;
        for (const id of group) {
          const word = words.get(id);
          const doubled = word?.counts[k] ?? 0;
          if (word === undefined || doubled === 0) {
            complete = false;
            break;
          }
          const f = doubled / 2;
          partial = partial + word.idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + (B * d) / avgdl)));
        }
        if (complete) score = score + partial;
      }
      if (score > 0) scores.set(chunkId, score);
    }
    return scores;
  }

  /** What the document-at-a-time search reads (keyword-maxscore.ts). */
  private searchable(): MaxScoreIndex {
    return {
      lists: this.lists,
      skips: this.skips,
      size: this.size,
      matching: (id) => this.matching(id),
      alive: this.alive,
      lengths: this.lengths,
      projectOf: this.projectOf,
      documentOf: this.documentOf,
    };
  }

  /** Every matching row scored, word by word in query order: the best `limit`. */
  private all(groups: readonly (readonly number[])[], scope: Scope, limit: number): TopK {
    const touched = this.touched;
    touched.length = 0;
    for (const group of groups) {
      if (group.length === 1) this.scoreLexeme(group[0] ?? -1, scope, this.scratch, touched);
      else this.scoreGroup(group, scope, touched);
    }
    const scores = this.scratch;
    const top = new TopK(Math.min(limit, touched.length));
    for (let i = 0; i < touched.length; i++) {
      const r = touched.rows[i] as number;
      top.push(scores[r] as number, r);
      scores[r] = 0;
    }
    return top;
  }

  /**
   * Adds lexeme `id`'s BM25 term to `scores` of the rows in scope holding it (rows first scored
   * are pushed to `touched`, and `seen` counts each row); false when no live row holds it.
   */
  private scoreLexeme(
    id: number,
    scope: Scope,
    scores: Float64Array,
    touched: RowList,
    seen?: Int32Array,
  ): boolean {
    const hits = this.matching(id);
    if (hits === 0) return false;
    const { bytes, start, used } = this.lists;
    const end = (start[id] as number) + (used[id] as number);
    const alive = this.alive;
    const lengths = this.lengths;
    const idf = idfOf(this.size, hits);
    const { project, allowed, avgdl } = scope;
    // Decoded in line, as keyword-postings.ts forEachPosting does.
    let r = -1;
    for (let p = start[id] as number; p < end;) {
      let b = bytes[p++] as number;
      let v = b & 0x7f;
      for (let shift = 7; b >= 0x80; shift += 7) {
        b = bytes[p++] as number;
        v |= (b & 0x7f) << shift;
      }
      r += v >>> 1;
      let doubled = 2;
      if ((v & 1) === 0) {
        b = bytes[p++] as number;
        doubled = b & 0x7f;
        for (let shift = 7; b >= 0x80; shift += 7) {
          b = bytes[p++] as number;
          doubled |= (b & 0x7f) << shift;
        }
      }
      if (alive[r] !== 1) continue;
      if (project !== -2 && this.projectOf[r] !== project) continue;
      if (allowed !== null && allowed[this.documentOf[r] as number] !== 1) continue;
      const f = doubled / 2;
      const d = lengths[r] as number;
      const s = idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + (B * d) / avgdl)));
      if (scores[r] === 0) touched.push(r);
      scores[r] = (scores[r] as number) + s;
      if (seen !== undefined) seen[r] = (seen[r] as number) + 1;
    }
    return true;
  }

  /** Scores an all-of group: its lexemes' terms count only in the rows holding every one. */
  private scoreGroup(group: readonly number[], scope: Scope, touched: RowList): void {
    if (this.groupScores.length < this.capacity) this.groupScratch();
    const partial = this.groupScores;
    const seen = this.groupSeen;
    const rows = this.groupRows;
    rows.length = 0;
    let complete = true;
    for (const id of group) {
      complete = this.scoreLexeme(id, scope, partial, rows, seen);
      if (!complete) break;
    }
    const scores = this.scratch;
    for (let i = 0; i < rows.length; i++) {
      const r = rows.rows[i] as number;
      // A row holding every lexeme of the group counted group.length of them (repeats too).
      if (complete && seen[r] === group.length) {
        if (scores[r] === 0) touched.push(r);
        scores[r] = (scores[r] as number) + (partial[r] as number);
      }
      partial[r] = 0;
      seen[r] = 0;
    }
  }
}
