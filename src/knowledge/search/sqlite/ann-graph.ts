/**
 * The approximate part of a large vector index (vector-index.ts): an HNSW graph (usearch, int8
 * quantized, cosine) over the rows of the index, whose candidates the index re-scores exactly.
 *
 * Graph keys are stable numbers given to rows as they are added (rows move when the index
 * compacts, keys never do); `keyOf` / `rowOf` translate. The graph is built behind the rows:
 * rows `[0, covered)` are in it (the deleted ones removed), later rows are added by `step()`, a
 * slice at a time with the event loop free in between (index-loader.ts drives it), and a search
 * scans that uncovered tail exactly, so a partly built graph is never less exact than a scan.
 *
 * The graph holds the rows minus their mean vector μ (fixed when the graph is made) and is
 * searched with the query minus μ. Embeddings crowd in a narrow cone (the default model's
 * synthetic 100k corpus: mean pairwise cosine 0.80); centred, they spread over the sphere, and
 * the graph's neighbourhoods and its int8 cells follow the directions that tell rows apart. The
 * graph only proposes candidates: the index re-scores each exactly, so scores do not change.
 *
 * Persisted beside the index's snapshot (index-snapshots.ts): the graph file's size and CRC-32
 * are in the snapshot's header, with the keys, the mean and `covered`; a graph file that does not
 * match is rebuilt from the rows, never trusted.
 */
import { createRequire } from 'node:module';
import type { Index } from 'usearch';

/**
 * usearch (a native module) is loaded when the first graph is made, so a server whose indexes
 * stay below SEARCH_ANN_MIN_VECTORS (500k by default) never loads it.
 */
let usearch: typeof import('usearch') | undefined;
function loadUsearch(): typeof import('usearch') {
  usearch ??= createRequire(import.meta.url)('usearch') as typeof import('usearch');
  return usearch;
}

/**
 * HNSW links per node and the candidate lists of a build and a search, for recall@10 ≥ 0.98
 * against the exact scan (issue 13). At 1M rows of the default model, bench:scale's text queries,
 * 132 candidates asked (`npm run bench:ann -- <1M> --text --limit 132 --lists …`, README
 * "Scale"): 16 links, 252 bytes a row, reach 0.968 with a list of 1024, 0.981 with 1536 and 0.986
 * with 2048 (~11 ms); 32 links, 380 bytes a row, 0.979 with 640 and 0.990 with 1024 (~10–12 ms),
 * 130 MB more than the 1.2 GB the server may hold at 1M. At 100k (32 links): 320 gave 0.995.
 */
export const CONNECTIVITY = 16;
const EXPANSION_ADD = 64;
export const EXPANSION_SEARCH = 2048;
/** Rows added to the graph per usearch call within a step. */
const ADD_BATCH = 32;

/** A graph's persisted keys (row → key, and the next key to give) and its rows' mean. */
export interface GraphState {
  keyOf: Int32Array;
  nextKey: number;
  covered: number;
  /** The mean the graph's vectors are centred on (`dims` floats). */
  mean: Float32Array;
}

/** How a graph is made and searched (defaults: the constants above). */
export interface GraphSettings {
  searchList?: number;
  connectivity?: number;
}

function newIndex(dims: number, settings: GraphSettings): Index {
  const { Index, MetricKind, ScalarKind } = loadUsearch();
  return new Index({
    dimensions: dims,
    metric: MetricKind.Cos,
    quantization: ScalarKind.I8,
    connectivity: settings.connectivity ?? CONNECTIVITY,
    expansion_add: EXPANSION_ADD,
    expansion_search: settings.searchList ?? EXPANSION_SEARCH,
    multi: false,
  });
}

export class AnnGraph {
  private readonly index: Index;
  /** Row → key (rows up to the index's count). */
  private keyOf: Int32Array;
  /** Key → row, -1 for a deleted row. */
  private rowOf: Int32Array;
  private nextKey: number;
  private readonly mean: Float32Array;
  /** Rows `[0, covered)` are in the graph (deleted ones removed from it). */
  covered: number;

  private constructor(
    readonly dims: number,
    index: Index,
    state: GraphState,
  ) {
    this.index = index;
    this.keyOf = state.keyOf;
    this.nextKey = state.nextKey;
    this.covered = state.covered;
    if (state.mean.length !== dims) throw new RangeError('graph mean');
    this.mean = state.mean;
    this.rowOf = new Int32Array(Math.max(1024, state.nextKey)).fill(-1);
  }

  /**
   * An empty graph over an index's `rows` existing rows (keys 0…rows-1, none covered yet),
   * centred on `mean` (about the rows' mean).
   */
  static create(
    dims: number,
    rows: number,
    capacity: number,
    mean: Float32Array,
    settings: GraphSettings = {},
  ): AnnGraph {
    const keyOf = new Int32Array(Math.max(capacity, rows));
    for (let r = 0; r < rows; r++) keyOf[r] = r;
    const state = { keyOf, nextKey: rows, covered: 0, mean };
    const graph = new AnnGraph(dims, newIndex(dims, settings), state);
    graph.reserveKeys(rows);
    for (let r = 0; r < rows; r++) graph.rowOf[r] = r;
    return graph;
  }

  /**
   * A graph loaded from its file (usearch's own format) with its persisted keys; `alive(r)` says
   * which of the rows are not deleted. Throws when the file is not a graph of these dimensions.
   */
  static load(
    path: string,
    dims: number,
    state: GraphState,
    count: number,
    alive: (r: number) => boolean,
    settings: GraphSettings = {},
  ): AnnGraph {
    const index = newIndex(dims, settings);
    index.load(path);
    if (index.dimensions() !== dims) throw new Error('graph dimensions differ');
    const graph = new AnnGraph(dims, index, state);
    graph.reserveKeys(state.nextKey);
    for (let r = 0; r < count; r++) {
      if (!alive(r)) continue;
      const key = state.keyOf[r] ?? -1;
      if (key < 0 || key >= state.nextKey) throw new Error('graph keys');
      graph.rowOf[key] = r;
    }
    return graph;
  }

  private reserveKeys(keys: number): void {
    if (keys <= this.rowOf.length) return;
    const rowOf = new Int32Array(Math.max(keys, Math.ceil(this.rowOf.length * 1.5))).fill(-1);
    rowOf.set(this.rowOf);
    this.rowOf = rowOf;
  }

  /** Makes room for `rows` rows (the index grew). */
  reserveRows(rows: number): void {
    if (rows <= this.keyOf.length) return;
    const keyOf = new Int32Array(rows);
    keyOf.set(this.keyOf);
    this.keyOf = keyOf;
  }

  /** Row `r` was added to the index: it gets a key (the graph takes it in a later step). */
  appended(r: number): void {
    this.reserveRows(r + 1);
    this.reserveKeys(this.nextKey + 1);
    this.keyOf[r] = this.nextKey;
    this.rowOf[this.nextKey] = r;
    this.nextKey++;
  }

  /** Row `r` was deleted. */
  removed(r: number): void {
    const key = this.keyOf[r] ?? -1;
    if (key < 0) return;
    this.rowOf[key] = -1;
    if (r < this.covered) this.index.remove(BigInt(key));
  }

  /** Live row `from` moved to `to` (the index compacts; `to` ≤ `from`). */
  moved(from: number, to: number): void {
    const key = this.keyOf[from] ?? -1;
    this.keyOf[to] = key;
    if (key >= 0) this.rowOf[key] = to;
  }

  /** The index compacted: `covered` rows before it are now `covered` live rows before it. */
  compacted(coveredNow: number): void {
    this.covered = coveredNow;
  }

  /**
   * Adds uncovered rows to the graph for up to `budgetMs`; `vectors(rows)` gives the rows'
   * normalised vectors (`dims` floats each, in order), `count` is the index's rows, `alive(r)`
   * whether a row is not deleted. Returns whether rows remain uncovered.
   */
  step(
    vectors: (rows: number[]) => Float32Array,
    count: number,
    alive: (r: number) => boolean,
    budgetMs: number,
  ): boolean {
    const started = performance.now();
    const dims = this.dims;
    // At least one batch per step, however small the budget.
    for (let first = true; this.covered < count; first = false) {
      if (!first && performance.now() - started >= budgetMs) break;
      const end = Math.min(count, this.covered + ADD_BATCH);
      const keys: bigint[] = [];
      const rows: number[] = [];
      for (let r = this.covered; r < end; r++) {
        if (!alive(r)) continue;
        keys.push(BigInt(this.keyOf[r] ?? 0));
        rows.push(r);
      }
      if (rows.length > 0) {
        const batch = vectors(rows);
        for (let i = 0; i < batch.length; i++) {
          batch[i] = (batch[i] as number) - (this.mean[i % dims] as number);
        }
        this.index.add(BigUint64Array.from(keys), batch, 1);
      }
      this.covered = end;
    }
    return this.covered < count;
  }

  /** The rows of the `k` nearest graph nodes to a normalised query (deleted rows skipped). */
  search(query: Float32Array, k: number): number[] {
    if (this.index.size() === 0) return [];
    const centred = Float32Array.from(query, (v, j) => v - (this.mean[j] as number));
    const found = this.index.search(centred, k, 1);
    const rows: number[] = [];
    for (const key of found.keys) {
      const r = this.rowOf[Number(key)] ?? -1;
      if (r >= 0) rows.push(r);
    }
    return rows;
  }

  /** Nodes in the graph. */
  get size(): number {
    return this.index.size();
  }

  /** Writes the graph to `path` (usearch's format). */
  save(path: string): void {
    this.index.save(path);
  }

  /** The keys to persist with the graph file (views, valid until the next change). */
  state(count: number): GraphState {
    return {
      keyOf: this.keyOf.subarray(0, count),
      nextKey: this.nextKey,
      covered: this.covered,
      mean: this.mean,
    };
  }

  /** Bytes held: an estimate of the graph (int8 vector, links of two levels) plus the key maps. */
  get byteLength(): number {
    const node = this.dims + this.index.connectivity() * 2 * 4 + 16;
    return this.index.size() * node + this.keyOf.byteLength + this.rowOf.byteLength;
  }
}
