/**
 * What the server's parts report to the metrics, as plain callbacks: the parts below the wiring
 * (knowledge/, queue/) import this file's types only, never prom-client (metrics.ts implements
 * it). Each call is a few arithmetic operations; with metrics off the no-op observer is passed.
 */

/** The stages of an indexing run (index-pipeline.ts); `index` is the commit. */
export type IndexStage = 'convert' | 'chunk' | 'embed' | 'index';

/** A retrieval's mode. */
export type SearchMode = 'keyword' | 'semantic' | 'hybrid';

/** What the knowledge base reports. */
export interface KnowledgeObserver {
  /** An indexing stage finished after `seconds`. */
  indexStage(stage: IndexStage, seconds: number): void;
  /** One call of the embedder: a part of a document's chunks, or a search query. */
  embeddingBatch(kind: 'documents' | 'query', seconds: number): void;
  /** A retrieval answered after `seconds`. */
  search(mode: SearchMode, seconds: number): void;
}

/** What the job queue reports: a job of `lane` ran for `seconds` on this instance. */
export type JobObserver = (lane: string, outcome: 'completed' | 'failed', seconds: number) => void;

/** Reports nothing (metrics off). */
export const NO_OBSERVER: KnowledgeObserver = {
  indexStage: () => undefined,
  embeddingBatch: () => undefined,
  search: () => undefined,
};
