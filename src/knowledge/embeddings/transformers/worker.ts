/**
 * The worker thread of the `transformers` embedding provider (transformers-provider.ts): it loads
 * the model once and embeds the batches the main thread sends, one at a time. onnxruntime's run
 * holds its thread for the whole batch, so it runs here, never on the server's event loop.
 *
 * What a sentence-transformers model does, done by hand so that long texts come out as the
 * reference does: transformers.js cuts a text that is too long after adding the special tokens,
 * which drops the closing [SEP] (or `</s>`); Hugging Face's tokenizers cut the text and keep it.
 * A cut row gets its closing token back here. Then the pooling (the [CLS] vector, or the mean of
 * the real tokens) and an L2 normalisation.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort } from 'node:worker_threads';

/** The first message: which library and model to load, and how. */
export interface WorkerInit {
  type: 'init';
  moduleUrl: string;
  /** Folder of model folders (transformers.js `localModelPath`). */
  modelDir: string;
  /** The model's folder name under it. */
  model: string;
  allowDownload: boolean;
  quantized: boolean;
  pooling: 'mean' | 'cls';
  /** Tokens per text at most; null: the tokenizer's `model_max_length`. */
  maxTokens: number | null;
}

export type FromWorker =
  | { type: 'ready'; dimensions: number; residentBytes: number }
  | { type: 'init-error'; kind: 'import' | 'not-found' | 'other'; message: string }
  | { type: 'result'; id: number; data: Float32Array; count: number }
  | { type: 'error'; id: number; message: string };

interface Tensor {
  data: ArrayLike<number | bigint>;
  dims: number[];
}
type Encoded = Record<string, Tensor> & { input_ids: Tensor; attention_mask: Tensor };
type Tokenizer = ((texts: string[], options: object) => Encoded) & {
  sep_token_id?: number;
  model_max_length?: number;
};
type Model = (inputs: Encoded) => Promise<Record<string, Tensor>>;

const port = parentPort;
const text = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Puts the closing token back at the end of every row the tokenizer cut to `max` tokens. */
export function restoreClosingToken(encoded: Encoded, closing: number, max: number): void {
  const [rows = 0, width = 0] = encoded.input_ids.dims;
  if (width < max) return;
  const ids = encoded.input_ids.data as BigInt64Array;
  const mask = encoded.attention_mask.data as BigInt64Array;
  const last = BigInt(closing);
  for (let r = 0; r < rows; r++) {
    const end = r * width + max - 1;
    if (mask[end] === 1n && ids[end] !== last) ids[end] = last;
  }
}

/** The pooled, L2-normalised vectors of a batch, one after the other. */
export function poolVectors(hidden: Tensor, mask: Tensor, pooling: 'mean' | 'cls'): Float32Array {
  const [rows = 0, width = 0, size = 0] = hidden.dims;
  const states = hidden.data as Float32Array;
  const attention = mask.data as BigInt64Array;
  const out = new Float32Array(rows * size);
  for (let r = 0; r < rows; r++) {
    const vector = out.subarray(r * size, (r + 1) * size);
    if (pooling === 'cls') {
      vector.set(states.subarray(r * width * size, r * width * size + size));
    } else {
      let tokens = 0;
      for (let t = 0; t < width; t++) {
        if (attention[r * width + t] !== 1n) continue;
        tokens++;
        const at = (r * width + t) * size;
        for (let j = 0; j < size; j++) vector[j] = (vector[j] ?? 0) + (states[at + j] ?? 0);
      }
      for (let j = 0; j < size; j++) vector[j] = (vector[j] ?? 0) / Math.max(1, tokens);
    }
    let norm = 0;
    for (let j = 0; j < size; j++) norm += (vector[j] ?? 0) ** 2;
    norm = Math.sqrt(norm);
    for (let j = 0; j < size; j++) vector[j] = (vector[j] ?? 0) / norm;
  }
  return out;
}

interface Loaded {
  tokenizer: Tokenizer;
  model: Model;
  pooling: 'mean' | 'cls';
  max: number;
  /** The token that closes a row ([SEP], `</s>`), when the tokenizer adds one. */
  closing: number | null;
}

/** The files an offline model needs (transformers.js reads them from the model's folder). */
function missingFile(init: WorkerInit): string | null {
  const weights = init.quantized ? 'onnx/model_quantized.onnx' : 'onnx/model.onnx';
  const needed = ['config.json', 'tokenizer.json', 'tokenizer_config.json', weights];
  return needed.find((file) => !existsSync(join(init.modelDir, init.model, file))) ?? null;
}

async function load(init: WorkerInit): Promise<{ loaded: Loaded; message: FromWorker }> {
  const missing = init.allowDownload ? null : missingFile(init);
  if (missing !== null) {
    throw Object.assign(new Error(`${join(init.modelDir, init.model, missing)} is missing`), {
      kind: 'not-found' as const,
    });
  }
  let lib: typeof import('@huggingface/transformers');
  try {
    lib = (await import(init.moduleUrl)) as typeof import('@huggingface/transformers');
  } catch (err) {
    throw Object.assign(new Error(text(err)), { kind: 'import' as const });
  }
  // Quiet: failures reach the operator through EmbeddingError. Downloads go to modelDir.
  Object.assign(lib.env, {
    allowLocalModels: true,
    allowRemoteModels: init.allowDownload,
    logLevel: lib.LogLevel.ERROR,
    localModelPath: init.modelDir,
    cacheDir: init.modelDir,
  });
  const before = process.memoryUsage().rss;
  const tokenizer = (await lib.AutoTokenizer.from_pretrained(init.model)) as unknown as Tokenizer;
  const model = (await lib.AutoModel.from_pretrained(init.model, {
    dtype: init.quantized ? 'q8' : 'fp32',
  })) as unknown as Model;
  const max = init.maxTokens ?? tokenizer.model_max_length ?? 512;
  const probe = tokenizer(['probe'], { padding: true, truncation: true, max_length: max });
  const ids = probe.input_ids.data;
  const sep = tokenizer.sep_token_id;
  const closing =
    sep !== undefined && BigInt(ids[ids.length - 1] ?? -1) === BigInt(sep) ? sep : null;
  const loaded: Loaded = { tokenizer, model, pooling: init.pooling, max, closing };
  const vector = await embed(loaded, ['dimensions']);
  const residentBytes = Math.max(0, process.memoryUsage().rss - before);
  return { loaded, message: { type: 'ready', dimensions: vector.length, residentBytes } };
}

async function embed(loaded: Loaded, texts: string[]): Promise<Float32Array> {
  const { tokenizer, model, max, closing } = loaded;
  const encoded = tokenizer(texts, { padding: true, truncation: true, max_length: max });
  if (closing !== null) restoreClosingToken(encoded, closing, max);
  const output = await model(encoded);
  const hidden = output.last_hidden_state ?? output.token_embeddings;
  if (hidden === undefined) throw new Error('the model has no last_hidden_state output');
  return poolVectors(hidden, encoded.attention_mask, loaded.pooling);
}

let loaded: Loaded | undefined;
port?.on('message', (message: WorkerInit | { id: number; texts: string[] }) => {
  if ('type' in message) {
    load(message).then(
      (result) => {
        loaded = result.loaded;
        port.postMessage(result.message);
      },
      (err: unknown) => {
        const named = err as { kind?: 'import' | 'not-found'; name?: string };
        const kind =
          named.kind ?? (named.name === 'ModelFileNotFoundError' ? 'not-found' : 'other');
        port.postMessage({ type: 'init-error', kind, message: text(err) });
      },
    );
    return;
  }
  const { id, texts } = message;
  if (loaded === undefined) {
    port.postMessage({ type: 'error', id, message: 'the model is not loaded' });
    return;
  }
  embed(loaded, texts).then(
    (data) => {
      port.postMessage({ type: 'result', id, data, count: texts.length }, [
        data.buffer as ArrayBuffer,
      ]);
    },
    (err: unknown) => {
      port.postMessage({ type: 'error', id, message: text(err) });
    },
  );
});
