/**
 * The rows and postings of the in-process keyword index (keyword-index.ts ranks them): typed
 * arrays per row and one posting list per lexeme (bytes: keyword-postings.ts, all in one arena:
 * posting-lists.ts), kept in step with the FTS5 table by adds and document deletes, exported for
 * a snapshot and restored from one (copies/snapshots.ts).
 */
import { ChunkIds } from '../common/chunk-ids.js';
import { COLUMN_WEIGHTS } from '../../bm25.js';
import { forEachPosting, MAX_ROWS, writePosting } from './keyword-postings.js';
import { PostingLists } from './posting-lists.js';
import type { SavedSkips } from './posting-skips.js';

/**
 * The bm25() weights of the indexed columns (document_name, section_path, content) doubled:
 * integers, so a row's weighted count fits a Uint16.
 */
const DOUBLED_WEIGHTS = [COLUMN_WEIGHTS.name, COLUMN_WEIGHTS.section, COLUMN_WEIGHTS.content].map(
  (w) => w * 2,
);

export interface KeywordRow {
  rowid: number;
  chunkId: string;
  documentId: string;
  projectId: string | null;
  /** The lexeme ids of document_name, section_path and content. */
  columns: readonly [Int32Array, Int32Array, Int32Array];
}

/** A keyword index's rows and postings as plain arrays, for a snapshot (snapshots.ts). */
export interface KeywordState {
  count: number;
  tokens: number;
  rowids: Float64Array;
  /** The index's own ids (read, not kept). */
  chunkIds: ChunkIds;
  documentOf: Int32Array;
  projectOf: Int32Array;
  lengths: Int32Array;
  alive: Uint8Array;
  documentIds: string[];
  projectIds: string[];
  /**
   * The lists' bytes (keyword-postings.ts): lexeme id `id`'s list is `postingLengths[id]` bytes
   * from `postingStarts[id]`; the bytes between lists are no list's.
   */
  postings: Uint8Array;
  postingStarts: Int32Array;
  postingLengths: Int32Array;
  /** By lexeme id: the last row of its list (-1: none), where the next gap starts from. */
  postingLast: Int32Array;
  /** By lexeme id: the live rows holding it, -1 when not known (a snapshot without them). */
  postingCounts?: Int32Array;
  /** The long lists' skip entries (posting-skips.ts; a snapshot of an earlier build has none). */
  skips?: SavedSkips;
}

/** The bytes of lexeme `id`'s list in a state. */
export function listOf(state: KeywordState, id: number): Uint8Array {
  const start = state.postingStarts[id] ?? 0;
  return state.postings.subarray(start, start + (state.postingLengths[id] ?? 0));
}

export class KeywordStore {
  /**
   * Postings by lexeme id: the rows containing it and its doubled weighted count in each,
   * encoded (keyword-postings.ts), with room at the end for the rows added next (new rows have
   * the highest numbers: they append). Compaction re-encodes them.
   */
  protected lists = new PostingLists();
  /**
   * By lexeme id: the live rows holding it (FTS5's n(t)), known while `liveAt[id]` is `epoch`;
   * a delete moves the epoch, and the next search counts again (adds keep the known counts, from
   * zero for a new lexeme; a snapshot keeps them).
   */
  protected liveRows = new Int32Array(0);
  protected liveAt = new Uint32Array(0);
  protected epoch = 1;
  /** Per-row tally by lexeme id while adding, all zero between rows. */
  protected tally = new Int32Array(0);
  // Per row (row numbers ascend with rowids, as rows are added in rowid order).
  protected rowids: Float64Array = new Float64Array(0);
  protected chunkIds = new ChunkIds();
  protected documentOf: Int32Array = new Int32Array(0);
  protected projectOf: Int32Array = new Int32Array(0);
  protected lengths: Int32Array = new Int32Array(0);
  protected alive: Uint8Array = new Uint8Array(0);
  /** Score accumulator of a search, all zero between searches. */
  protected scratch = new Float64Array(0);
  /**
   * A group's scores and lexeme counts per row while it is scored, all zero otherwise; made at
   * the first search with an all-of group (a CJK or Thai word), so most indexes never hold them.
   */
  protected groupScores = new Float64Array(0);
  protected groupSeen = new Int32Array(0);
  protected capacity = 0;
  protected count = 0;
  protected dead = 0;
  protected tokens = 0;
  protected readonly documentNumbers = new Map<string, number>();
  /** Document number → id. */
  protected readonly documentIds: string[] = [];
  protected readonly projectNumbers = new Map<string, number>();
  protected readonly rowsOfDocument = new Map<number, number[]>();
  /** Bumped by every change: a snapshot being written from live arrays is void when it moved. */
  mutations = 0;

  /** The ids of the documents that have (or had) rows. */
  documentIdList(): string[] {
    return this.documentIds.slice();
  }

  /** Live rows: FTS5's N. */
  get size(): number {
    return this.count - this.dead;
  }

  protected static number(map: Map<string, number>, key: string): number {
    let n = map.get(key);
    if (n === undefined) map.set(key, (n = map.size));
    return n;
  }

  protected reserve(rows: number): void {
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, Math.ceil(this.capacity * 1.5), 1024);
    const grow = <T extends Float64Array | Int32Array | Uint8Array>(old: T, next: T): T => {
      next.set(old.subarray(0, this.count));
      return next;
    };
    this.rowids = grow(this.rowids, new Float64Array(capacity));
    this.documentOf = grow(this.documentOf, new Int32Array(capacity));
    this.projectOf = grow(this.projectOf, new Int32Array(capacity));
    this.lengths = grow(this.lengths, new Int32Array(capacity));
    this.alive = grow(this.alive, new Uint8Array(capacity));
    this.chunkIds.reserve(capacity);
    this.scratch = new Float64Array(capacity);
    this.capacity = capacity;
    if (this.groupScores.length > 0) this.groupScratch();
  }

  /** (Re)makes the scratch of all-of groups for the current capacity. */
  protected groupScratch(): void {
    this.groupScores = new Float64Array(this.capacity);
    this.groupSeen = new Int32Array(this.capacity);
  }

  /** Adds rows; their rowids must be above every rowid already added. */
  add(rows: readonly KeywordRow[]): void {
    this.mutations++;
    if (this.count + rows.length > MAX_ROWS) throw new RangeError('keyword index: too many rows');
    this.reserve(this.count + rows.length);
    const lexemes: number[] = [];
    for (const row of rows) {
      const r = this.count++;
      const document = KeywordStore.number(this.documentNumbers, row.documentId);
      this.documentIds[document] = row.documentId;
      this.rowids[r] = row.rowid;
      this.chunkIds.set(r, row.chunkId);
      this.documentOf[r] = document;
      this.projectOf[r] =
        row.projectId === null ? -1 : KeywordStore.number(this.projectNumbers, row.projectId);
      this.alive[r] = 1;
      let length = 0;
      lexemes.length = 0;
      let tally: Int32Array = this.tally;
      for (let column = 0; column < 3; column++) {
        const ids = row.columns[column] as Int32Array;
        const weight = DOUBLED_WEIGHTS[column] as number;
        length += ids.length;
        for (let i = 0; i < ids.length; i++) {
          const id = ids[i] as number;
          if (id >= tally.length) tally = this.growLexemes(id + 1);
          const before = tally[id] as number;
          if (before === 0) lexemes.push(id);
          tally[id] = before + weight;
        }
      }
      this.lengths[r] = length;
      this.tokens += length;
      for (const id of lexemes) {
        this.post(id, r, tally[id] as number);
        tally[id] = 0;
      }
      let list = this.rowsOfDocument.get(document);
      if (list === undefined) this.rowsOfDocument.set(document, (list = []));
      list.push(r);
    }
  }

  /** Makes room for lexeme ids below `size`; returns the new tally. */
  protected growLexemes(size: number): Int32Array {
    const capacity = Math.max(size, this.tally.length * 2, 1024);
    const tally = new Int32Array(capacity);
    tally.set(this.tally);
    this.tally = tally;
    const grown = <T extends Int32Array | Uint32Array>(old: T, next: T, fill: number): T => {
      next.fill(fill, old.length);
      next.set(old);
      return next;
    };
    this.liveRows = grown(this.liveRows, new Int32Array(capacity), 0);
    // A lexeme new to the index is in no row yet: its count is known.
    this.liveAt = grown(this.liveAt, new Uint32Array(capacity), this.epoch);
    this.lists.reserve(capacity);
    return tally;
  }

  protected post(id: number, row: number, doubled: number): void {
    // A chunk would need 21,845 occurrences of one word in its name to saturate the count.
    this.lists.append(id, row, Math.min(doubled, 0xffff));
    if (this.liveAt[id] === this.epoch) this.liveRows[id] = (this.liveRows[id] as number) + 1;
  }

  /** Gives back the room lists grew into (after a bulk load). */
  trim(): void {
    this.lists.repack();
  }

  /**
   * Gives the rows of document `from` (a run's staged rows) to document `to`, whose own rows must
   * be deleted first: numbers are swapped, no row is touched.
   */
  renameDocument(from: string, to: string): void {
    const document = this.documentNumbers.get(from);
    if (document === undefined) return;
    this.mutations++;
    const previous = this.documentNumbers.get(to);
    // `from` keeps a number (without rows): numbers are allocated by the map's size.
    const spare = previous ?? this.documentIds.length;
    this.documentNumbers.set(from, spare);
    this.documentIds[spare] = from;
    this.documentNumbers.set(to, document);
    this.documentIds[document] = to;
    if (previous !== undefined) this.rowsOfDocument.delete(previous);
  }

  deleteDocument(documentId: string): void {
    const document = this.documentNumbers.get(documentId);
    const rows = document === undefined ? undefined : this.rowsOfDocument.get(document);
    if (document === undefined || rows === undefined) return;
    this.mutations++;
    this.rowsOfDocument.delete(document);
    for (const r of rows) {
      if (this.alive[r] !== 1) continue;
      this.alive[r] = 0;
      this.tokens -= this.lengths[r] ?? 0;
      this.dead++;
    }
    // The lexemes of the rows are not at hand: every live count is counted again when used.
    if (rows.length > 0) this.epoch++;
    if (this.dead > 1024 && this.dead * 4 > this.count) this.compact();
  }

  /** Drops the deleted rows from every list and renumbers the live ones, keeping their order. */
  protected compact(): void {
    const renumber = new Int32Array(this.count).fill(-1);
    let to = 0;
    for (let from = 0; from < this.count; from++) {
      if (this.alive[from] !== 1) continue;
      renumber[from] = to;
      this.rowids[to] = this.rowids[from] ?? 0;
      this.chunkIds.copy(from, to);
      this.documentOf[to] = this.documentOf[from] ?? 0;
      this.projectOf[to] = this.projectOf[from] ?? 0;
      this.lengths[to] = this.lengths[from] ?? 0;
      this.alive[to] = 1;
      to++;
    }
    this.alive.fill(0, to, this.count);
    this.chunkIds.truncate(to);
    this.count = to;
    this.dead = 0;
    this.epoch++;
    for (let id = 0; id < this.lists.capacity; id++) this.compactList(id, renumber);
    this.lists.packIfSparse();
    this.rowsOfDocument.clear();
    for (let r = 0; r < this.count; r++) {
      const document = this.documentOf[r] ?? 0;
      let list = this.rowsOfDocument.get(document);
      if (list === undefined) this.rowsOfDocument.set(document, (list = []));
      list.push(r);
    }
  }

  /**
   * Re-encodes a list without the deleted rows, renumbered, in place: a kept posting's gap is at
   * most the sum of the gaps it replaces, and a varint of a sum is no longer than the varints
   * of its terms, so the writes never overtake the reads. Every row it keeps is live.
   */
  private compactList(id: number, renumber: Int32Array): void {
    const lists = this.lists;
    const used = lists.used[id] as number;
    if (used === 0) return;
    const start = lists.start[id] as number;
    const list = lists.bytes.subarray(start, start + used);
    let last = -1;
    let at = 0;
    let kept = 0;
    forEachPosting(list, used, (row, doubled) => {
      const r = renumber[row] as number;
      if (r < 0) return;
      at = writePosting(list, at, r - last, doubled);
      last = r;
      kept++;
    });
    lists.used[id] = at;
    lists.last[id] = last;
    this.liveRows[id] = kept;
    this.liveAt[id] = this.epoch;
  }

  /**
   * The rows and postings as plain arrays, for a snapshot: views of the live arrays (valid until
   * the next change, see `mutations`), deleted rows included (not alive).
   */
  state(): KeywordState {
    const n = this.count;
    const lists = this.lists;
    const lexemes = lists.capacity;
    return {
      count: n,
      tokens: this.tokens,
      rowids: this.rowids.subarray(0, n),
      chunkIds: this.chunkIds,
      documentOf: this.documentOf.subarray(0, n),
      projectOf: this.projectOf.subarray(0, n),
      lengths: this.lengths.subarray(0, n),
      alive: this.alive.subarray(0, n),
      documentIds: this.documentIds.slice(),
      projectIds: [...this.projectNumbers.keys()],
      postings: lists.bytes.subarray(0, lists.end),
      postingStarts: lists.start.subarray(0, lexemes),
      postingLengths: lists.used.subarray(0, lexemes),
      postingLast: lists.last.subarray(0, lexemes),
      postingCounts: Int32Array.from(this.liveRows.subarray(0, lexemes), (n, id) =>
        this.liveAt[id] === this.epoch ? n : -1,
      ),
    };
  }

  /**
   * An index holding a snapshot's rows. Row arrays are copied, or with `owned` (arrays of exactly
   * `count` rows that nothing else holds: a snapshot file's sections) kept; the lists' bytes are
   * kept as given (the arena: a list that grows moves to its end), their lexeme ids mapped through
   * `lexemeIds`.
   */
  protected restore(state: KeywordState, lexemeIds: Int32Array, owned = false): void {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- reads as the restored index
    const index = this;
    const n = state.count;
    if (owned) {
      index.rowids = state.rowids;
      index.documentOf = state.documentOf;
      index.projectOf = state.projectOf;
      index.lengths = state.lengths;
      index.alive = state.alive;
      index.scratch = new Float64Array(n);
      index.capacity = n;
    } else {
      index.reserve(n);
      index.rowids.set(state.rowids);
      index.documentOf.set(state.documentOf);
      index.projectOf.set(state.projectOf);
      index.lengths.set(state.lengths);
      index.alive.set(state.alive);
    }
    index.chunkIds = owned ? state.chunkIds : state.chunkIds.clone(n);
    index.chunkIds.reserve(index.capacity);
    index.count = n;
    index.tokens = state.tokens;
    state.documentIds.forEach((id, i) => {
      index.documentNumbers.set(id, i);
      index.documentIds[i] = id;
    });
    state.projectIds.forEach((id, i) => index.projectNumbers.set(id, i));
    let max = 0;
    for (const id of lexemeIds) max = Math.max(max, id + 1);
    index.growLexemes(max);
    const lists = index.lists;
    lists.bytes = state.postings;
    lists.end = state.postings.length;
    const counts = state.postingCounts;
    lexemeIds.forEach((id, i) => {
      if (id < 0) return;
      const used = state.postingLengths[i] ?? 0;
      lists.start[id] = state.postingStarts[i] ?? 0;
      lists.used[id] = used;
      lists.room[id] = used;
      lists.last[id] = state.postingLast[i] ?? -1;
      // Its count as saved, or counted at its first search.
      const known = counts?.[i] ?? -1;
      index.liveRows[id] = Math.max(0, known);
      index.liveAt[id] = known >= 0 ? index.epoch : 0;
    });
    for (let r = 0; r < n; r++) {
      if (index.alive[r] !== 1) {
        index.dead++;
        continue;
      }
      const document = index.documentOf[r] ?? 0;
      let list = index.rowsOfDocument.get(document);
      if (list === undefined) index.rowsOfDocument.set(document, (list = []));
      list.push(r);
    }
  }

  /** Bytes held per structure (typed arrays exactly; non-UUID ids estimated, chunk-ids.ts). */
  memoryReport(): Record<string, number> {
    const bytes = (arrays: { byteLength: number }[]) =>
      arrays.reduce((a, b) => a + b.byteLength, 0);
    // The lists (with their room to grow) and what is kept per lexeme to append and count.
    const postings = this.lists.byteLength + bytes([this.liveRows, this.liveAt]);
    const rowArrays = [this.rowids, this.documentOf, this.projectOf, this.lengths, this.alive];
    const scratch = [this.scratch, this.groupScores, this.groupSeen, this.tally];
    return {
      'keyword postings': postings,
      'keyword rows': bytes(rowArrays),
      'keyword search scratch': bytes(scratch),
      'keyword chunk ids': this.chunkIds.byteLength,
    };
  }
}
