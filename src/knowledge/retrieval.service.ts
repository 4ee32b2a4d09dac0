/**
 * Retrieval: keyword (FTS5 BM25) and semantic (vector KNN) candidates within the scope filters,
 * fused (hybrid, the default) or alone; `minScore` applies before `topK`.
 *
 * Scores (documented in the OpenAPI description and the README):
 * - semantic: cosine similarity of query and chunk vectors, in [-1, 1];
 * - keyword: 0.1 + 0.9 × calibrated BM25 (s / (s + 16)), in [0.1, 1);
 * - hybrid: K + 0.9 × (1 − K*) × max(0, cosine), in [0, 1) (fusion.ts), where K is the passage's
 *   keyword evidence x / (1 + x), x = (BM25 / 16)^5 (0 without a query word), and K* the best K
 *   of the query: keyword-dominated when the query has a strong match (scores ≈ K, 0.5 at BM25 16),
 *   cosine-ranked when it has none (scores ≈ 0.9 × cosine). A score is never below K.
 * Without `minScore`, hits scoring ≤ 0 (no evidence) are dropped; with it, hits below it.
 */
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.js';
import type { EmbeddingProvider } from './embeddings/provider.js';
import { fuse, keywordScore } from './fusion.js';
import type { RetrievalHit, RetrieveBody } from './knowledge.schemas.js';
import { toHit } from './mappers.js';
import type { Candidate, ChunkStore, SearchFilter } from './search/chunk-store.js';

/** Candidates fetched from each index before fusion. */
const CANDIDATES = 100;

export interface RetrievalResult {
  query: string;
  topK: number;
  mode: RetrieveBody['mode'];
  items: RetrievalHit[];
}

/** How long hybrid retrieval waits for the query vector before answering from keywords. */
const HYBRID_EMBED_WAIT_MS = 3000;
/** After a failure, hybrid retrieval skips the embedder this long. */
const EMBED_COOL_DOWN_MS = 30_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`the embedding provider did not answer within ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

export class RetrievalService {
  private embedFailedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: ChunkStore,
    private readonly embedder: EmbeddingProvider,
    private readonly log: FastifyBaseLogger,
  ) {}

  async retrieve(body: RetrieveBody): Promise<RetrievalResult> {
    const query = body.query.trim();
    if (query === '') throw new AppError('KNOWLEDGE_QUERY_REQUIRED');
    const filter: SearchFilter = {
      ...(body.projectId === undefined ? {} : { projectId: body.projectId }),
      ...(body.documentId === undefined ? {} : { documentId: body.documentId }),
    };
    const limit = Math.max(CANDIDATES, body.topK * 4);
    // The query is embedded first, so that the store is then read without an await in between:
    // one consistent view even while a re-index commits.
    const vector = body.mode === 'keyword' ? null : await this.embedQuery(query, body.mode);
    const items = this.store.snapshot(() => this.rank(query, body, filter, limit, vector));
    return { query: body.query, topK: body.topK, mode: body.mode, items };
  }

  /** Ranking and loading the hits: synchronous, inside one read snapshot of the store. */
  private rank(
    query: string,
    body: RetrieveBody,
    filter: SearchFilter,
    limit: number,
    vector: Float32Array | null,
  ): RetrievalHit[] {
    let ranked: Candidate[];
    switch (body.mode) {
      case 'keyword':
        ranked = this.keyword(query, filter, limit);
        break;
      case 'semantic':
        ranked =
          vector === null
            ? []
            : this.store.vectorSearch(vector, this.embedder.model, filter, limit);
        break;
      case 'hybrid': {
        if (vector === null) {
          ranked = this.keyword(query, filter, limit);
          break;
        }
        const keyword = this.store.keywordSearch(query, filter, limit);
        const semantic = this.store.vectorSearch(vector, this.embedder.model, filter, limit);
        const cosine = this.store.similarities(
          vector,
          this.embedder.model,
          keyword.map((k) => k.chunkId),
        );
        for (const s of semantic) cosine.set(s.chunkId, s.score);
        ranked = fuse(keyword, semantic, cosine);
        break;
      }
    }
    // Without an explicit minScore only hits with no evidence at all (score ≤ 0) are dropped.
    const keep =
      body.minScore === undefined
        ? (c: Candidate) => c.score > 0
        : (c: Candidate) => c.score >= (body.minScore ?? 0);
    const top = ranked.filter(keep).slice(0, body.topK);
    const rows = new Map(this.store.hits(top.map((c) => c.chunkId)).map((r) => [r.id, r]));
    return top.flatMap((c) => {
      const row = rows.get(c.chunkId);
      return row === undefined ? [] : [toHit(row, c.score)];
    });
  }

  private keyword(query: string, filter: SearchFilter, limit: number): Candidate[] {
    return this.store
      .keywordSearch(query, filter, limit)
      .map((c) => ({ chunkId: c.chunkId, score: keywordScore(c.score) }));
  }

  /**
   * The query vector. When the embedding provider fails, hybrid retrieval degrades to keywords
   * (logged) instead of failing; semantic retrieval has nothing to fall back on and answers 502.
   */
  private async embedQuery(
    query: string,
    mode: RetrieveBody['mode'],
  ): Promise<Float32Array | null> {
    // Hybrid answers from keywords at once while the provider is known to be failing, and waits
    // at most HYBRID_EMBED_WAIT_MS for it otherwise (a cold model or a dead endpoint).
    if (mode === 'hybrid' && Date.now() - this.embedFailedAt < EMBED_COOL_DOWN_MS) return null;
    try {
      const work = this.embedder.ready().then(() => this.embedder.embedQuery(query));
      if (mode === 'semantic') return await work;
      return await withTimeout(work, HYBRID_EMBED_WAIT_MS);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (mode === 'semantic') {
        throw new AppError(
          'KNOWLEDGE_EMBEDDING_FAILED',
          `The query could not be embedded: ${message}`,
        );
      }
      this.embedFailedAt = Date.now();
      this.log.warn(
        { err: error },
        'query embedding failed; hybrid retrieval fell back to keywords',
      );
      return null;
    }
  }
}
