/**
 * Retrieval: keyword (FTS5 BM25) and semantic (vector KNN) candidates within the scope filters,
 * fused (hybrid, the default) or alone; `minScore` applies before `topK`.
 *
 * Scores (documented in the OpenAPI description):
 * - semantic: cosine similarity of query and chunk vectors, in [-1, 1];
 * - keyword: calibrated BM25, s / (s + 16), in [0, 1);
 * - hybrid: 0.9 × calibrated BM25 + 0.1 × cosine for keyword matches, 0.1 × cosine for passages
 *   found by meaning only; in [0, 1).
 */
import { AppError } from '../errors.js';
import type { EmbeddingProvider } from './embeddings/provider.js';
import { calibrateBm25, DEFAULT_FUSION, fuse } from './fusion.js';
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

export class RetrievalService {
  constructor(
    private readonly store: ChunkStore,
    private readonly embedder: EmbeddingProvider,
  ) {}

  async retrieve(body: RetrieveBody): Promise<RetrievalResult> {
    const query = body.query.trim();
    if (query === '') throw new AppError('KNOWLEDGE_QUERY_REQUIRED');
    const filter: SearchFilter = {
      ...(body.projectId === undefined ? {} : { projectId: body.projectId }),
      ...(body.documentId === undefined ? {} : { documentId: body.documentId }),
    };
    const limit = Math.max(CANDIDATES, body.topK * 4);
    let ranked: Candidate[];
    switch (body.mode) {
      case 'keyword':
        ranked = this.store.keywordSearch(query, filter, limit).map((c) => ({
          chunkId: c.chunkId,
          score: calibrateBm25(c.score, DEFAULT_FUSION.bm25Half),
        }));
        break;
      case 'semantic':
        ranked = this.store.vectorSearch(
          await this.embedQuery(query),
          this.embedder.model,
          filter,
          limit,
        );
        break;
      case 'hybrid': {
        const keyword = this.store.keywordSearch(query, filter, limit);
        const vector = await this.embedQuery(query);
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
    const minScore = body.minScore ?? 0;
    const top = ranked.filter((c) => c.score >= minScore).slice(0, body.topK);
    const rows = new Map(this.store.hits(top.map((c) => c.chunkId)).map((r) => [r.id, r]));
    const items = top.flatMap((c) => {
      const row = rows.get(c.chunkId);
      return row === undefined ? [] : [toHit(row, c.score)];
    });
    return { query: body.query, topK: body.topK, mode: body.mode, items };
  }

  private async embedQuery(query: string): Promise<Float32Array> {
    await this.embedder.ready();
    return this.embedder.embedQuery(query);
  }
}
