/**
 * The rows and postings of the in-process keyword index (keyword-index.ts ranks them): typed
 * arrays per row and one posting list per lexeme, kept in step with the FTS5 table by adds and
 * document deletes, exported for a snapshot and restored from one (index-snapshots.ts).
 */
import { COLUMN_WEIGHTS } from '../bm25.js';

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

/** A keyword index's rows and postings as plain arrays, for a snapshot (index-snapshots.ts). */
export interface KeywordState {
  count: number;
  tokens: number;
  rowids: Float64Array;
  chunkIds: string[];
  documentOf: Int32Array;
  projectOf: Int32Array;
  lengths: Int32Array;
  alive: Uint8Array;
  documentIds: string[];
  projectIds: string[];
  /** By lexeme id: the rows holding it, and its doubled weighted count in each. */
  postingRows: Int32Array[];
  postingCounts: Uint16Array[];
}

const NO_ROWS = new Int32Array(0);
const NO_COUNTS = new Uint16Array(0);

export class KeywordStore {
  // Postings by lexeme id: the rows containing it and its doubled weighted count in each.
  protected postingRows: Int32Array[] = [];
  protected postingCounts: Uint16Array[] = [];
  protected postingLengths = new Int32Array(0);
  /** Per-row tally by lexeme id while adding, all zero between rows. */
  protected tally = new Int32Array(0);
  // Per row (row numbers ascend with rowids, as rows are added in rowid order).
  protected rowids = new Float64Array(0);
  protected chunkIds: string[] = [];
  protected documentOf = new Int32Array(0);
  protected projectOf = new Int32Array(0);
  protected lengths = new Int32Array(0);
  protected alive = new Uint8Array(0);
  /** Score accumulator of a search, all zero between searches. */
  protected scratch = new Float64Array(0);
  /** A group's scores and lexeme counts per row while it is scored, all zero otherwise. */
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
    this.scratch = new Float64Array(capacity);
    this.groupScores = new Float64Array(capacity);
    this.groupSeen = new Int32Array(capacity);
    this.capacity = capacity;
  }

  /** Adds rows; their rowids must be above every rowid already added. */
  add(rows: readonly KeywordRow[]): void {
    this.mutations++;
    this.reserve(this.count + rows.length);
    const lexemes: number[] = [];
    for (const row of rows) {
      const r = this.count++;
      const document = KeywordStore.number(this.documentNumbers, row.documentId);
      this.documentIds[document] = row.documentId;
      this.rowids[r] = row.rowid;
      this.chunkIds[r] = row.chunkId;
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
    const lengths = new Int32Array(capacity);
    lengths.set(this.postingLengths);
    this.postingLengths = lengths;
    for (let id = this.postingRows.length; id < capacity; id++) {
      this.postingRows.push(NO_ROWS);
      this.postingCounts.push(NO_COUNTS);
    }
    return tally;
  }

  protected post(id: number, row: number, doubled: number): void {
    const length = this.postingLengths[id] as number;
    let rows = this.postingRows[id] as Int32Array;
    let counts = this.postingCounts[id] as Uint16Array;
    if (length === rows.length) {
      rows = new Int32Array(Math.max(4, length * 2));
      rows.set(this.postingRows[id] as Int32Array);
      counts = new Uint16Array(rows.length);
      counts.set(this.postingCounts[id] as Uint16Array);
      this.postingRows[id] = rows;
      this.postingCounts[id] = counts;
    }
    rows[length] = row;
    // A chunk would need 21,845 occurrences of one word in its name to saturate this.
    counts[length] = Math.min(doubled, 0xffff);
    this.postingLengths[id] = length + 1;
  }

  /** Gives back the room lists grew into (after a bulk load: about a third of their memory). */
  trim(): void {
    for (let id = 0; id < this.postingRows.length; id++) {
      const length = this.postingLengths[id] as number;
      const rows = this.postingRows[id] as Int32Array;
      if (rows.length === length) continue;
      this.postingRows[id] = length === 0 ? NO_ROWS : rows.slice(0, length);
      this.postingCounts[id] =
        length === 0 ? NO_COUNTS : (this.postingCounts[id] as Uint16Array).slice(0, length);
    }
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
      this.chunkIds[to] = this.chunkIds[from] ?? '';
      this.documentOf[to] = this.documentOf[from] ?? 0;
      this.projectOf[to] = this.projectOf[from] ?? 0;
      this.lengths[to] = this.lengths[from] ?? 0;
      this.alive[to] = 1;
      to++;
    }
    this.alive.fill(0, to, this.count);
    this.chunkIds.length = to;
    this.count = to;
    this.dead = 0;
    for (let id = 0; id < this.postingRows.length; id++) {
      const rows = this.postingRows[id] as Int32Array;
      const counts = this.postingCounts[id] as Uint16Array;
      const length = this.postingLengths[id] as number;
      let kept = 0;
      for (let i = 0; i < length; i++) {
        const r = renumber[rows[i] as number] as number;
        if (r < 0) continue;
        rows[kept] = r;
        counts[kept] = counts[i] as number;
        kept++;
      }
      this.postingLengths[id] = kept;
      if (kept === 0) {
        this.postingRows[id] = NO_ROWS;
        this.postingCounts[id] = NO_COUNTS;
      }
    }
    this.rowsOfDocument.clear();
    for (let r = 0; r < this.count; r++) {
      const document = this.documentOf[r] ?? 0;
      let list = this.rowsOfDocument.get(document);
      if (list === undefined) this.rowsOfDocument.set(document, (list = []));
      list.push(r);
    }
  }

  /**
   * The rows and postings as plain arrays, for a snapshot: views of the live arrays (valid until
   * the next change, see `mutations`), deleted rows included (not alive).
   */
  state(): KeywordState {
    const n = this.count;
    const lexemes = this.postingRows.length;
    return {
      count: n,
      tokens: this.tokens,
      rowids: this.rowids.subarray(0, n),
      chunkIds: this.chunkIds.slice(0, n),
      documentOf: this.documentOf.subarray(0, n),
      projectOf: this.projectOf.subarray(0, n),
      lengths: this.lengths.subarray(0, n),
      alive: this.alive.subarray(0, n),
      documentIds: this.documentIds.slice(),
      projectIds: [...this.projectNumbers.keys()],
      postingRows: Array.from({ length: lexemes }, (_, id) =>
        (this.postingRows[id] as Int32Array).subarray(0, this.postingLengths[id]),
      ),
      postingCounts: Array.from({ length: lexemes }, (_, id) =>
        (this.postingCounts[id] as Uint16Array).subarray(0, this.postingLengths[id]),
      ),
    };
  }

  /**
   * An index holding a snapshot's rows. Row arrays are copied; posting lists are kept as given
   * (views of the snapshot's buffer), their lexeme ids mapped through `lexemeIds`.
   */
  protected restore(state: KeywordState, lexemeIds: Int32Array): void {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- reads as the restored index
    const index = this;
    const n = state.count;
    index.reserve(n);
    index.rowids.set(state.rowids);
    index.documentOf.set(state.documentOf);
    index.projectOf.set(state.projectOf);
    index.lengths.set(state.lengths);
    index.alive.set(state.alive);
    index.chunkIds = state.chunkIds;
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
    state.postingRows.forEach((rows, i) => {
      const id = lexemeIds[i] as number;
      if (id < 0) return;
      index.postingRows[id] = rows;
      index.postingCounts[id] = state.postingCounts[i] ?? NO_COUNTS;
      index.postingLengths[id] = rows.length;
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

  /** Bytes held per structure (typed arrays exactly; strings estimated, see vector-index.ts). */
  memoryReport(stringBytes: number): Record<string, number> {
    let postings = 0;
    for (let id = 0; id < this.postingRows.length; id++) {
      postings += (this.postingRows[id] as Int32Array).byteLength;
      postings += (this.postingCounts[id] as Uint16Array).byteLength;
    }
    const rowArrays = [this.rowids, this.documentOf, this.projectOf, this.lengths, this.alive];
    const scratch = [this.scratch, this.groupScores, this.groupSeen, this.tally];
    const bytes = (arrays: { byteLength: number }[]) =>
      arrays.reduce((a, b) => a + b.byteLength, 0);
    return {
      'keyword postings': postings,
      'keyword rows': bytes(rowArrays),
      'keyword search scratch': bytes(scratch),
      'keyword chunk ids': this.count * stringBytes,
    };
  }
}
