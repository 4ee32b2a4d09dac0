/** The embedding-provider interface every provider (static, openai, transformers) implements. */

export interface EmbeddingProvider {
  /** Stored with every chunk; retrieval compares only vectors of the active model. */
  readonly model: string;
  /**
   * Vector length. Remote providers may learn it from their first response: until then it is 0,
   * so call `ready()` first when you need it.
   */
  readonly dimensions: number;
  /** Memory an in-process model took when it loaded; absent or null for the others. */
  readonly residentBytes?: number | null;
  /** Loads whatever the provider needs (model files, caches) and learns `dimensions`. */
  ready(): Promise<void>;
  /** One unit-length vector per text, in order. Long texts are truncated by the provider. */
  embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** A unit-length vector for a search query. */
  embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array>;
  /**
   * A search query's vector and how much of the query the model understood (`coverage`), which
   * hybrid retrieval weighs the cosine by (ranking.ts).
   */
  embedSearchQuery(text: string, signal?: AbortSignal): Promise<QueryEmbedding>;
  close(): Promise<void>;
}

/** A query's vector with the share of it the model understood. */
export interface QueryEmbedding {
  vector: Float32Array;
  /**
   * 0..1: the share of the query's words the model has vectors for, each weighted by how
   * informative it is (static model: its SIF weight; an unknown word, such as an identifier,
   * weighs 1). Subword models (openai, transformers) read any text: 1.
   */
  coverage: number;
}

/** Thrown when embedding fails for a reason the operator must fix (unreachable API, no model…). */
export class EmbeddingError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddingError';
  }
}
