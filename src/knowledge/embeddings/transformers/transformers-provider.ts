/**
 * In-process embeddings with the optional dependency `@huggingface/transformers` (ONNX models on
 * onnxruntime-node), e.g. `bge-small-en-v1.5`. `model` is `transformers:<EMBEDDING_MODEL>`, with
 * `@q8` when the int8 model runs (EMBEDDING_QUANTIZED: its vectors differ a little, so documents
 * embedded by the other are re-indexed).
 *
 * One worker thread holds the model (worker.ts: onnxruntime's run blocks its thread, and every
 * HTTP request would stall behind it): one copy of the model per process. Texts wait here and
 * go to the worker a batch at a time (batches.ts): queries first, documents longest first, so a
 * batch wastes little on padding and a query waits for at most one batch.
 *
 * Offline first: models load from `EMBEDDING_MODEL_DIR/<model>/` (the layout of a Hugging Face
 * repository: config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx and
 * onnx/model_quantized.onnx), or from the folder of its short name when EMBEDDING_MODEL names a
 * catalogue model by its hub repository (catalogue.ts). Only with EMBEDDING_ALLOW_DOWNLOAD=true
 * are missing files downloaded, into that same directory.
 *
 * What the model card prescribes comes from the catalogue: the pooling, the query and passage
 * prefixes (bge's instruction, e5's `query: ` / `passage: `), the token limit. A model it does not
 * know: the pooling of sentence-transformers' `1_Pooling/config.json`, else `cls` for families
 * whose cards prescribe the [CLS] vector (BGE, mxbai-embed, snowflake-arctic-embed), else `mean`;
 * no prefixes; the tokenizer's `model_max_length`.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { Config } from '../../../config.js';
import { spawnWorkerModule } from '../../../worker-threads.js';
import { findEmbeddingModel, type EmbeddingModelEntry, type Pooling } from '../catalogue.js';
import { EmbeddingError, type EmbeddingProvider, type QueryEmbedding } from '../provider.js';
import { nextBatch, type Waiting } from './batches.js';
import type { FromWorker, WorkerInit } from './worker.js';

export type TransformersEmbeddingConfig = Pick<
  Config['embedding'],
  'model' | 'modelDir' | 'allowDownload' | 'batchSize'
> & { quantized?: boolean };

export interface TransformersEmbeddingOptions {
  /** Overrides the pooling chosen for the model (see the module comment). */
  pooling?: Pooling;
  /** The module to load; only tests change it (to check the "not installed" error). */
  moduleSpecifier?: string;
}

const PACKAGE = '@huggingface/transformers';
const CLOSED = 'embedding provider is closed';
const CLS_POOLED_MODELS = /(^|\/)(bge-|mxbai-embed|snowflake-arctic-embed)/i;
/**
 * Padded characters per batch: about 2,000 tokens, a few hundred milliseconds of a small model on
 * two cores, which is what a query may wait behind (docs/performance.md, "Embedding models").
 */
const BATCH_PADDED_CHARS = 8192;

/** A text waiting for the worker, and where its vector goes. */
interface Pending extends Waiting {
  text: string;
  job: Job;
  slot: number;
}

/** One call's texts: its vectors arrive batch by batch. */
interface Job {
  vectors: Float32Array[];
  left: number;
  resolve: (vectors: Float32Array[]) => void;
  reject: (err: Error) => void;
  settled: boolean;
}

export class TransformersEmbeddingProvider implements EmbeddingProvider {
  readonly model: string;
  readonly #modelName: string;
  readonly #entry: EmbeddingModelEntry | undefined;
  readonly #config: TransformersEmbeddingConfig;
  readonly #options: TransformersEmbeddingOptions;
  #waiting: Pending[] = [];
  /** The batch the worker is computing (one at a time). */
  #running: { id: number; batch: Pending[] } | null = null;
  #nextId = 0;
  /** Called once the running batch is done (close() waits for it). */
  #idle: (() => void) | null = null;
  #dimensions = 0;
  #residentBytes: number | null = null;
  #worker: Worker | null = null;
  #started: Promise<Worker> | null = null;
  #closed = false;

  constructor(config: TransformersEmbeddingConfig, options: TransformersEmbeddingOptions = {}) {
    if (config.model === null) {
      throw new EmbeddingError(
        'EMBEDDING_MODEL is required when EMBEDDING_PROVIDER=transformers (e.g. bge-small-en-v1.5)',
      );
    }
    this.#modelName = config.model;
    this.#entry = findEmbeddingModel(config.model);
    this.model = `transformers:${config.model}${config.quantized === true ? '@q8' : ''}`;
    this.#config = config;
    this.#options = options;
  }

  get dimensions(): number {
    return this.#dimensions;
  }

  /** Memory the model took when it loaded (the process's resident size grew by it); null before. */
  get residentBytes(): number | null {
    return this.#residentBytes;
  }

  async ready(): Promise<void> {
    await this.#start();
  }

  async embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const prefix = this.#entry?.passagePrefix ?? '';
    return this.#embed(
      texts.map((t) => prefix + t),
      false,
      signal,
    );
  }

  /** Subword models read any text: coverage 1. */
  async embedSearchQuery(text: string, signal?: AbortSignal): Promise<QueryEmbedding> {
    return { vector: await this.embedQuery(text, signal), coverage: 1 };
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const [vector] = await this.#embed([(this.#entry?.queryPrefix ?? '') + text], true, signal);
    if (!vector) throw new EmbeddingError('the embedding model returned no vector');
    return vector;
  }

  /**
   * Stops the worker. A model that is loading or a batch being computed is let finish first:
   * terminating the thread while onnxruntime runs in it aborts the whole process.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const started = this.#started;
    const running = this.#running === null ? null : new Promise<void>((r) => (this.#idle = r));
    await Promise.all([started?.catch(() => undefined), running]);
    const worker = this.#worker;
    this.#worker = null;
    this.#started = null;
    this.#failAll(new EmbeddingError(CLOSED));
    await worker?.terminate();
  }

  async #embed(texts: string[], query: boolean, signal?: AbortSignal): Promise<Float32Array[]> {
    signal?.throwIfAborted();
    if (texts.length === 0) return [];
    await abortable(this.#start(), signal);
    return new Promise<Float32Array[]>((resolve, reject) => {
      const job: Job = { vectors: [], left: texts.length, resolve, reject, settled: false };
      const onAbort = (): void => {
        // Its texts not yet sent leave the line; a batch being computed finishes, unread.
        this.#waiting = this.#waiting.filter((p) => p.job !== job);
        this.#settle(job, signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      job.resolve = (vectors) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(vectors);
      };
      job.reject = (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      texts.forEach((text, slot) => {
        this.#waiting.push({ text, job, slot, query, length: text.length });
      });
      this.#pump();
    });
  }

  /** Sends the next batch when the worker is free. */
  #pump(): void {
    const worker = this.#worker;
    if (worker === null || this.#closed || this.#running !== null || this.#waiting.length === 0)
      return;
    const chosen = nextBatch(this.#waiting, {
      maxTexts: Math.max(1, this.#config.batchSize),
      maxPadded: BATCH_PADDED_CHARS,
    });
    const taken = new Set(chosen);
    const batch = chosen.map((i) => this.#waiting[i] as Pending);
    this.#waiting = this.#waiting.filter((_, i) => !taken.has(i));
    const id = this.#nextId++;
    this.#running = { id, batch };
    worker.ref(); // unref'd again once nothing runs
    worker.postMessage({ id, texts: batch.map((p) => p.text) });
  }

  #onResult(message: Extract<FromWorker, { id: number }>): void {
    const running = this.#running;
    if (running?.id !== message.id) return;
    this.#running = null;
    this.#idle?.();
    const d = this.#dimensions;
    if (message.type === 'error') {
      const err = new EmbeddingError(`embedding failed: ${message.message}`);
      for (const p of running.batch) this.#settle(p.job, err);
    } else if (message.data.length !== d * running.batch.length || !message.data.every(isFinite)) {
      // NaNs come from normalising a zero vector; stored, they would poison every search.
      const err = new EmbeddingError('the model returned non-finite values or a wrong shape');
      for (const p of running.batch) this.#settle(p.job, err);
    } else {
      running.batch.forEach((p, i) => {
        if (p.job.settled) return;
        // slice, not subarray: each vector owns its buffer, so storing `vector.buffer` is safe.
        p.job.vectors[p.slot] = message.data.slice(i * d, i * d + d);
        if (--p.job.left === 0) this.#settle(p.job);
      });
    }
    if (this.#waiting.length === 0) this.#worker?.unref();
    this.#pump();
  }

  /** Ends a job: with its vectors, or with `err` (its other texts leave the line). */
  #settle(job: Job, err?: Error): void {
    if (job.settled) return;
    job.settled = true;
    if (err === undefined) {
      job.resolve(job.vectors);
      return;
    }
    this.#waiting = this.#waiting.filter((p) => p.job !== job);
    job.reject(err);
  }

  #start(): Promise<Worker> {
    if (this.#closed) return Promise.reject(new EmbeddingError(CLOSED));
    this.#started ??= this.#spawn().catch((err: unknown) => {
      this.#started = null; // let a later call retry, e.g. after the operator added the model
      throw err;
    });
    return this.#started;
  }

  /** The folder of the model under modelDir: as configured, else the catalogue's short name. */
  #folder(): string {
    const { modelDir } = this.#config;
    const name = this.#modelName;
    const short = this.#entry?.name;
    if (
      short !== undefined &&
      !existsSync(join(modelDir, name)) &&
      existsSync(join(modelDir, short))
    )
      return short;
    return name;
  }

  async #spawn(): Promise<Worker> {
    const moduleUrl = this.#resolveModule();
    const { modelDir, allowDownload } = this.#config;
    const model = this.#folder();
    const pooling =
      this.#options.pooling ?? this.#entry?.pooling ?? (await choosePooling(model, modelDir));
    if (this.#closed) throw new EmbeddingError(CLOSED);
    let worker: Worker;
    try {
      worker = spawnWorkerModule(import.meta.url, 'worker').worker;
    } catch (cause) {
      throw new EmbeddingError(`embedding worker: ${(cause as Error).message}`, { cause });
    }
    this.#worker = worker;
    const init: WorkerInit = {
      type: 'init',
      moduleUrl,
      modelDir,
      model,
      allowDownload,
      quantized: this.#config.quantized === true,
      pooling,
      maxTokens: this.#entry?.maxTokens ?? null,
    };
    worker.postMessage(init);
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
          this.#residentBytes = message.residentBytes;
          worker.unref(); // an idle model must not keep the process alive; #pump refs it
          resolve(worker);
          this.#pump();
        } else if (message.type === 'init-error') {
          stop(this.#initError(message.kind, message.message, model));
          void worker.terminate();
        } else {
          this.#onResult(message);
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

  #failAll(err: EmbeddingError): void {
    const jobs = new Set([
      ...this.#waiting.map((p) => p.job),
      ...(this.#running?.batch ?? []).map((p) => p.job),
    ]);
    this.#waiting = [];
    this.#running = null;
    this.#idle?.();
    for (const job of jobs) this.#settle(job, err);
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

  #initError(
    kind: 'import' | 'not-found' | 'other',
    detail: string,
    model: string,
  ): EmbeddingError {
    const { modelDir, allowDownload } = this.#config;
    if (kind === 'import') {
      return new EmbeddingError(`could not load ${PACKAGE} (or onnxruntime-node): ${detail}`);
    }
    if (kind === 'not-found' && !allowDownload) {
      const install =
        this.#entry === undefined
          ? ''
          : ` (\`aps models pull ${this.#entry.name}\`, or \`npm run models:install -- ${this.#entry.name}\` in the repository)`;
      return new EmbeddingError(
        `embedding model "${this.#modelName}" was not found in ${join(modelDir, model)} and ` +
          `downloading is disabled: set EMBEDDING_MODEL_DIR to a directory holding ${model}/ ` +
          `(config.json, tokenizer.json, onnx/model.onnx)${install} or set ` +
          `EMBEDDING_ALLOW_DOWNLOAD=true (${detail})`,
      );
    }
    const hint = allowDownload ? ' (downloading needs huggingface.co and a valid model id)' : '';
    return new EmbeddingError(
      `could not load embedding model "${this.#modelName}"${hint}: ${detail}`,
    );
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
