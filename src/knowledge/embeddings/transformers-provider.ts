/**
 * In-process embeddings with the optional dependency `@huggingface/transformers` (ONNX models on
 * onnxruntime-node), e.g. `Xenova/bge-small-en-v1.5`. `model` is `transformers:<EMBEDDING_MODEL>`.
 *
 * Why a worker thread: onnxruntime-node spreads one inference over native threads, but its
 * binding's `run()` is synchronous, so the calling JS thread blocks for the whole batch (seconds
 * for long chunks) and every HTTP request would stall. The library is therefore imported and run
 * in a Worker; the main thread posts texts and receives transferred Float32Arrays.
 *
 * Offline first: models load from `EMBEDDING_MODEL_DIR/<model>/` (the Hugging Face repo layout:
 * config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx). Only with
 * EMBEDDING_ALLOW_DOWNLOAD=true are missing files downloaded, into that same directory (the
 * library's file cache uses the same `<dir>/<model>/<file>` layout), so the next start is offline.
 *
 * Pooling, first match wins: the `pooling` option; sentence-transformers' `1_Pooling/config.json`
 * in the model directory; `cls` for families whose model cards prescribe the [CLS] vector (BGE,
 * mxbai-embed, snowflake-arctic-embed); else `mean` (MiniLM, GTE, E5, nomic…). Vectors are
 * L2-normalised; texts beyond the tokenizer's `model_max_length` are truncated.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { EmbeddingError, type EmbeddingProvider, type QueryEmbedding } from './provider.js';

export type TransformersEmbeddingConfig = Pick<
  Config['embedding'],
  'model' | 'modelDir' | 'allowDownload' | 'batchSize'
>;

type Pooling = 'mean' | 'cls';

export interface TransformersEmbeddingOptions {
  /** Overrides the pooling chosen for the model (see the module comment). */
  pooling?: Pooling;
  /** The module to load; only tests change it (to check the "not installed" error). */
  moduleSpecifier?: string;
}

const PACKAGE = '@huggingface/transformers';
const CLOSED = 'embedding provider is closed';
const CLS_POOLED_MODELS = /(^|\/)(bge-|mxbai-embed|snowflake-arctic-embed)/i;

type FromWorker =
  | { type: 'ready'; dimensions: number }
  | { type: 'init-error'; kind: 'import' | 'not-found' | 'other'; message: string }
  | { type: 'result'; id: number; data: Float32Array; dims: number[] }
  | { type: 'error'; id: number; message: string };

/**
 * The worker, as CommonJS source for `new Worker(…, {eval: true})`: evaluated code runs the same
 * from `src/*.ts` under vitest and from `dist/*.js`, with no second entry file to build and locate.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { moduleUrl, model, modelDir, allowDownload, pooling } = workerData;
const text = (err) => (err instanceof Error ? err.message : String(err));
let extractor;
async function init() {
  let lib;
  try {
    lib = await import(moduleUrl);
  } catch (err) {
    return { type: 'init-error', kind: 'import', message: text(err) };
  }
  // Quiet: failures reach the operator through EmbeddingError. Downloads go to modelDir.
  const { env, LogLevel } = lib;
  Object.assign(env, { allowLocalModels: true, allowRemoteModels: allowDownload, logLevel: LogLevel.ERROR });
  if (modelDir !== null) Object.assign(env, { localModelPath: modelDir, cacheDir: modelDir });
  try {
    extractor = await lib.pipeline('feature-extraction', model);
    const probe = await extractor(['dimensions'], { pooling, normalize: true });
    return { type: 'ready', dimensions: probe.dims[1] };
  } catch (err) {
    const notFound = err && err.name === 'ModelFileNotFoundError';
    return { type: 'init-error', kind: notFound ? 'not-found' : 'other', message: text(err) };
  }
}
init().then((message) => parentPort.postMessage(message));
parentPort.on('message', async ({ id, texts }) => {
  try {
    const output = await extractor(texts, { pooling, normalize: true });
    const data = Float32Array.from(output.data);
    parentPort.postMessage({ type: 'result', id, data, dims: output.dims }, [data.buffer]);
  } catch (err) {
    parentPort.postMessage({ type: 'error', id, message: text(err) });
  }
});
`;

export class TransformersEmbeddingProvider implements EmbeddingProvider {
  readonly model: string;
  readonly #modelName: string;
  readonly #config: TransformersEmbeddingConfig;
  readonly #options: TransformersEmbeddingOptions;
  readonly #pending = new Map<
    number,
    { resolve: (vectors: Float32Array[]) => void; reject: (err: EmbeddingError) => void }
  >();
  #nextId = 0;
  #dimensions = 0;
  #worker: Worker | null = null;
  #started: Promise<Worker> | null = null;
  #closed = false;

  constructor(config: TransformersEmbeddingConfig, options: TransformersEmbeddingOptions = {}) {
    if (config.model === null) {
      throw new EmbeddingError(
        'EMBEDDING_MODEL is required when EMBEDDING_PROVIDER=transformers (e.g. Xenova/bge-small-en-v1.5)',
      );
    }
    this.#modelName = config.model;
    this.model = `transformers:${config.model}`;
    this.#config = config;
    this.#options = options;
  }

  get dimensions(): number {
    return this.#dimensions;
  }

  async ready(): Promise<void> {
    await this.#start();
  }

  async embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    signal?.throwIfAborted();
    if (texts.length === 0) return [];
    const worker = await abortable(this.#start(), signal);
    const vectors: Float32Array[] = [];
    const size = Math.max(1, this.#config.batchSize); // padding to the longest text bounds memory
    for (let start = 0; start < texts.length; start += size) {
      signal?.throwIfAborted();
      vectors.push(...(await this.#run(worker, texts.slice(start, start + size), signal)));
    }
    return vectors;
  }

  /** Subword models read any text: coverage 1. */
  async embedSearchQuery(text: string, signal?: AbortSignal): Promise<QueryEmbedding> {
    return { vector: await this.embedQuery(text, signal), coverage: 1 };
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const [vector] = await this.embedDocuments([text], signal);
    if (!vector) throw new EmbeddingError('the embedding model returned no vector');
    return vector;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    this.#started = null;
    this.#failAll(new EmbeddingError(CLOSED));
    await worker?.terminate();
  }

  #start(): Promise<Worker> {
    if (this.#closed) return Promise.reject(new EmbeddingError(CLOSED));
    this.#started ??= this.#spawn().catch((err: unknown) => {
      this.#started = null; // let a later call retry, e.g. after the operator added the model
      throw err;
    });
    return this.#started;
  }

  async #spawn(): Promise<Worker> {
    const moduleUrl = this.#resolveModule();
    const { modelDir, allowDownload } = this.#config;
    const model = this.#modelName;
    const pooling = this.#options.pooling ?? (await choosePooling(model, modelDir));
    if (this.#closed) throw new EmbeddingError(CLOSED);
    const workerData = { moduleUrl, model, modelDir, allowDownload, pooling };
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
    this.#worker = worker;
    return new Promise<Worker>((resolve, reject) => {
      const stop = (err: EmbeddingError): void => {
        reject(err); // a no-op once ready
        if (this.#worker !== worker) return; // closed, or already stopped
        this.#failAll(err);
        [this.#worker, this.#started] = [null, null];
      };
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'ready') {
          this.#dimensions = message.dimensions;
          worker.unref(); // an idle model must not keep the process alive; #run refs it
          resolve(worker);
        } else if (message.type === 'init-error') {
          stop(this.#initError(message.kind, message.message));
          void worker.terminate();
        } else {
          this.#settle(message);
        }
      });
      worker.on('error', (err) => {
        stop(new EmbeddingError(`embedding worker crashed: ${err.message}`, { cause: err }));
      });
      worker.on('exit', (code) => {
        stop(new EmbeddingError(this.#closed ? CLOSED : `embedding worker exited (code ${code})`));
      });
    });
  }

  #run(worker: Worker, texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (this.#worker !== worker) {
      return Promise.reject(new EmbeddingError('embedding worker stopped; retry the request'));
    }
    const id = this.#nextId++;
    const result = new Promise<Float32Array[]>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
    });
    worker.ref(); // unref'd again by #forget once nothing is pending
    worker.postMessage({ id, texts });
    // Native inference cannot be interrupted: on abort the batch finishes in the worker and its
    // result is dropped, but the caller is released at once.
    return abortable(result, signal).finally(() => {
      this.#forget(worker, id);
    });
  }

  #settle(message: Extract<FromWorker, { id: number }>): void {
    const pending = this.#pending.get(message.id);
    if (!pending) return; // aborted meanwhile
    const d = this.#dimensions;
    if (message.type === 'error') {
      pending.reject(new EmbeddingError(`embedding failed: ${message.message}`));
    } else if (message.dims[1] !== d || !message.data.every(Number.isFinite)) {
      // NaNs come from normalising a zero vector; stored, they would poison every search.
      const shape = `[${message.dims.join(', ')}]`;
      pending.reject(new EmbeddingError(`the model returned non-finite values or shape ${shape}`));
    } else {
      // slice, not subarray: each vector owns its buffer, so storing `vector.buffer` is safe.
      const count = message.data.length / d;
      pending.resolve(
        Array.from({ length: count }, (_, i) => message.data.slice(i * d, i * d + d)),
      );
    }
  }

  #forget(worker: Worker, id: number): void {
    this.#pending.delete(id);
    if (this.#pending.size === 0) worker.unref();
  }

  #failAll(err: EmbeddingError): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(err);
  }

  #resolveModule(): string {
    const specifier = this.#options.moduleSpecifier ?? PACKAGE;
    try {
      return import.meta.resolve(specifier);
    } catch (err) {
      throw new EmbeddingError(
        `EMBEDDING_PROVIDER=transformers needs the optional dependency ${specifier}, which is not installed: run \`npm install ${PACKAGE}\` or choose another EMBEDDING_PROVIDER`,
        { cause: err },
      );
    }
  }

  #initError(kind: 'import' | 'not-found' | 'other', detail: string): EmbeddingError {
    const { modelDir, allowDownload } = this.#config;
    const model = this.#modelName;
    if (kind === 'import') {
      return new EmbeddingError(`could not load ${PACKAGE} (or onnxruntime-node): ${detail}`);
    }
    if (kind === 'not-found' && !allowDownload) {
      const where = modelDir === null ? '' : ` in ${join(modelDir, model)}`;
      return new EmbeddingError(
        `embedding model "${model}" was not found${where} and downloading is disabled: set ` +
          `EMBEDDING_MODEL_DIR to a directory holding ${model}/ (config.json, tokenizer.json, ` +
          `onnx/model.onnx) or set EMBEDDING_ALLOW_DOWNLOAD=true (${detail})`,
      );
    }
    const hint = allowDownload ? ' (downloading needs huggingface.co and a valid model id)' : '';
    return new EmbeddingError(`could not load embedding model "${model}"${hint}: ${detail}`);
  }
}

/** See the module comment for the order of the rules. */
export async function choosePooling(model: string, modelDir: string | null): Promise<Pooling> {
  if (modelDir !== null) {
    try {
      const path = join(modelDir, model, '1_Pooling', 'config.json');
      const config = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
      if (config.pooling_mode_cls_token === true) return 'cls';
      if (config.pooling_mode_mean_tokens === true) return 'mean';
    } catch {
      // no sentence-transformers pooling file: fall back to the model family
    }
  }
  return CLS_POOLED_MODELS.test(model) ? 'cls' : 'mean';
}

/** Rejects when `signal` aborts, without waiting for `promise` (which keeps running). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason as Error); // an AbortError/TimeoutError DOMException by default
    };
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(resolve, reject).finally(() => {
      signal.removeEventListener('abort', onAbort);
    });
  });
}
