/**
 * The worker thread of the `transformers` reranker (transformers-reranker.ts): it loads the
 * cross-encoder once and scores one request at a time. onnxruntime's run holds its thread for the
 * whole batch (about a second for 30 passages on 2 cores), so it runs here, never on the server's
 * event loop.
 *
 * A request's pairs are tokenized as the reference does (pairs.ts: contents cut longest first,
 * the closing [SEP] kept) and scored in batches of `batchSize` (one by default) in the order
 * given. The batches matter: the int8 model quantizes its activations per batch, so a batched
 * passage's logit moves (by up to 0.5) with the company it is scored in; a reference must batch
 * alike.
 *
 * A `stop` message (the provider is closing) ends the request in progress after its current
 * batch: the thread must not be terminated while onnxruntime runs (the process aborts on the
 * native error that follows), so the provider waits for that answer first. A `cancel` message
 * ends a request whose caller gave up the same way, so that the next one starts sooner.
 */
import { parentPort } from 'node:worker_threads';
import { buildRow, padBatch, pairTemplate, type PairTemplate } from './pairs.js';

/** The first message: which library and model to load, and how. */
export interface RerankWorkerInit {
  type: 'init';
  moduleUrl: string;
  /** Folder of model folders (transformers.js `localModelPath`). */
  modelDir: string;
  /** The model's folder name under it. */
  model: string;
  /** `fp32` reads onnx/model.onnx, `q8` onnx/model_quantized.onnx. */
  dtype: 'fp32' | 'q8';
  /** Tokens per pair at most; null: the tokenizer's `model_max_length`. */
  maxTokens: number | null;
  /** Pairs per inference. */
  batchSize: number;
}

/** A request: the logit of each (query, passage) pair. */
export interface RerankWorkerJob {
  id: number;
  query: string;
  passages: string[];
}

/** `stop`: the provider is closing; `cancel`: the caller of request `id` gave up. */
export type RerankWorkerControl = { type: 'stop' } | { type: 'cancel'; id: number };

export type FromRerankWorker =
  | { type: 'ready'; maxTokens: number; residentBytes: number }
  | { type: 'init-error'; kind: 'import' | 'other'; message: string }
  | { type: 'result'; id: number; logits: Float32Array }
  | { type: 'error'; id: number; message: string };

interface Tensor {
  data: ArrayLike<number | bigint>;
  dims: number[];
}
interface Tokenizer {
  (
    text: string,
    options: { text_pair: string; return_tensor: false },
  ): {
    input_ids: number[];
    token_type_ids?: number[];
  };
  encode(text: string, options: { add_special_tokens: false }): number[];
  pad_token_id?: number;
  model_max_length?: number;
}
type Model = (inputs: Record<string, Tensor>) => Promise<Record<string, Tensor>>;
type Library = typeof import('@huggingface/transformers');

interface Loaded {
  lib: Library;
  tokenizer: Tokenizer;
  model: Model;
  template: PairTemplate;
  maxTokens: number;
  padId: number;
  batchSize: number;
}

const port = parentPort;
const text = (err: unknown): string => (err instanceof Error ? err.message : String(err));

async function load(init: RerankWorkerInit): Promise<Loaded> {
  let lib: Library;
  try {
    lib = (await import(init.moduleUrl)) as Library;
  } catch (err) {
    throw Object.assign(new Error(text(err)), { kind: 'import' as const });
  }
  // Offline only: the model comes from modelDir, never from the internet.
  Object.assign(lib.env, {
    allowLocalModels: true,
    allowRemoteModels: false,
    logLevel: lib.LogLevel.ERROR,
    localModelPath: init.modelDir,
    cacheDir: init.modelDir,
  });
  const tokenizer = (await lib.AutoTokenizer.from_pretrained(init.model)) as unknown as Tokenizer;
  const model = (await lib.AutoModelForSequenceClassification.from_pretrained(init.model, {
    dtype: init.dtype,
  })) as unknown as Model;
  const probe = tokenizer('alpha', { text_pair: 'beta', return_tensor: false });
  const template = pairTemplate(
    { ids: probe.input_ids, types: probe.token_type_ids },
    tokenizer.encode('alpha', { add_special_tokens: false }),
    tokenizer.encode('beta', { add_special_tokens: false }),
  );
  const maxTokens = init.maxTokens ?? tokenizer.model_max_length ?? 512;
  return {
    lib,
    tokenizer,
    model,
    template,
    maxTokens,
    padId: tokenizer.pad_token_id ?? 0,
    batchSize: Math.max(1, init.batchSize),
  };
}

/** Set by a `stop` message: the request being scored ends after its current batch. */
let stopping = false;
/** Set by a `cancel` message: that request ends after its current batch (its caller gave up). */
let cancelled = -1;

async function score(
  loaded: Loaded,
  { id, query, passages }: RerankWorkerJob,
): Promise<Float32Array<ArrayBuffer>> {
  const { lib, tokenizer, model, template, maxTokens, padId, batchSize } = loaded;
  const queryIds = tokenizer.encode(query, { add_special_tokens: false });
  const logits = new Float32Array(passages.length);
  for (let start = 0; start < passages.length; start += batchSize) {
    if (stopping || cancelled === id) throw new Error('stopped');
    const rows = passages
      .slice(start, start + batchSize)
      .map((p) =>
        buildRow(template, queryIds, tokenizer.encode(p, { add_special_tokens: false }), maxTokens),
      );
    const batch = padBatch(rows, padId);
    const dims = [batch.rows, batch.width];
    const output = await model({
      input_ids: new lib.Tensor('int64', batch.inputIds, dims),
      attention_mask: new lib.Tensor('int64', batch.attentionMask, dims),
      token_type_ids: new lib.Tensor('int64', batch.tokenTypeIds, dims),
    });
    const out = output.logits;
    if (out === undefined || out.dims[0] !== batch.rows || out.dims[1] !== 1) {
      const shape = out === undefined ? 'none' : `[${out.dims.join(', ')}]`;
      throw new Error(`expected one relevance logit per pair, the model answered ${shape}`);
    }
    for (let r = 0; r < batch.rows; r++) logits[start + r] = Number(out.data[r]);
  }
  return logits;
}

let loaded: Loaded | undefined;
port?.on('message', (message: RerankWorkerInit | RerankWorkerJob | RerankWorkerControl) => {
  if ('type' in message && message.type === 'stop') {
    stopping = true;
    return;
  }
  if ('type' in message && message.type === 'cancel') {
    cancelled = message.id;
    return;
  }
  if ('type' in message) {
    const before = process.memoryUsage().rss;
    load(message).then(
      (result) => {
        loaded = result;
        const residentBytes = Math.max(0, process.memoryUsage().rss - before);
        port.postMessage({ type: 'ready', maxTokens: result.maxTokens, residentBytes });
      },
      (err: unknown) => {
        const kind = (err as { kind?: 'import' }).kind ?? 'other';
        port.postMessage({ type: 'init-error', kind, message: text(err) });
      },
    );
    return;
  }
  const { id } = message;
  if (loaded === undefined) {
    port.postMessage({ type: 'error', id, message: 'the model is not loaded' });
    return;
  }
  score(loaded, message).then(
    (logits) => {
      port.postMessage({ type: 'result', id, logits }, [logits.buffer]);
    },
    (err: unknown) => {
      port.postMessage({ type: 'error', id, message: text(err) });
    },
  );
});
