/**
 * Where chunks, their vectors and their keyword index live, written together in one transaction.
 * SQLite: rows + FTS5 + sqlite-vec; PostgreSQL (later): rows + tsvector + pgvector.
 */
import type { ChunkRow, DocumentRow } from '../../db/schema.js';

export interface SearchFilter {
  projectId?: string;
  documentId?: string;
}

/** A ranked candidate: `score` is BM25 (higher is better) or cosine similarity. */
export interface Candidate {
  chunkId: string;
  score: number;
}

export interface NewChunk {
  id: string;
  chunkIndex: number;
  sectionPath: string;
  page: number | null;
  content: string;
  tokenEstimate: number;
  metadata: Record<string, unknown>;
  contentHash: string;
  vector: Float32Array;
}

export interface IndexCommit {
  documentId: string;
  /** The run's token: if the document no longer carries it (deleted, superseded), nothing is written. */
  indexToken: string;
  model: string;
  dimensions: number;
  chunks: NewChunk[];
  /** Applied to the document row in the same transaction. */
  document: Pick<DocumentRow, 'markdown_path' | 'converter_command' | 'converter_meta'>;
}

/** A chunk joined with its document, as retrieval returns it. */
export type ChunkHit = ChunkRow & {
  document_name: string;
  project_id: string | null;
  source: string;
};

export interface ChunkStore {
  /** Runs synchronous reads against one consistent snapshot (no commit lands in between). */
  snapshot<T>(read: () => T): T;
  /** Replaces the document's chunks and index rows and marks it indexed (version + 1), atomically. */
  commitIndex(commit: IndexCommit): 'committed' | 'discarded';
  /** Deletes the document row with its chunks and index rows, atomically. False if it did not exist. */
  deleteDocument(documentId: string): boolean;
  listChunks(documentId: string): ChunkRow[];
  keywordSearch(query: string, filter: SearchFilter, limit: number): Candidate[];
  vectorSearch(
    vector: Float32Array,
    model: string,
    filter: SearchFilter,
    limit: number,
  ): Candidate[];
  /** Cosine similarity of `vector` to each of the given chunks that has a vector of `model`. */
  similarities(vector: Float32Array, model: string, chunkIds: string[]): Map<string, number>;
  /**
   * Stored vectors of `model` for the given hashes of embedded text (the embedding cache: any
   * chunk of any document embedded from the same text with the same model).
   */
  cachedVectors(model: string, dimensions: number, hashes: string[]): Map<string, Float32Array>;
  /** Chunks with their document fields, for the given ids (any order). */
  hits(chunkIds: string[]): ChunkHit[];
}
