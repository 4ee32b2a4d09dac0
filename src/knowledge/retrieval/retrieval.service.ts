/**
 * A retrieval: the query embedded once (hybrid waits a bounded time, then answers from keywords),
 * the store's candidates within the scope ranked by ranking.ts (the scores of each mode are
 * defined there), then the hits (hits.ts) with their highlights (highlights.ts).
 */
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../errors.js';
import { parseFilter } from '../filter/filter.js';
import { fairTurn, mayStartNow } from '../../event-loop-turns.js';
import type { EmbeddingProvider, QueryEmbedding } from '../embeddings/provider.js';
import { rankingFor } from './ranking.js';
import type { RetrievalHit, RetrieveBody } from './retrieval.schemas.js';
import { highlightRanges, queryLexemes } from './highlights.js';
import { toHit } from './hits.js';
import type { ChunkStore, SearchFilter } from '../search/chunk-store.js';

/** Candidates fetched from each index before fusion (hybrid: `hybridCandidates`, config). */
const CANDIDATES = 100;

interface RetrievalResult {
  query: string;
  topK: number;
  mode: RetrieveBody['mode'];
  items: RetrievalHit[];
}

/** How long hybrid retrieval waits for the query vector before answering from keywords. */
const HYBRID_EMBED_WAIT_MS = 3000;
/** After a failure, hybrid retrieval skips the embedder this long. */
const EMBED_COOL_DOWN_MS = 30_000;

/**
 * `work(signal)`, or an error after `ms`. The signal then aborts, so a query given up on leaves
 * the provider's line instead of being embedded for nobody, ahead of queries still waiting.
 */
function withTimeout<T>(work: (signal: AbortSignal) => Promise<T>, ms: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`the embedding provider did not answer within ${ms} ms`);
      reject(error);
      controller.abort(error);
    }, ms);
  });
  return Promise.race([work(controller.signal), timeout]).finally(() => {
    clearTimeout(timer);
  });
}

/** The scope of a retrieval: project, document id(s) and the parsed `filter` (400 if invalid). */
function searchFilter(body: RetrieveBody): SearchFilter {
  const { projectId, documentId } = body;
  return {
    ...(projectId === undefined ? {} : { projectId }),
    ...(documentId === undefined
      ? {}
      : { documentIds: typeof documentId === 'string' ? [documentId] : documentId }),
    ...(body.filter === undefined ? {} : { where: parseFilter(body.filter) }),
  };
}

export class RetrievalService {
  private embedFailedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: ChunkStore,
    private readonly embedder: EmbeddingProvider,
    private readonly log: FastifyBaseLogger,
    private readonly options: { hybridCandidates?: number } = {},
  ) {}

  /** Loads the search indexes of the active model (start-up); the number of chunks they cover. */
  warm(): Promise<number> {
    return this.store.warm(this.embedder.model);
  }

  async retrieve(body: RetrieveBody): Promise<RetrievalResult> {
    const query = body.query.trim();
    if (query === '') throw new AppError('KNOWLEDGE_QUERY_REQUIRED');
    const filter = searchFilter(body);
    // A keyword answer is its index's order cut to topK (keywordScore keeps the order), so no
    // deeper list is needed; fusion needs the deeper lists (SEARCH_HYBRID_CANDIDATES deep), and a
    // semantic search's recall (the exact re-scoring here, hnsw.ef_search on PostgreSQL) is
    // tuned to their depth.
    const depth =
      body.mode === 'hybrid' ? (this.options.hybridCandidates ?? CANDIDATES) : CANDIDATES;
    const limit = body.mode === 'keyword' ? body.topK : Math.max(depth, body.topK * 4);
    const embedding = body.mode === 'keyword' ? null : await this.embedQuery(query, body.mode);
    // The queries of one embedding batch search in arrival order, a few per event-loop turn: at
    // once while this turn has budget and nobody waits (an idle server adds no timer hop, ~1 ms),
    // else in a fair turn.
    if (!mayStartNow()) await fairTurn();
    const ranked = await this.store.search(
      {
        text: body.mode === 'semantic' ? null : query,
        // Hybrid without a query vector (the embedder failed) answers from keywords alone.
        vector: embedding?.vector ?? null,
        model: this.embedder.model,
        filter,
        limit,
      },
      rankingFor(body, embedding),
    );
    // In every mode: a semantic hit shows whichever query words it holds.
    const lexemes = queryLexemes(query);
    return {
      query: body.query,
      topK: body.topK,
      mode: body.mode,
      items: ranked.map((r) => toHit(r.chunk, r.score, highlightRanges(r.chunk.content, lexemes))),
    };
  }

  /**
   * The query vector. When the embedding provider fails, hybrid retrieval degrades to keywords
   * (logged) instead of failing; semantic retrieval has nothing to fall back on and answers 502.
   */
  private async embedQuery(
    query: string,
    mode: RetrieveBody['mode'],
  ): Promise<QueryEmbedding | null> {
    // Hybrid answers from keywords at once while the provider is known to be failing, and waits
    // at most HYBRID_EMBED_WAIT_MS for it otherwise (a cold model or a dead endpoint).
    if (mode === 'hybrid' && Date.now() - this.embedFailedAt < EMBED_COOL_DOWN_MS) return null;
    try {
      const work = (signal?: AbortSignal) =>
        this.embedder.ready().then(() => this.embedder.embedSearchQuery(query, signal));
      if (mode === 'semantic') return await work();
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
