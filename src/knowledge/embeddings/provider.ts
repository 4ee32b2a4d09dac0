/** The embedding-provider interface every provider (static, openai, transformers) implements. */

export interface EmbeddingProvider {
  /** Stored with every chunk; retrieval compares only vectors of the active model. */
  readonly model: string;
  /**
   * Vector length. Remote providers may learn it from their first response: until then it is 0,
   * so call `ready()` first when you need it.
   */
  readonly dimensions: number;
  /** Loads whatever the provider needs (model files, caches) and learns `dimensions`. */
  ready(): Promise<void>;
  /** One unit-length vector per text, in order. Long texts are truncated by the provider. */
  embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** A unit-length vector for a search query. */
  embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array>;
  close(): Promise<void>;
}

/** Thrown when embedding fails for a reason the operator must fix (unreachable API, no model…). */
export class EmbeddingError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddingError';
  }
}
