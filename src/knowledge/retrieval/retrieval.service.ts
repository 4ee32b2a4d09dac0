/**
 * A retrieval: the query embedded once (hybrid waits a bounded time, then answers from keywords),
 * the store's candidates within the scope ranked by ranking.ts (the scores of each mode are
 * defined there), optionally reranked by a cross-encoder (rerank/), then the hits (hits.ts) with
 * their highlights (highlights.ts).
 */
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../errors.js';
import type { KnowledgeObserver } from '../../metrics/observer.js';
import { parseFilter } from '../filter/filter.js';
import { fairTurn, mayStartNow } from '../../event-loop-turns.js';
import type { EmbeddingProvider, QueryEmbedding } from '../embeddings/provider.js';
import type { RerankProvider } from '../rerank/provider.js';
import { fusionFor, rankingFor, type FusionOptions } from './ranking.js';
import type { RetrievalHit, RetrieveBody } from './retrieval.schemas.js';
import { highlightRanges, queryLexemes } from './highlights.js';
import { toHit } from './hits.js';
import type { ChunkStore, RankedHit, SearchFilter } from '../search/chunk-store.js';

/** Candidates fetched from each index before fusion (hybrid: `hybridCandidates`, config). */
const CANDIDATES = 100;

interface RetrievalResult {
  query: string;
  topK: number;
  mode: RetrieveBody['mode'];
  /** Whether the reranker ordered and scored the items (false: the fused order and scores). */
  reranked: boolean;
  items: RetrievalHit[];
}

/** How long hybrid retrieval waits for the query vector before answering from keywords. */
const HYBRID_EMBED_WAIT_MS = 3000;
/** After a failure, hybrid retrieval skips the embedder this long. */
const EMBED_COOL_DOWN_MS = 30_000;
/** After a failure or a timeout, retrieval skips the reranker this long (the fused order). */
const RERANK_COOL_DOWN_MS = 30_000;
/** Hits the reranker reorders by default (RERANK_CANDIDATES). */
const RERANK_CANDIDATES = 30;
/** How long a rerank may take by default (RERANK_TIMEOUT_MS). */
const RERANK_TIMEOUT_MS = 10_000;

/**
 * `work(signal)`, or an error after `ms`. The signal then aborts, so a query given up on leaves
 * the provider's line instead of being embedded (or reranked) for nobody, ahead of queries still
 * waiting.
 */
function withTimeout<T>(
  work: (signal: AbortSignal) => Promise<T>,
  ms: number,
  provider = 'the embedding provider',
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`${provider} did not answer within ${ms} ms`);
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

export interface RetrievalOptions {
  /** SEARCH_HYBRID_CANDIDATES. */
  hybridCandidates?: number;
  /** The reranker (RERANK_PROVIDER); null or absent: none. */
  reranker?: RerankProvider | null;
  /** RERANK_CANDIDATES: hits fetched for the reranker (at least topK). */
  rerankCandidates?: number;
  /** RERANK_TIMEOUT_MS: a slower rerank is given up (the fused answer). */
  rerankTimeoutMs?: number;
  /**
   * Which model answers semantic searches while the embedding model is being switched
   * (embeddings/model-switch.ts); absent: always the embedder.
   */
  models?: { serving(): EmbeddingProvider };
  /** The visible documents of these projects (a key restricted to several searches only them). */
  documentsOf?: (projects: readonly string[]) => Promise<string[]>;
  /** Search latency by mode and query-embedding time, for the metrics; absent: not reported. */
  observer?: KnowledgeObserver;
}

export class RetrievalService {
  private embedFailedAt = Number.NEGATIVE_INFINITY;
  private rerankFailedAt = Number.NEGATIVE_INFINITY;
  private readonly reranker: RerankProvider | null;
  /** The fusion of each answering model's kind, with its cosine range (ranking.ts fusionFor). */
  private readonly fusions = new Map<string, FusionOptions>();

  constructor(
    private readonly store: ChunkStore,
    private readonly embedder: EmbeddingProvider,
    private readonly log: FastifyBaseLogger,
    private readonly options: RetrievalOptions = {},
  ) {
    this.reranker = options.reranker ?? null;
  }

  /** Loads the search indexes of the active model (start-up); the number of chunks they cover. */
  warm(): Promise<number> {
    return this.store.warm(this.serving().model);
  }

  /**
   * Answers a retrieval (and reports its latency by mode to the observer, when it answered).
   * `projects`: the projects the caller's key reaches (null: every one). A key restricted to them
   * searches only them: its one project, or the documents of its projects (with any `documentId`
   * given, those of them); a `projectId` outside them the guard refused (403).
   */
  async retrieve(
    body: RetrieveBody,
    projects: readonly string[] | null = null,
  ): Promise<RetrievalResult> {
    const observer = this.options.observer;
    if (observer === undefined) return this.answer(body, projects);
    const start = performance.now();
    const result = await this.answer(body, projects);
    observer.search(body.mode, (performance.now() - start) / 1000);
    return result;
  }

  private async answer(
    body: RetrieveBody,
    projects: readonly string[] | null,
  ): Promise<RetrievalResult> {
    const query = body.query.trim();
    if (query === '') throw new AppError('KNOWLEDGE_QUERY_REQUIRED');
    if (body.rerank === true && this.reranker === null) {
      throw new AppError('KNOWLEDGE_RERANK_UNAVAILABLE');
    }
    const filter = await this.scoped(searchFilter(body), projects);
    if (filter === null)
      return { query: body.query, topK: body.topK, mode: body.mode, reranked: false, items: [] };
    // Reranking (asked for, or by default when a reranker is configured; skipped while it is
    // cooling down after a failure) ranks a deeper list: RERANK_CANDIDATES of the best hits,
    // without minScore, which then applies to the reranker's relevance instead.
    const reranker =
      this.reranker !== null &&
      body.rerank !== false &&
      Date.now() - this.rerankFailedAt >= RERANK_COOL_DOWN_MS
        ? this.reranker
        : null;
    const rerank = reranker !== null;
    const ranking = rerank ? rerankPool(body, this.options.rerankCandidates) : body;
    // A keyword answer is its index's order cut to topK (keywordScore keeps the order), so no
    // deeper list is needed; fusion needs the deeper lists (SEARCH_HYBRID_CANDIDATES deep), and a
    // semantic search's recall (the exact re-scoring here, hnsw.ef_search on PostgreSQL) is
    // tuned to their depth.
    const depth =
      body.mode === 'hybrid' ? (this.options.hybridCandidates ?? CANDIDATES) : CANDIDATES;
    const limit = body.mode === 'keyword' ? ranking.topK : Math.max(depth, ranking.topK * 4);
    const embedder = this.serving();
    const embedding =
      body.mode === 'keyword' ? null : await this.embedQuery(embedder, query, body.mode);
    // The queries of one embedding batch search in arrival order, a few per event-loop turn: at
    // once while this turn has budget and nobody waits (an idle server adds no timer hop, ~1 ms),
    // else in a fair turn.
    if (!mayStartNow()) await fairTurn();
    let ranked = await this.store.search(
      {
        text: body.mode === 'semantic' ? null : query,
        // Hybrid without a query vector (the embedder failed) answers from keywords alone.
        vector: embedding?.vector ?? null,
        model: embedder.model,
        filter,
        limit,
      },
      rankingFor(ranking, embedding, this.fusionOf(embedder.model)),
    );
    let reranked = false;
    if (reranker !== null) {
      const byRelevance = await this.rerankHits(query, reranker, ranked, body);
      reranked = byRelevance !== null;
      ranked = byRelevance ?? cut(ranked, body);
    }
    // In every mode: a semantic hit shows whichever query words it holds.
    const lexemes = queryLexemes(query);
    return {
      query: body.query,
      topK: body.topK,
      mode: body.mode,
      reranked,
      items: ranked.map((r) => toHit(r.chunk, r.score, highlightRanges(r.chunk.content, lexemes))),
    };
  }

  /** The filter narrowed to `projects`; null when nothing the key reaches can match. */
  private async scoped(
    filter: SearchFilter,
    projects: readonly string[] | null,
  ): Promise<SearchFilter | null> {
    if (projects === null) return filter;
    if (filter.projectId !== undefined) return projects.includes(filter.projectId) ? filter : null;
    const [only] = projects;
    if (projects.length === 1 && only !== undefined) return { ...filter, projectId: only };
    const reachable = await (this.options.documentsOf?.(projects) ?? Promise.resolve([]));
    const asked = filter.documentIds;
    const reach = new Set(reachable);
    const ids = asked === undefined ? reachable : asked.filter((id) => reach.has(id));
    return ids.length === 0 ? null : { ...filter, documentIds: ids };
  }

  /**
   * The hits ordered by the reranker's relevance (ties: the fused order), each scored by it,
   * `minScore` applied to it, cut to topK. Null when the reranker fails or does not answer
   * within RERANK_TIMEOUT_MS: the caller answers in the fused order. A failure is logged once,
   * with its reason but never the query; the reranker is then skipped for RERANK_COOL_DOWN_MS.
   */
  private async rerankHits(
    query: string,
    reranker: RerankProvider,
    hits: RankedHit[],
    body: RetrieveBody,
  ): Promise<RankedHit[] | null> {
    if (hits.length === 0) return [];
    const passages = hits.map((h) => h.chunk.content);
    const started = performance.now();
    try {
      const relevance = await withTimeout(
        (signal) => reranker.ready().then(() => reranker.rerank(query, passages, signal)),
        this.options.rerankTimeoutMs ?? RERANK_TIMEOUT_MS,
        'the reranker',
      );
      this.log.debug(
        { candidates: hits.length, ms: Math.round(performance.now() - started) },
        'reranked',
      );
      const min = body.minScore;
      return hits
        .map((hit, fused) => ({ hit, fused, score: relevance[fused] ?? 0 }))
        .sort((a, b) => b.score - a.score || a.fused - b.fused)
        .filter((r) => min === undefined || r.score >= min)
        .slice(0, body.topK)
        .map((r) => ({ ...r.hit, score: r.score }));
    } catch (error) {
      // Requests in flight when the reranker broke fail together: the first one says so.
      const first = Date.now() - this.rerankFailedAt >= RERANK_COOL_DOWN_MS;
      this.rerankFailedAt = Date.now();
      if (!first) return null;
      const reason = error instanceof Error ? error.message : String(error);
      this.log.warn(
        { reranker: reranker.model, reason, coolDownMs: RERANK_COOL_DOWN_MS },
        'reranking failed; retrieval answers in the fused order',
      );
      return null;
    }
  }

  /** The provider whose vectors answer semantic searches now. */
  private serving(): EmbeddingProvider {
    return this.options.models?.serving() ?? this.embedder;
  }

  private fusionOf(model: string): FusionOptions {
    let fusion = this.fusions.get(model);
    if (fusion === undefined) this.fusions.set(model, (fusion = fusionFor(model)));
    return fusion;
  }

  /**
   * The query vector. When the embedding provider fails, hybrid retrieval degrades to keywords
   * (logged) instead of failing; semantic retrieval has nothing to fall back on and answers 502.
   */
  private async embedQuery(
    embedder: EmbeddingProvider,
    query: string,
    mode: RetrieveBody['mode'],
  ): Promise<QueryEmbedding | null> {
    // Hybrid answers from keywords at once while the provider is known to be failing, and waits
    // at most HYBRID_EMBED_WAIT_MS for it otherwise (a cold model or a dead endpoint).
    if (mode === 'hybrid' && Date.now() - this.embedFailedAt < EMBED_COOL_DOWN_MS) return null;
    try {
      const observer = this.options.observer;
      const work = async (signal?: AbortSignal) => {
        await embedder.ready();
        const start = performance.now();
        const embedding = await embedder.embedSearchQuery(query, signal);
        observer?.embeddingBatch('query', (performance.now() - start) / 1000);
        return embedding;
      };
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

/**
 * The ranking options of a retrieval to be reranked: max(topK, RERANK_CANDIDATES) hits, and no
 * minScore (it applies to the reranker's relevance), except one ≤ 0, which asks for the hits
 * without evidence too and so widens the pool as it would the answer.
 */
function rerankPool(body: RetrieveBody, candidates = RERANK_CANDIDATES): RetrieveBody {
  const { minScore, ...rest } = body;
  return {
    ...rest,
    topK: Math.max(body.topK, candidates),
    ...(minScore !== undefined && minScore <= 0 ? { minScore } : {}),
  };
}

/** The fused answer from a rerank pool: `minScore` on the fused score, cut to topK. */
function cut(hits: RankedHit[], body: RetrieveBody): RankedHit[] {
  const min = body.minScore;
  return hits.filter((h) => min === undefined || h.score >= min).slice(0, body.topK);
}
