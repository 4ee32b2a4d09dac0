/**
 * The worker thread of an approximate vector graph (ann-graph.ts): it holds the usearch index,
 * does what the main thread sends in the order sent (open or load, add, remove, save), and answers
 * the searches the main thread writes into their shared buffer (ann-channel.ts) after every
 * message and between small batches of the rows it adds, so a search waits at most one batch.
 * The graph is built here at the speed of a core of its own, and the main thread keeps serving.
 */
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import type { Index } from 'usearch';
import { SearchChannel, type GraphReply, type GraphRequest } from './ann-channel.js';

/** Rows added per usearch call (~10 ms at a million rows), between two looks for a search. */
const ADD_BATCH = 16;

if (parentPort === null) throw new Error('ann-worker runs in a worker thread');
const port = parentPort;

let index: Index | null = null;
let channel: SearchChannel | null = null;

function serve(): void {
  const asked = channel?.pending();
  if (asked === undefined || asked === null || channel === null) return;
  // usearch's candidate list is the larger of its setting and k: asking for `list` keys searches
  // with that list, and the first k of them are the k it finds.
  const found =
    index === null || index.size() === 0
      ? null
      : index.search(asked.query, Math.max(asked.k, asked.list), 1);
  channel.reply(asked.seq, found?.keys ?? [], asked.k);
}

function handle(request: GraphRequest): GraphReply | null {
  switch (request.op) {
    case 'open': {
      const { Index, MetricKind, ScalarKind } = createRequire(import.meta.url)(
        'usearch',
      ) as typeof import('usearch');
      const opened = new Index({
        dimensions: request.dims,
        metric: MetricKind.Cos,
        quantization: ScalarKind.I8,
        connectivity: request.connectivity,
        expansion_add: request.expansionAdd,
        // Each search gives its own list (`serve`); this is only the least.
        expansion_search: 1,
        multi: false,
      });
      channel = new SearchChannel(request.dims, request.buffer);
      if (request.path !== undefined) {
        opened.load(request.path);
        if (opened.dimensions() !== request.dims) throw new Error('graph dimensions differ');
      }
      index = opened;
      return { op: 'done', id: request.id, size: opened.size() };
    }
    case 'add': {
      const graph = open();
      const { keys, vectors } = request;
      const dims = vectors.length / Math.max(1, keys.length);
      for (let at = 0; at < keys.length; at += ADD_BATCH) {
        const end = Math.min(keys.length, at + ADD_BATCH);
        const batch = BigUint64Array.from(keys.subarray(at, end), (k) => BigInt(k));
        graph.add(batch, vectors.subarray(at * dims, end * dims), 1);
        serve();
      }
      return { op: 'done', id: request.id, size: graph.size() };
    }
    case 'remove': {
      const graph = open();
      for (const key of request.keys) graph.remove(BigInt(key));
      return null;
    }
    case 'save': {
      const graph = open();
      graph.save(request.path);
      return { op: 'done', id: request.id, size: graph.size() };
    }
    case 'poke':
      return null;
    case 'close':
      port.close();
      return null;
  }
}

function open(): Index {
  if (index === null) throw new Error('graph not open');
  return index;
}

port.on('message', (request: GraphRequest) => {
  let reply: GraphReply | null;
  try {
    reply = handle(request);
  } catch (error) {
    reply = {
      op: 'failed',
      id: 'id' in request ? request.id : -1,
      message: error instanceof Error ? error.message : String(error),
    };
  }
  if (reply !== null) port.postMessage(reply);
  serve();
});
