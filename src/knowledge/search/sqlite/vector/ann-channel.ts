/**
 * What the main thread and a graph's worker thread (ann-graph.ts, ann-worker.ts) exchange: the
 * messages, in order, and the shared buffer a search goes through without a message round trip.
 *
 * A search is written into the buffer (its number, k and the query) and answered there (the same
 * number, the count and the keys found); the main thread waits for the answer with Atomics.wait,
 * inside the search's synchronous read. The worker looks for a search after every message and
 * between small batches of rows it adds, so a search waits at most one such batch.
 */

/** Keys an answer holds at most (a search asks for fewer). */
const MAX_KEYS = 16_384;

/**
 * Int32 slots of the buffer's head: the request's number, the answer's, k, the search's candidate
 * list, the keys found.
 */
const REQUEST = 0;
const ANSWER = 1;
const K = 2;
const LIST = 3;
const COUNT = 4;
const HEAD = 5;

/** A message to the worker. */
export type GraphRequest =
  | {
      op: 'open';
      id: number;
      dims: number;
      connectivity: number;
      expansionAdd: number;
      buffer: SharedArrayBuffer;
      /** A saved graph to load. */
      path?: string;
    }
  | { op: 'add'; id: number; keys: Int32Array; vectors: Float32Array }
  | { op: 'remove'; keys: Int32Array }
  | { op: 'save'; id: number; path: string }
  | { op: 'poke' }
  /** Ends the worker once the messages before are done (a worker is never terminated while it
   * may be inside usearch: a native call cut short aborts the whole process). */
  | { op: 'close' };

/** A message from the worker: a request of that id done (with the graph's size), or failed. */
export type GraphReply =
  { op: 'done'; id: number; size: number } | { op: 'failed'; id: number; message: string };

/** The shared buffer of one graph's searches, as either side sees it. */
export class SearchChannel {
  readonly buffer: SharedArrayBuffer;
  private readonly control: Int32Array;
  private readonly query: Float32Array;
  private readonly keys: Int32Array;

  constructor(
    readonly dims: number,
    buffer?: SharedArrayBuffer,
  ) {
    this.buffer = buffer ?? new SharedArrayBuffer(4 * (HEAD + dims + MAX_KEYS));
    this.control = new Int32Array(this.buffer, 0, HEAD);
    this.query = new Float32Array(this.buffer, 4 * HEAD, dims);
    this.keys = new Int32Array(this.buffer, 4 * (HEAD + dims), MAX_KEYS);
  }

  // --- the main thread --------------------------------------------------------------------------

  /**
   * Writes search `seq` (the k nearest to `query`, looked for with a candidate list of `list`);
   * the worker answers it at its next look.
   */
  ask(seq: number, query: Float32Array, k: number, list: number): void {
    this.query.set(query);
    this.control[K] = Math.min(k, MAX_KEYS);
    this.control[LIST] = list;
    Atomics.store(this.control, REQUEST, seq);
  }

  /** The keys answering search `seq`, waiting at most `ms` for them; null when none came. */
  answer(seq: number, ms: number): Int32Array | null {
    const deadline = performance.now() + ms;
    for (;;) {
      const answered = Atomics.load(this.control, ANSWER);
      if (answered === seq) return this.keys.slice(0, this.control[COUNT]);
      const left = deadline - performance.now();
      if (left <= 0) return null;
      Atomics.wait(this.control, ANSWER, answered, left);
    }
  }

  // --- the worker -------------------------------------------------------------------------------

  /** The search waiting for an answer (its number, k, list and a copy of the query), if any. */
  pending(): { seq: number; k: number; list: number; query: Float32Array } | null {
    for (;;) {
      const seq = Atomics.load(this.control, REQUEST);
      if (seq === Atomics.load(this.control, ANSWER)) return null;
      const k = this.control[K] as number;
      const list = this.control[LIST] as number;
      const query = this.query.slice();
      // Written again while it was copied: read the newer one.
      if (Atomics.load(this.control, REQUEST) === seq) return { seq, k, list, query };
    }
  }

  /** Answers search `seq` with the first `k` of `keys`. */
  reply(seq: number, keys: ArrayLike<bigint>, k: number): void {
    const n = Math.min(keys.length, k, MAX_KEYS);
    for (let i = 0; i < n; i++) this.keys[i] = Number(keys[i]);
    this.control[COUNT] = n;
    Atomics.store(this.control, ANSWER, seq);
    Atomics.notify(this.control, ANSWER);
  }
}
