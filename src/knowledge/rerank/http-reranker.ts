/**
 * Reranking by a rerank API (RERANK_PROVIDER=http): `POST {RERANK_BASE_URL}/rerank`.
 *
 * Two dialects of one shape exist. Cohere, Jina and infinity take
 * `{model, query, documents, top_n, return_documents}` and answer
 * `{results: [{index, relevance_score}]}`; Hugging Face TEI takes `{query, texts, raw_scores,
 * truncate}` and answers a bare `[{index, score}]`. The request goes out in the first dialect;
 * when the server answers 400/422 naming the field `texts` (TEI: "missing field `texts`"), it is
 * sent once more in TEI's, and the provider speaks TEI from then on. Sending both fields at once
 * is no way out: servers that validate strictly (pydantic's `extra=forbid`) refuse an unknown field.
 *
 * Either answer is read: every passage must get exactly one score, a finite number in [0, 1]
 * (what these servers answer by default: a probability, not a raw logit). Anything else, a
 * non-2xx status or no answer within RERANK_TIMEOUT_MS is a RerankError, whose message carries
 * the status and the server's own short message, never the query or the passages.
 */
import { RerankError, type RerankProvider } from './provider.js';

export interface HttpRerankConfig {
  /** Base URL without a trailing slash (config.ts strips it). */
  baseUrl: string;
  model: string;
  apiKey: string | null;
  timeoutMs: number;
}

type Dialect = 'documents' | 'texts';

/** The longest server message quoted in an error. */
const MESSAGE_CHARS = 200;

export class HttpReranker implements RerankProvider {
  readonly model: string;
  readonly #config: HttpRerankConfig;
  #dialect: Dialect = 'documents';

  constructor(config: HttpRerankConfig) {
    this.model = `http:${config.model}`;
    this.#config = config;
  }

  /** Nothing to load: a dead server shows on the first rerank, which the retrieval survives. */
  async ready(): Promise<void> {}

  async rerank(
    query: string,
    passages: readonly string[],
    signal?: AbortSignal,
  ): Promise<number[]> {
    signal?.throwIfAborted();
    if (passages.length === 0) return [];
    const timeout = AbortSignal.timeout(this.#config.timeoutMs);
    const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
    try {
      let answer = await this.#post(this.#dialect, query, passages, combined);
      if (this.#dialect === 'documents' && wantsTexts(answer)) {
        answer = await this.#post('texts', query, passages, combined);
        if (answer.ok) this.#dialect = 'texts';
      }
      if (!answer.ok) {
        throw new RerankError(`the rerank server answered ${answer.status}${answer.message}`);
      }
      return readScores(answer.body, passages.length);
    } catch (err) {
      if (timeout.aborted && !(signal?.aborted ?? false)) {
        throw new RerankError(
          `the rerank server did not answer within ${this.#config.timeoutMs} ms`,
        );
      }
      if (err instanceof RerankError || (signal?.aborted ?? false)) throw err;
      const reason = err instanceof Error ? (causeOf(err) ?? err.message) : String(err);
      throw new RerankError(`the rerank server could not be reached: ${reason}`, { cause: err });
    }
  }

  async close(): Promise<void> {}

  async #post(
    dialect: Dialect,
    query: string,
    passages: readonly string[],
    signal: AbortSignal,
  ): Promise<{ ok: boolean; status: number; body: unknown; message: string }> {
    const { baseUrl, model, apiKey } = this.#config;
    const body =
      dialect === 'documents'
        ? { model, query, documents: passages, top_n: passages.length, return_documents: false }
        : { query, texts: passages, raw_scores: false, return_text: false, truncate: true };
    const response = await fetch(`${baseUrl}/rerank`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(apiKey === null ? {} : { authorization: `Bearer ${apiKey}` }),
      },
      body: JSON.stringify(body),
      signal,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      // not JSON: an error page, kept as text for the message
    }
    return {
      ok: response.ok,
      status: response.status,
      body: parsed,
      message: response.ok ? '' : serverMessage(parsed),
    };
  }
}

/** Whether a refusal names TEI's `texts` field (then the request is resent in TEI's dialect). */
function wantsTexts(answer: { ok: boolean; status: number; body: unknown }): boolean {
  if (answer.ok || (answer.status !== 400 && answer.status !== 422)) return false;
  const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  return /\btexts\b/.test(text);
}

/**
 * The server's short message, when it gives one as a string (`message`, `error`, `detail`):
 * validation errors that list the offending input (pydantic's `detail` array) are left out, so
 * that no query or passage reaches a log.
 */
function serverMessage(body: unknown): string {
  let message: unknown = null;
  if (typeof body === 'object' && body !== null) {
    const fields = body as Record<string, unknown>;
    message = fields.message ?? fields.error ?? fields.detail;
    if (typeof message === 'object' && message !== null) {
      message = (message as Record<string, unknown>).message;
    }
  }
  if (typeof message !== 'string' || message.trim() === '') return '';
  const line = message.replace(/\s+/g, ' ').trim();
  return `: ${line.length > MESSAGE_CHARS ? `${line.slice(0, MESSAGE_CHARS)}…` : line}`;
}

/** One score per passage from `{results: [{index, relevance_score}]}` or `[{index, score}]`. */
export function readScores(body: unknown, count: number): number[] {
  const items: unknown =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>).results
      : body;
  if (!Array.isArray(items)) {
    throw new RerankError(
      'the rerank server answered neither {results: [...]} nor an array of scores',
    );
  }
  const scores = new Array<number | undefined>(count).fill(undefined);
  for (const item of items as unknown[]) {
    const { index, relevance_score: relevance, score } = (item ?? {}) as Record<string, unknown>;
    const value = relevance ?? score;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) {
      throw new RerankError(`the rerank server answered a result without a valid index`);
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
      throw new RerankError(
        'the rerank server answered a score outside [0, 1] (a raw logit? its probabilities are needed)',
      );
    }
    if (scores[index] !== undefined) {
      throw new RerankError(`the rerank server scored passage ${index} twice`);
    }
    scores[index] = value;
  }
  const missing = scores.findIndex((s) => s === undefined);
  if (missing >= 0) {
    throw new RerankError(
      `the rerank server scored ${items.length} of ${count} passages (top_n too small?)`,
    );
  }
  return scores as number[];
}

/** Node's fetch hides the reason (ECONNREFUSED…) in `cause`. */
function causeOf(err: Error): string | undefined {
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  if (typeof cause?.code === 'string') return cause.code;
  return typeof cause?.message === 'string' ? cause.message : undefined;
}
