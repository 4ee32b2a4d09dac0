/**
 * The approximate part of a large vector index (vector-index.ts): an HNSW graph (usearch, int8
 * quantized, cosine) over the rows of the index, whose candidates the index re-scores exactly.
 *
 * The graph lives in a worker thread of its own (ann-worker.ts): it is built, loaded and saved
 * there, so neither a million-row build nor a load holds the event loop, and it is searched there
 * while the main thread ranks the query's keywords. A search (sqlite-searches.ts) asks for the
 * graph's candidates first (`prefetch`); the vector search then takes them, waiting
 * (Atomics.wait on a shared buffer, ann-channel.ts) only for what the graph takes beyond the
 * keyword ranking. Adds and removes are messages, handled in order (the removes of a delete go as
 * one, ahead of the next message), so a search sees every change made before it. A graph whose
 * worker does not answer in time (or failed) leaves its searches to the exact scan.
 *
 * Graph keys are stable numbers given to rows as they are added (rows move when the index
 * compacts, keys never do); `keyOf` / `rowOf` translate, here. The graph is built behind the rows:
 * rows `[0, covered)` are in it (the deleted ones removed), later ones are sent by `step()` a batch
 * at a time (copies/copies-loader.ts drives it) and count as covered once the worker added them;
 * a search scans the rows not covered exactly, so a partly built graph is never less exact than a
 * scan.
 *
 * The graph holds the rows minus their mean vector μ (fixed when the graph is made) and is
 * searched with the query minus μ. Embeddings crowd in a narrow cone (the default model's
 * synthetic 100k corpus: mean pairwise cosine 0.80); centred, they spread over the sphere, and
 * the graph's neighbourhoods and its int8 cells follow the directions that tell rows apart. The
 * graph only proposes candidates: the index re-scores each exactly, so scores do not change.
 *
 * Persisted beside the index's snapshot (copies/snapshots.ts): the graph file's size and CRC-32
 * are in the snapshot's header, with the keys, the mean and `covered`; a graph file that does not
 * match is rebuilt from the rows, never trusted.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorkerModule } from '../../../../worker-threads.js';
import { SearchChannel, type GraphReply, type GraphRequest } from './ann-channel.js';

/**
 * HNSW links per node and the candidate lists of a build and a search, for recall@10 ≥ 0.98
 * against the exact scan. At 1M rows of the default model (`npm run bench:ann -- <1M> --text
 * --limit 132 --lists …`), 16 links with a list of 2560 reach 0.991; 32 links would need 130 MB
 * more than the 1.2 GB the server may hold at 1M (docs/performance.md).
 */
const CONNECTIVITY = 16;
const EXPANSION_ADD = 64;
const EXPANSION_SEARCH = 2560;
/**
 * The list of a hybrid search's vector candidates: they are fused with the keyword candidates,
 * whose cosines are exact whatever the graph finds, so the hybrid answer needs less of the graph.
 * At 1M rows 1024 kept 0.989–1.000 of the exact hybrid answers, ~20 % faster than 2560
 * (docs/performance.md).
 */
const FUSED_SEARCH_LIST = 1024;
/** Rows sent to the worker per message while building, and at most in flight. */
const SEND_BATCH = 256;
const MAX_IN_FLIGHT = 1024;
/** How long a search waits for the graph's answer before it scans instead. */
const ANSWER_MS = 2000;

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
  /** The list of a search whose candidates are fused with keyword candidates (hybrid). */
  fusedList?: number;
  connectivity?: number;
}

/** Graphs whose index was dropped without `close()`: their workers are told to end. */
const orphans = new FinalizationRegistry<Worker>((worker) => {
  worker.postMessage({ op: 'close' } satisfies GraphRequest);
});
/**
 * Graphs waiting for their worker (a reply, rows on their way): held here, since the worker's
 * listeners hold a graph only weakly and a caller awaiting a reply holds it only through that
 * reply (a cycle the collector would take, the reply then lost).
 */
const waiting = new Set<AnnGraph>();

export class AnnGraph {
  private readonly worker: Worker;
  private readonly channel: SearchChannel;
  private readonly connectivity: number;
  /** The search's candidate list, alone and fused with keyword candidates. */
  private readonly lists: { alone: number; fused: number };
  /** Row → key (rows up to the index's count). */
  private keyOf: Int32Array;
  /** Key → row, -1 for a deleted row. */
  private rowOf: Int32Array;
  private nextKey: number;
  private readonly mean: Float32Array;
  /** Rows `[0, covered)` are in the graph; `[covered, sent)` are on their way. */
  covered: number;
  private sent: number;
  /** The rows each batch on its way ends at, oldest first. */
  private readonly batches: { id: number; end: number }[] = [];
  /** Keys of rows deleted since the last message: sent as one `remove` ahead of the next. */
  private removals: number[] = [];
  /** Nodes in the graph, as of what was sent (for a scope's count). */
  size = 0;
  /** Why the worker stopped, once it did: the graph is then not used. */
  failed: string | null = null;
  private nextId = 1;
  private readonly replies = new Map<number, (reply: GraphReply) => void>();
  private seq = 0;
  /** Bumped by every change sent to the worker or done by it: an answer is of one version. */
  private version = 0;
  /** The search sent ahead (`prefetch`), until `search` takes it. */
  private ahead: {
    seq: number;
    k: number;
    list: number;
    query: Float32Array;
    version: number;
  } | null = null;

  private constructor(
    readonly dims: number,
    state: GraphState,
    settings: GraphSettings,
    path?: string,
  ) {
    this.keyOf = state.keyOf;
    this.nextKey = state.nextKey;
    this.covered = state.covered;
    this.sent = state.covered;
    if (state.mean.length !== dims) throw new RangeError('graph mean');
    this.mean = state.mean;
    this.rowOf = new Int32Array(Math.max(1024, state.nextKey)).fill(-1);
    this.connectivity = settings.connectivity ?? CONNECTIVITY;
    this.lists = {
      alone: settings.searchList ?? EXPANSION_SEARCH,
      fused: settings.fusedList ?? FUSED_SEARCH_LIST,
    };
    this.channel = new SearchChannel(dims);
    this.worker = spawnWorkerModule(import.meta.url, 'ann-worker').worker;
    this.worker.unref();
    // The worker's listeners hold the graph weakly, so that a graph dropped without close() is
    // collected and its worker stopped.
    orphans.register(this, this.worker, this);
    const self = new WeakRef(this);
    this.worker.on('message', (reply: GraphReply) => self.deref()?.received(reply));
    this.worker.on('error', (error) => self.deref()?.stopped(error.message));
    this.worker.on('exit', (code) => self.deref()?.stopped(`worker exited (${code})`));
    this.send({
      op: 'open',
      id: this.nextId++,
      dims,
      connectivity: this.connectivity,
      expansionAdd: EXPANSION_ADD,
      buffer: this.channel.buffer,
      ...(path === undefined ? {} : { path }),
    });
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
    const graph = new AnnGraph(dims, { keyOf, nextKey: rows, covered: 0, mean }, settings);
    graph.reserveKeys(rows);
    for (let r = 0; r < rows; r++) graph.rowOf[r] = r;
    return graph;
  }

  /**
   * A graph loaded from its file (usearch's own format) with its persisted keys; `alive(r)` says
   * which of the rows are not deleted. Rejects when the file is not a graph of these dimensions
   * (its worker stopped).
   */
  static async load(
    path: string,
    dims: number,
    state: GraphState,
    count: number,
    alive: (r: number) => boolean,
    settings: GraphSettings = {},
  ): Promise<AnnGraph> {
    const graph = new AnnGraph(dims, state, settings, path);
    try {
      graph.reserveKeys(state.nextKey);
      for (let r = 0; r < count; r++) {
        if (!alive(r)) continue;
        const key = state.keyOf[r] ?? -1;
        if (key < 0 || key >= state.nextKey) throw new Error('graph keys');
        graph.rowOf[key] = r;
      }
      graph.size = (await graph.opened).size;
      return graph;
    } catch (error) {
      graph.close();
      throw error;
    }
  }

  /** The worker's answer to `open` (the graph loaded). */
  private get opened(): Promise<GraphReply & { op: 'done' }> {
    return this.reply(1);
  }

  private send(request: GraphRequest): void {
    if (this.failed !== null) return;
    if (this.removals.length > 0) {
      this.worker.postMessage({ op: 'remove', keys: Int32Array.from(this.removals) });
      this.removals = [];
    }
    this.worker.postMessage(request);
  }

  /** The reply to request `id`: resolved when done, rejected when it or the worker failed. */
  private reply(id: number): Promise<GraphReply & { op: 'done' }> {
    return new Promise((resolve, reject) => {
      if (this.failed !== null) {
        reject(new Error(this.failed));
        return;
      }
      this.replies.set(id, (reply) => {
        if (reply.op === 'done') resolve(reply);
        else reject(new Error(reply.message));
      });
      waiting.add(this);
    });
  }

  /** Not held any more once nothing is awaited of the worker. */
  private settled(): void {
    if (this.replies.size === 0 && this.batches.length === 0) waiting.delete(this);
  }

  private received(reply: GraphReply): void {
    if (reply.op === 'failed' && !this.replies.has(reply.id)) {
      this.stopped(reply.message);
      return;
    }
    const batch = this.batches[0];
    if (batch?.id === reply.id) {
      this.batches.shift();
      this.covered = batch.end;
      this.version++;
    }
    this.replies.get(reply.id)?.(reply);
    this.replies.delete(reply.id);
    this.settled();
  }

  private stopped(why: string): void {
    if (this.failed !== null) return;
    // Told to end (not terminated: see the 'close' message) unless it already has.
    this.worker.postMessage({ op: 'close' } satisfies GraphRequest);
    this.failed = why;
    for (const settle of this.replies.values()) settle({ op: 'failed', id: -1, message: why });
    this.replies.clear();
    this.batches.length = 0;
    waiting.delete(this);
  }

  /** Stops the worker (the index dropped its graph). */
  close(): void {
    orphans.unregister(this);
    this.stopped('closed');
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
    if (r < this.sent) {
      this.removals.push(key);
      this.size--;
      this.version++;
    }
  }

  /** Live row `from` moved to `to` (the index compacts; `to` ≤ `from`). */
  moved(from: number, to: number): void {
    const key = this.keyOf[from] ?? -1;
    this.keyOf[to] = key;
    if (key >= 0) this.rowOf[key] = to;
  }

  /**
   * The index compacted: `at(end)` is where a prefix of rows ending at `end` ends now (the live
   * rows before it), for the rows covered, sent and on their way.
   */
  compacted(at: (end: number) => number): void {
    this.covered = at(this.covered);
    this.sent = at(this.sent);
    for (const batch of this.batches) batch.end = at(batch.end);
  }

  /**
   * Sends uncovered rows to the worker for up to `budgetMs` (at most MAX_IN_FLIGHT on their way);
   * `vectors(rows)` gives the rows' normalised vectors (`dims` floats each, in order), `count` is
   * the index's rows, `alive(r)` whether a row is not deleted. Returns whether rows are still to
   * be covered.
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
    for (let first = true; ; first = false) {
      if (this.failed !== null || this.sent >= count) break;
      if (this.sent - this.covered >= MAX_IN_FLIGHT) break;
      if (!first && performance.now() - started >= budgetMs) break;
      const end = Math.min(count, this.sent + SEND_BATCH);
      const rows: number[] = [];
      for (let r = this.sent; r < end; r++) if (alive(r)) rows.push(r);
      const keys = Int32Array.from(rows, (r) => this.keyOf[r] ?? 0);
      const batch = vectors(rows);
      for (let i = 0; i < batch.length; i++) {
        batch[i] = (batch[i] as number) - (this.mean[i % dims] as number);
      }
      const id = this.nextId++;
      this.batches.push({ id, end });
      waiting.add(this);
      this.send({ op: 'add', id, keys, vectors: batch });
      this.version++;
      this.sent = end;
      this.size += rows.length;
    }
    return this.failed === null && this.covered < count;
  }

  /**
   * Asks the graph now for the `k` nearest to a normalised query (`search` takes the answer);
   * `fused`: the candidates are fused with keyword candidates (a shorter list).
   */
  prefetch(query: Float32Array, k: number, fused: boolean): void {
    if (this.failed !== null) return;
    const centred = Float32Array.from(query, (v, j) => v - (this.mean[j] as number));
    const seq = ++this.seq;
    const list = this.listFor(fused);
    this.channel.ask(seq, centred, k, list);
    this.send({ op: 'poke' });
    this.ahead = { seq, k, list, query, version: this.version };
  }

  private listFor(fused: boolean): number {
    return fused ? this.lists.fused : this.lists.alone;
  }

  /**
   * The rows of the `k` nearest graph nodes to a normalised query (deleted rows skipped); null
   * when the graph did not answer in time or stopped (the caller scans).
   */
  search(query: Float32Array, k: number, fused: boolean): number[] | null {
    let ahead = this.ahead;
    // The search sent ahead is this one if nothing changed since (else it is asked again).
    const same =
      ahead !== null &&
      ahead.version === this.version &&
      ahead.k === k &&
      ahead.list === this.listFor(fused) &&
      ahead.query.every((v, j) => v === query[j]);
    if (!same) {
      this.prefetch(query, k, fused);
      ahead = this.ahead;
    }
    this.ahead = null;
    if (ahead === null || this.failed !== null) return null;
    const keys = this.channel.answer(ahead.seq, ANSWER_MS);
    if (keys === null) return null;
    const rows: number[] = [];
    for (const key of keys) {
      const r = this.rowOf[key] ?? -1;
      if (r >= 0) rows.push(r);
    }
    return rows;
  }

  /** Saves the graph as of every change sent so far to `path` (usearch's format). */
  save(path: string): Promise<void> {
    const id = this.nextId++;
    const done = this.reply(id);
    this.send({ op: 'save', id, path });
    return done.then(() => undefined);
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
    const node = this.dims + this.connectivity * 2 * 4 + 16;
    return this.size * node + this.keyOf.byteLength + this.rowOf.byteLength;
  }
}
