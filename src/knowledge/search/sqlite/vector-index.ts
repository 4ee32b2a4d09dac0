/**
 * An in-process exact vector index of one vector table (one model): the table's vectors,
 * normalised, as int8 rows scanned by a WebAssembly SIMD kernel (the first pass). A search scans
 * the int8 rows, re-scores the best `candidates(limit)` exactly from their stored
 * float32 vectors (read from the table by chunk id: `VectorSource`, none kept in memory) and
 * returns the top `limit` by exact cosine: 100k × 100-d in ~1–2 ms.
 *
 * From `annMin` rows on, an HNSW graph (ann-graph.ts) gives the candidates instead of the scan
 * (rows not in the graph yet are scanned), re-scored the same way: sub-linear past the size
 * where a scan costs more than a graph search.
 *
 * The SQLite table stays the source of truth; search-indexes.ts loads this copy and keeps it
 * current.
 */
import { AnnGraph, type GraphSettings, type GraphState } from './ann-graph.js';
import {
  type IndexRow,
  type VectorIndexOptions,
  type VectorSource,
  type VectorState,
} from './vector-types.js';
import type { DocumentCandidate, IndexScope } from '../chunk-store.js';
import { RowKeys } from './vector-row-keys.js';
import { Numbering } from './numbering.js';
import { VectorRows } from './vector-rows.js';

/**
 * The candidates re-scored exactly (each read from the table) for `limit` results. The int8
 * order is close to the exact one: at 1M rows of the default model, bench:scale's text queries,
 * the int8 top 150 held 0.9999 of the exact top 132 and the top 165 all of them (the top 10: from
 * the int8 top 132 on). A quarter more, and 16, for margin.
 */
function candidates(limit: number): number {
  return Math.max(Math.ceil(limit * 1.25) + 16, 64);
}
/** A document scope of at most this many rows (or a 16th of the index) is ranked row by row. */
const SCOPE_ROWS = 1024;

export type { IndexRow, VectorIndexOptions, VectorSource, VectorState } from './vector-types.js';

export class VectorIndex {
  /** Row → chunk id (none for a deleted row, compacted away later) and vector table rowid. */
  private keys = new RowKeys();
  /** Row → document and project key numbers (Numbers: one string per document, not per row). */
  private documentOf: Int32Array = new Int32Array(0);
  private projectOf: Int32Array = new Int32Array(0);
  private readonly documents = new Numbering();
  private readonly projects = new Numbering();
  /** Rows by document number. */
  private readonly rowsOf = new Map<number, number[]>();
  /** The rows' int8 vectors, and their exact ones from the table. */
  private readonly vectors: VectorRows;
  private capacity = 0;
  private count = 0;
  private dead = 0;
  /** Bumped by every change: a snapshot being written from live arrays is void when it moved. */
  mutations = 0;
  /** The approximate graph, from `annMin` live rows on. */
  graph: AnnGraph | null = null;
  private readonly annMin: number;
  private readonly annGraph: GraphSettings;

  constructor(
    readonly dims: number,
    /** The rows' exact vectors, by chunk id (the table this index copies). */
    source: VectorSource,
    options: VectorIndexOptions = {},
  ) {
    this.annMin = options.annMin ?? Number.POSITIVE_INFINITY;
    this.annGraph = options.annGraph ?? {};
    this.vectors = new VectorRows(dims, source);
  }

  /** The ids of the documents that have (or had) rows. */
  documentIdList(): string[] {
    return this.documents.list();
  }

  /** Live rows. */
  get size(): number {
    return this.count - this.dead;
  }

  private reserve(rows: number): void {
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, Math.ceil(this.capacity * 1.5), 1024);
    this.vectors.reserve(capacity, this.count);
    const documentOf = new Int32Array(capacity);
    documentOf.set(this.documentOf.subarray(0, this.count));
    this.documentOf = documentOf;
    const projectOf = new Int32Array(capacity);
    projectOf.set(this.projectOf.subarray(0, this.count));
    this.projectOf = projectOf;
    this.keys.reserve(capacity, this.count);
    this.graph?.reserveRows(capacity);
    this.capacity = capacity;
  }

  /** Starts a graph once the index reached `annMin` live rows (built later, `buildGraph`). */
  startGraph(): void {
    if (this.graph !== null || this.size < this.annMin) return;
    const { dims, count, capacity } = this;
    const centre = this.vectors.centre(count, (r) => this.keys.has(r));
    this.graph = AnnGraph.create(dims, count, capacity, centre, this.annGraph);
    for (let r = 0; r < this.count; r++) if (!this.keys.has(r)) this.graph.removed(r);
  }

  /** Whether the graph lacks rows (`buildGraph` adds them). */
  get graphPending(): boolean {
    return this.graph !== null && this.graph.failed === null && this.graph.covered < this.count;
  }

  /** Adds rows to the graph for up to `budgetMs`; whether rows remain. */
  buildGraph(budgetMs: number): boolean {
    const graph = this.graph;
    if (graph === null) return false;
    // Not a mutation: a snapshot records the graph's `covered` when it starts.
    const alive = (r: number) => this.keys.has(r);
    const vectors = (rows: number[]) =>
      this.vectors.unitRows(rows, this.keys.idsOf(rows), this.keys.rowidsOf(rows));
    return graph.step(vectors, this.count, alive, budgetMs);
  }

  add(rows: readonly IndexRow[]): void {
    this.mutations++;
    this.reserve(this.count + rows.length);
    const dims = this.dims;
    for (const row of rows) {
      if (row.vector.length !== dims) throw new RangeError('vector dimensions differ');
      const existing = this.keys.row(row.chunkId);
      if (existing !== undefined) this.kill(existing);
      const r = this.count++;
      this.vectors.set(r, row.vector);
      this.keys.set(r, row.chunkId, row.rowid);
      const document = this.documents.number(row.documentId);
      this.documentOf[r] = document;
      this.projectOf[r] = this.projects.number(row.projectKey);
      let list = this.rowsOf.get(document);
      if (list === undefined) this.rowsOf.set(document, (list = []));
      list.push(r);
      this.graph?.appended(r);
    }
    this.startGraph();
  }

  private kill(r: number): void {
    if (!this.keys.kill(r)) return;
    this.dead++;
    this.graph?.removed(r);
  }

  /** Gives the rows of document `from` (a run's staged rows) to document `to`. */
  renameDocument(from: string, to: string): void {
    this.mutations++;
    const source = this.documents.find(from);
    const rows = source === undefined ? undefined : this.rowsOf.get(source);
    if (source === undefined || rows === undefined) return;
    this.rowsOf.delete(source);
    const target = this.documents.number(to);
    for (const r of rows) if (this.documentOf[r] === source) this.documentOf[r] = target;
    const own = this.rowsOf.get(target);
    this.rowsOf.set(target, own === undefined ? rows : own.concat(rows));
  }

  deleteDocument(documentId: string): void {
    const document = this.documents.find(documentId);
    const rows = document === undefined ? undefined : this.rowsOf.get(document);
    if (document === undefined || rows === undefined) return;
    this.mutations++;
    this.rowsOf.delete(document);
    for (const r of rows) if (this.documentOf[r] === document) this.kill(r);
    if (this.dead > 1024 && this.dead * 4 > this.count) this.compact();
  }

  /** Drops deleted rows, keeping the order of the live ones. */
  private compact(): void {
    let to = 0;
    const graph = this.graph;
    /** Old row → the live rows before it (where a prefix ending there ends now). */
    const liveBefore = new Int32Array(this.count + 1);
    this.rowsOf.clear();
    this.keys.compacting(this.size);
    for (let from = 0; from < this.count; from++) {
      liveBefore[from] = to;
      if (!this.keys.has(from)) continue;
      graph?.moved(from, to);
      if (to !== from) {
        this.vectors.copyRow(from, to);
        this.documentOf[to] = this.documentOf[from] ?? 0;
        this.projectOf[to] = this.projectOf[from] ?? 0;
      }
      this.keys.moved(from, to);
      const doc = this.documentOf[to] ?? 0;
      let list = this.rowsOf.get(doc);
      if (list === undefined) this.rowsOf.set(doc, (list = []));
      list.push(to);
      to++;
    }
    liveBefore[this.count] = to;
    this.keys.compacted(to);
    graph?.compacted((end) => liveBefore[end] as number);
    this.count = to;
    this.dead = 0;
  }

  /** The live rows of the documents (in the project, when given: its number). */
  private rowsOfDocuments(documents: ReadonlySet<string>, project: number): number[] {
    const rows: number[] = [];
    for (const id of documents) {
      const document = this.documents.find(id);
      if (document === undefined) continue;
      for (const r of this.rowsOf.get(document) ?? []) {
        if (!this.keys.has(r) || this.documentOf[r] !== document) continue;
        if (project === -1 || this.projectOf[r] === project) rows.push(r);
      }
    }
    return rows;
  }

  /**
   * The `limit` rows nearest to `vector` by cosine similarity within the scope (project key,
   * documents), best first; `score` is the cosine similarity. `fused`: they will be fused with
   * keyword candidates whose cosines are exact (a hybrid search: the graph looks less far).
   */
  search(
    vector: Float32Array,
    filter: IndexScope,
    limit: number,
    fused = false,
  ): DocumentCandidate[] {
    const query = this.vectors.normalise(vector);
    if (query === null || limit <= 0) return [];
    const documents = filter.documents;
    // The project's number; -1: any project, none known: no rows.
    let project = -1;
    if (filter.projectId !== undefined) {
      const number = this.projects.find(filter.projectId);
      if (number === undefined) return [];
      project = number;
    }
    let rows: Int32Array | number[] | null = null;
    let allowed: Uint8Array | null = null;
    if (documents !== undefined) {
      // A few documents' rows: ranked one by one, no scan.
      let total = 0;
      allowed = new Uint8Array(this.documents.size);
      for (const id of documents) {
        const document = this.documents.find(id);
        if (document === undefined) continue;
        allowed[document] = 1;
        total += this.rowsOf.get(document)?.length ?? 0;
      }
      if (total <= Math.max(SCOPE_ROWS, this.size / 16)) {
        const own = this.rowsOfDocuments(documents, project);
        rows = this.vectors.int8Top(query, own, candidates(limit));
      }
    }
    if (
      rows === null &&
      this.graph !== null &&
      this.graph.failed === null &&
      this.graph.covered > 0
    ) {
      rows = this.approximate(this.graph, query, limit, fused, project, allowed);
    }
    rows ??= this.scanTop(query, 0, candidates(limit), project, allowed);
    // Only the rows that can make the top `limit` are read and scored exactly.
    const list = this.vectors.contenders(query, Array.from(rows), limit);
    const ids = this.keys.idsOf(list);
    const scores = this.vectors.exactScores(query, list, ids, this.keys.rowidsOf(list));
    const scored = list.map((r, i) => ({ r, id: ids[i] ?? '', score: scores[i] as number }));
    scored.sort((a, b) => b.score - a.score);
    return scored.slice(0, limit).map((s) => ({
      chunkId: s.id,
      documentId: this.documents.id(this.documentOf[s.r] ?? 0),
      score: s.score,
    }));
  }

  /**
   * The best `keep` rows from `from` on by the int8 scan, within the project (-1: any) and the
   * allowed documents (null: any).
   */
  private scanTop(
    query: Float32Array,
    from: number,
    keep: number,
    project: number,
    allowed: Uint8Array | null,
  ): Int32Array {
    const { keys, projectOf, documentOf } = this;
    return this.vectors.scanTop(query, from, this.count, keep, (r) => {
      if (!keys.has(r) || (project !== -1 && projectOf[r] !== project)) return false;
      return allowed === null || allowed[documentOf[r] as number] === 1;
    });
  }

  /**
   * Candidates from the graph plus the scanned rows it does not hold yet; null when a scope
   * leaves fewer than `limit` of the graph's (the caller scans instead).
   */
  private approximate(
    graph: AnnGraph,
    query: Float32Array,
    limit: number,
    fused: boolean,
    project: number,
    allowed: Uint8Array | null,
  ): number[] | null {
    const want = candidates(limit);
    const found = graph.search(query, want, fused);
    if (found === null) return null;
    const rows: number[] = [];
    for (const r of found) {
      if (!this.keys.has(r) || (project !== -1 && this.projectOf[r] !== project)) continue;
      if (allowed !== null && allowed[this.documentOf[r] as number] !== 1) continue;
      rows.push(r);
    }
    const scoped = project !== -1 || allowed !== null;
    if (scoped && rows.length < Math.min(limit, graph.size)) return null;
    if (graph.covered < this.count) {
      // Rows on their way to the graph may be in both.
      const seen = new Set(rows);
      for (const r of this.scanTop(query, graph.covered, want, project, allowed)) {
        if (!seen.has(r)) rows.push(r);
      }
    }
    return rows;
  }

  /**
   * The rows as plain arrays, for a snapshot: views of the live arrays (valid until the next
   * change, see `mutations`), deleted rows included (their id is '').
   */
  state(): VectorState {
    const n = this.count;
    return {
      dims: this.dims,
      count: n,
      ...this.keys.state(n),
      documentOf: this.documentOf.subarray(0, n),
      projectOf: this.projectOf.subarray(0, n),
      documentIds: this.documents.list(),
      projectKeys: this.projects.list(),
      scales: this.vectors.scales.subarray(0, n),
      int8: this.vectors.int8.rows(n),
      ...(this.graph === null ? {} : { graph: this.graph.state(n) }),
    };
  }

  /**
   * An index holding a snapshot's rows: the arrays are copied into its own, or with `owned`
   * (arrays of exactly `count` rows that nothing else holds: a snapshot file's sections) kept as
   * they are. The int8 rows are copied either way (they live in the scan's WebAssembly memory).
   */
  static fromState(
    state: VectorState,
    source: VectorSource,
    options: VectorIndexOptions = {},
    owned = false,
  ): VectorIndex {
    const index = new VectorIndex(state.dims, source, options);
    const n = state.count;
    if (owned) {
      index.documentOf = state.documentOf;
      index.projectOf = state.projectOf;
      index.capacity = n;
    } else {
      index.reserve(n);
      index.documentOf.set(state.documentOf);
      index.projectOf.set(state.projectOf);
    }
    // The int8 rows are copied into the scan's memory either way.
    index.vectors.restore(owned ? state.scales : state.scales.slice(), state.int8, n);
    for (const id of state.documentIds) index.documents.number(id);
    for (const key of state.projectKeys) index.projects.number(key);
    const { keys, dead } = RowKeys.restore(state, n, index.capacity, owned);
    index.keys = keys;
    index.dead = dead;
    index.count = n;
    for (let r = 0; r < n; r++) {
      if (!keys.has(r)) continue;
      const document = state.documentOf[r] ?? 0;
      let list = index.rowsOf.get(document);
      if (list === undefined) index.rowsOf.set(document, (list = []));
      list.push(r);
    }
    return index;
  }

  /**
   * Takes a snapshot's graph (its file and keys; `fromState` gave the rows) when the index is
   * large enough for one. Throws when the file does not hold a graph of these dimensions.
   */
  async restoreGraph(path: string, state: GraphState): Promise<void> {
    if (this.size < this.annMin) return;
    if (state.keyOf.length !== this.count || state.covered > this.count) {
      throw new RangeError('graph keys');
    }
    const alive = (r: number) => this.keys.has(r);
    const graph = await AnnGraph.load(path, this.dims, state, this.count, alive, this.annGraph);
    graph.reserveRows(this.capacity);
    this.graph?.close();
    this.graph = graph;
  }

  /** Stops the graph's worker, if any (the index is dropped). */
  close(): void {
    this.graph?.close();
  }

  /**
   * Asks the graph now for the candidates `search(vector, filter, limit)` will take, so that it
   * looks for them while the caller does other work (the store ranks the keywords meanwhile).
   */
  prefetch(vector: Float32Array, filter: IndexScope, limit: number, fused = false): void {
    const graph = this.graph;
    if (graph === null || graph.failed !== null || graph.covered === 0) return;
    if (filter.documents !== undefined) return;
    const query = this.vectors.normalise(vector);
    if (query !== null) graph.prefetch(query, candidates(limit), fused);
  }

  /** Bytes held per structure (typed arrays exactly; the graph estimated). */
  memoryReport(): Record<string, number> {
    return {
      'vector int8 + scale': this.vectors.byteLength,
      'vector row numbers': this.documentOf.byteLength + this.projectOf.byteLength,
      'vector chunk ids, id map, rowids': this.keys.byteLength,
      'vector graph (estimate) + keys': this.graph?.byteLength ?? 0,
    };
  }

  /** Whether a live row's vector table rowid is not known (a snapshot of an earlier build). */
  rowidsUnknown(): boolean {
    return this.keys.rowidsUnknown(this.count);
  }

  /**
   * Records where chunk `chunkId`'s vector is in the table (RowKeys.learnRowid). It changes no
   * answer, but the bytes of a snapshot: one being written from the live arrays is voided.
   */
  learnRowid(chunkId: string, rowid: number): boolean {
    const learned = this.keys.learnRowid(chunkId, rowid);
    if (learned) this.mutations++;
    return learned;
  }

  /** Cosine similarity of `vector` with each given chunk that has a row. */
  similarities(vector: Float32Array, chunkIds: readonly string[]): Map<string, number> {
    const { query, rows, ids } = this.chunkRows(vector, chunkIds);
    const scores =
      query === null ? null : this.vectors.exactScores(query, rows, ids, this.keys.rowidsOf(rows));
    return new Map(ids.map((id, i) => [id, scores?.[i] ?? 0]));
  }

  /**
   * Upper bounds of what `similarities` gives, from the int8 rows (nothing read); a chunk without
   * a row has none (its cosine counts as 0).
   */
  cosineBounds(vector: Float32Array, chunkIds: readonly string[]): Map<string, number> {
    const { query, rows, ids } = this.chunkRows(vector, chunkIds);
    const bounds = query === null ? null : this.vectors.cosineBounds(query, rows).upper;
    return new Map(ids.map((id, i) => [id, bounds?.[i] ?? 0]));
  }

  private chunkRows(vector: Float32Array, chunkIds: readonly string[]) {
    const query = this.vectors.normalise(vector);
    const rows: number[] = [];
    for (const id of chunkIds) {
      const r = this.keys.row(id);
      if (r !== undefined) rows.push(r);
    }
    return { query, rows, ids: this.keys.idsOf(rows) };
  }
}
