/**
 * The rows of an in-process vector index (vector-index.ts searches them): per row, the chunk's
 * id and vector table rowid, its document and project key, and its vector normalised as int8
 * (vector-rows.ts); rows by document; the approximate graph of them from `annMin` live rows on
 * (ann-graph.ts), built in steps. Rows are appended, killed by document and compacted away; a
 * snapshot is their arrays (`state`, `restore`).
 */
import { AnnGraph, type GraphSettings, type GraphState } from './ann-graph.js';
import { Numbering } from './numbering.js';
import { RowKeys } from './vector-row-keys.js';
import { VectorRows } from './vector-rows.js';
import type { IndexRow, VectorIndexOptions, VectorSource, VectorState } from './vector-types.js';

export class VectorStore {
  /** Row → chunk id (none for a deleted row, compacted away later) and vector table rowid. */
  protected keys = new RowKeys();
  /** Row → document and project key numbers (Numbers: one string per document, not per row). */
  protected documentOf: Int32Array = new Int32Array(0);
  protected projectOf: Int32Array = new Int32Array(0);
  protected readonly documents = new Numbering();
  protected readonly projects = new Numbering();
  /** Rows by document number. */
  protected readonly rowsOf = new Map<number, number[]>();
  /** The rows' int8 vectors, and their exact ones from the table. */
  protected readonly vectors: VectorRows;
  protected capacity = 0;
  protected count = 0;
  protected dead = 0;
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
  protected rowsOfDocuments(documents: ReadonlySet<string>, project: number): number[] {
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
   * Takes a snapshot's rows (an empty store): the arrays are copied into its own, or with `owned`
   * (arrays of exactly `count` rows that nothing else holds: a snapshot file's sections) kept as
   * they are. The int8 rows are copied either way (they live in the scan's WebAssembly memory).
   */
  protected restore(state: VectorState, owned: boolean): void {
    const n = state.count;
    if (owned) {
      this.documentOf = state.documentOf;
      this.projectOf = state.projectOf;
      this.capacity = n;
    } else {
      this.reserve(n);
      this.documentOf.set(state.documentOf);
      this.projectOf.set(state.projectOf);
    }
    // The int8 rows are copied into the scan's memory either way.
    this.vectors.restore(owned ? state.scales : state.scales.slice(), state.int8, n);
    for (const id of state.documentIds) this.documents.number(id);
    for (const key of state.projectKeys) this.projects.number(key);
    const { keys, dead } = RowKeys.restore(state, n, this.capacity, owned);
    this.keys = keys;
    this.dead = dead;
    this.count = n;
    for (let r = 0; r < n; r++) {
      if (!keys.has(r)) continue;
      const document = state.documentOf[r] ?? 0;
      let list = this.rowsOf.get(document);
      if (list === undefined) this.rowsOf.set(document, (list = []));
      list.push(r);
    }
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
}
