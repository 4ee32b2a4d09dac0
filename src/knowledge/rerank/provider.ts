/**
 * The reranking-provider interface (transformers, http): a second opinion on the best hits of a
 * retrieval. A cross-encoder reads the query and a passage together, so it judges relevance
 * better than the fused score, which compares them separately; it is too slow for the whole
 * collection, so retrieval asks it about the top RERANK_CANDIDATES hits only (retrieval.service.ts).
 * RERANK_PROVIDER=none: no provider at all (the factory answers null).
 */

export interface RerankProvider {
  /** What reranked a hit, for logs: `transformers:<RERANK_MODEL>` or `http:<RERANK_MODEL>`. */
  readonly model: string;
  /** Loads whatever the provider needs (the model in its worker); rejects with a RerankError. */
  ready(): Promise<void>;
  /**
   * The relevance of each passage to the query, in order: in [0, 1], higher is more relevant.
   * Rejects with a RerankError (or the signal's reason once it aborts).
   */
  rerank(query: string, passages: readonly string[], signal?: AbortSignal): Promise<number[]>;
  close(): Promise<void>;
}

/** Thrown when reranking fails; retrieval then answers in the fused order (never fails). */
export class RerankError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RerankError';
  }
}

/** The logistic function: a cross-encoder's logit → a relevance in [0, 1]. */
export function sigmoid(logit: number): number {
  return 1 / (1 + Math.exp(-logit));
}
