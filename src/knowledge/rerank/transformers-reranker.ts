/**
 * In-process reranking with a cross-encoder (RERANK_PROVIDER=transformers), on the optional
 * dependency `@huggingface/transformers`: AutoTokenizer and AutoModelForSequenceClassification
 * in a worker thread (worker.ts says why), the relevance of a pair the sigmoid of the model's
 * logit, in [0, 1] (the score the ms-marco cross-encoders were trained to give).
 *
 * Offline only: the model loads from `EMBEDDING_MODEL_DIR/<RERANK_MODEL>/` (config.json,
 * tokenizer.json, onnx/model.onnx, or the int8 onnx/model_quantized.onnx when there is no
 * model.onnx), never from the internet; a missing model is a RerankError naming the command that
 * installs it. Requests are scored one at a time, in arrival order: one whose caller gave up
 * (the retrieval's timeout) leaves the line before it reaches the model.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { spawnWorkerModule } from '../../worker-threads.js';
import { findModel } from '../embeddings/catalogue.js';
import { RerankError, sigmoid, type RerankProvider } from './provider.js';
import type { FromRerankWorker, RerankWorkerInit } from './worker.js';

export interface TransformersRerankConfig {
  /** RERANK_MODEL: a catalogue name (or its hub repository, an alias), or a folder name. */
  model: string;
  /** EMBEDDING_MODEL_DIR: the folder of model folders. */
  modelDir: string;
}

export interface TransformersRerankOptions {
  /** Pairs per inference (default RERANK_BATCH_SIZE). */
  batchSize?: number;
  /** The module to load; only tests change it. */
  moduleSpecifier?: string;
}

const PACKAGE = '@huggingface/transformers';
const CLOSED = 'the reranker is closed';
/**
 * Pairs per inference: one. The int8 model quantizes its activations per batch, so in a batch a
 * pair's logit moves (by up to 0.5 over 30 real chunks) with the other passages it is scored
 * with; alone, a passage's relevance depends on the query and the passage only, whatever the
 * candidates, topK or RERANK_CANDIDATES. It costs no time on 2 cores: 30 chunks of ~1,400
 * characters took the same CPU and wall time in batches of 1, 8, 16 or 30 (measured side by side,
 * ~2.2 s p50), and a pair alone needs no padding.
 */
export const RERANK_BATCH_SIZE = 1;
/** How long close() waits for the model to finish the batch (or the load) it is in. */
const STOP_WAIT_MS = 30_000;

interface Job {
  id: number;
  query: string;
  passages: string[];
  resolve: (logits: Float32Array) => void;
  reject: (err: Error) => void;
}

/** The model's folder and the ONNX file to load, or a RerankError saying how to install it. */
export function rerankModelFiles(config: TransformersRerankConfig): {
  folder: string;
  dtype: 'fp32' | 'q8';
  maxTokens: number | null;
} {
  const entry = findModel(config.model);
  const folder = entry?.name ?? config.model;
  const dir = join(config.modelDir, folder);
  const has = (file: string) => existsSync(join(dir, file));
  const dtype = has('onnx/model.onnx') ? 'fp32' : has('onnx/model_quantized.onnx') ? 'q8' : null;
  const missing = [
    ...['config.json', 'tokenizer.json'].filter((f) => !has(f)),
    ...(dtype === null ? ['onnx/model.onnx'] : []),
  ];
  if (missing.length > 0) {
    const how =
      entry === undefined
        ? `put the model's files there (config.json, tokenizer.json, onnx/model.onnx)`
        : `run \`npm run models:install -- ${folder}\` in a checkout, or \`aps models pull ${folder}\``;
    throw new RerankError(
      `the reranking model "${config.model}" is not installed: ${dir} lacks ${missing.join(', ')}; ${how} (or set RERANK_PROVIDER=none)`,
    );
  }
  return { folder, dtype: dtype ?? 'fp32', maxTokens: entry?.maxTokens ?? null };
}

export class TransformersReranker implements RerankProvider {
  readonly model: string;
  readonly #config: TransformersRerankConfig;
  readonly #options: TransformersRerankOptions;
  readonly #queue: Job[] = [];
  #running: Job | null = null;
  /** Whether the worker is in onnxruntime: loading the model, or scoring a request. */
  #busy = false;
  #nextId = 0;
  #worker: Worker | null = null;
  #started: Promise<Worker> | null = null;
  #closed = false;

  constructor(config: TransformersRerankConfig, options: TransformersRerankOptions = {}) {
    this.model = `transformers:${config.model}`;
    this.#config = config;
    this.#options = options;
  }

  async ready(): Promise<void> {
    await this.#start();
  }

  async rerank(
    query: string,
    passages: readonly string[],
    signal?: AbortSignal,
  ): Promise<number[]> {
    const logits = await this.logits(query, passages, signal);
    return Array.from(logits, sigmoid);
  }

  /** The model's raw logit of each pair (rerank's relevance is their sigmoid). */
  async logits(
    query: string,
    passages: readonly string[],
    signal?: AbortSignal,
  ): Promise<Float32Array> {
    signal?.throwIfAborted();
    if (passages.length === 0) return new Float32Array(0);
    const worker = await abortable(this.#start(), signal);
    const logits = await new Promise<Float32Array>((resolve, reject) => {
      const job: Job = { id: this.#nextId++, query, passages: [...passages], resolve, reject };
      const onAbort = (): void => {
        // Waiting: it leaves the line. Running: the model ends it after the current batch.
        const at = this.#queue.indexOf(job);
        if (at >= 0) this.#queue.splice(at, 1);
        if (this.#running === job) worker.postMessage({ type: 'cancel', id: job.id });
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      job.resolve = (value) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      job.reject = (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      this.#queue.push(job);
      this.#pump(worker);
    });
    if (logits.length !== passages.length || !logits.every(Number.isFinite)) {
      throw new RerankError('the reranking model returned non-finite or missing scores');
    }
    return logits;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    const busy = this.#busy;
    [this.#worker, this.#started] = [null, null];
    this.#failAll(new RerankError(CLOSED));
    if (worker === null) return;
    // Terminating the thread while onnxruntime loads or runs aborts the whole process (its
    // native callback throws into a torn-down environment): wait for the model to answer.
    if (busy) {
      worker.postMessage({ type: 'stop' });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STOP_WAIT_MS);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        worker.once('exit', done);
        worker.once('message', done); // any answer: the model is out of onnxruntime
      });
    }
    await worker.terminate();
  }

  #pump(worker: Worker): void {
    if (this.#running !== null || this.#worker !== worker) return;
    const job = this.#queue.shift();
    if (job === undefined) {
      worker.unref(); // an idle model must not keep the process alive
      return;
    }
    this.#running = job;
    this.#busy = true;
    worker.ref();
    worker.postMessage({ id: job.id, query: job.query, passages: job.passages });
  }

  #start(): Promise<Worker> {
    if (this.#closed) return Promise.reject(new RerankError(CLOSED));
    this.#started ??= this.#spawn().catch((err: unknown) => {
      this.#started = null; // a later call retries, e.g. after the operator installed the model
      throw err;
    });
    return this.#started;
  }

  async #spawn(): Promise<Worker> {
    const { folder, dtype, maxTokens } = rerankModelFiles(this.#config);
    const moduleUrl = this.#resolveModule();
    if (this.#closed) throw new RerankError(CLOSED);
    const { worker } = spawnWorkerModule(import.meta.url, 'worker');
    this.#worker = worker;
    const init: RerankWorkerInit = {
      type: 'init',
      moduleUrl,
      modelDir: this.#config.modelDir,
      model: folder,
      dtype,
      maxTokens,
      batchSize: this.#options.batchSize ?? RERANK_BATCH_SIZE,
    };
    worker.postMessage(init);
    this.#busy = true;
    return new Promise<Worker>((resolve, reject) => {
      const stop = (err: RerankError): void => {
        reject(err); // a no-op once ready
        if (this.#worker !== worker) return; // closed, or already stopped
        [this.#worker, this.#started] = [null, null];
        this.#failAll(err);
      };
      worker.on('message', (message: FromRerankWorker) => {
        this.#busy = false;
        if (message.type === 'ready') {
          worker.unref();
          if (this.#closed) reject(new RerankError(CLOSED));
          else resolve(worker);
        } else if (message.type === 'init-error') {
          const what = message.kind === 'import' ? `could not load ${PACKAGE}` : 'could not load';
          stop(new RerankError(`${what} the reranking model "${folder}": ${message.message}`));
          void worker.terminate();
        } else {
          const job = this.#running;
          this.#running = null;
          if (job?.id === message.id) {
            if (message.type === 'result') job.resolve(message.logits);
            else job.reject(new RerankError(`reranking failed: ${message.message}`));
          }
          this.#pump(worker);
        }
      });
      worker.on('error', (err) => {
        stop(new RerankError(`the reranking worker crashed: ${err.message}`, { cause: err }));
      });
      worker.on('exit', (code) => {
        stop(new RerankError(this.#closed ? CLOSED : `the reranking worker exited (code ${code})`));
      });
    });
  }

  #failAll(err: RerankError): void {
    const jobs = [...(this.#running === null ? [] : [this.#running]), ...this.#queue];
    this.#running = null;
    this.#queue.length = 0;
    for (const job of jobs) job.reject(err);
  }

  #resolveModule(): string {
    const specifier = this.#options.moduleSpecifier ?? PACKAGE;
    try {
      return import.meta.resolve(specifier);
    } catch (err) {
      throw new RerankError(
        `RERANK_PROVIDER=transformers needs the optional dependency ${specifier}, which is not installed: run \`npm install ${PACKAGE}\` or choose another RERANK_PROVIDER`,
        { cause: err },
      );
    }
  }
}

/** Rejects when `signal` aborts, without waiting for `promise` (which keeps running). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(resolve, reject).finally(() => {
      signal.removeEventListener('abort', onAbort);
    });
  });
}
