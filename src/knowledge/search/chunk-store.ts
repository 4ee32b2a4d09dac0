/**
 * Where chunks, their vectors and their keyword index live, written together and made current in
 * one step: the interface both engines implement (ChunkStore), and what they share: the search
 * request, the Ranking a store calls inside its read snapshot (retrieval/ranking.ts makes it), and
 * the hits in rank order (`inRankOrder`). SQLite (sqlite/): chunk rows, an FTS5 table and vector
 * tables, searched through in-process copies. PostgreSQL (postgres/): chunk rows, a tsvector
 * table with BM25 statistics, and pgvector tables with HNSW indexes.
 */
import { createHash } from 'node:crypto';
import type { ChunkRow, DocumentRow, KnowledgeDocumentsTable } from '../../db/schema.js';
import type { FilterNode } from '../filter/filter.js';

/**
 * SQL condition (documents aliased `d`) of the documents whose chunks are searched: indexed ones,
 * and indexed ones being re-indexed. Both stores use it.
 */
export const SEARCHABLE = `d.status in ('indexed', 'indexing')`;

/** The scope of a search: every condition given applies. */
export interface SearchFilter {
  projectId?: string;
  /** Only chunks of this document. */
  documentId?: string;
  /** Only chunks of these documents. */
  documentIds?: readonly string[];
  /** Only chunks of documents this filter matches (filter/filter.ts). */
  where?: FilterNode;
}

/**
 * The scope as the in-process copies apply it: `documents`, when set, the documents a filter
 * (or `documentIds`) left, resolved in the search's snapshot.
 */
export interface IndexScope {
  projectId?: string;
  documents?: ReadonlySet<string>;
}

/** A ranked candidate: `score` is BM25 (higher is better) or cosine similarity. */
export interface Candidate {
  chunkId: string;
  score: number;
}

/** A candidate found by an in-process index, which knows the chunk's document. */
export interface DocumentCandidate extends Candidate {
  documentId: string;
}

export interface NewChunk {
  id: string;
  chunkIndex: number;
  sectionPath: string;
  page: number | null;
  /** Last page the chunk's text is on (null: unpaged); default: `page`. */
  pageEnd?: number | null;
  content: string;
  tokenEstimate: number;
  metadata: Record<string, unknown>;
  contentHash: string;
  vector: Float32Array;
}

/**
 * Vectors of another model for a commit's chunks (a model switch: the model the documents were
 * embedded with keeps answering until the new one covers every chunk).
 */
export interface OtherModelVectors {
  model: string;
  dimensions: number;
  /** One per chunk of the commit, in its order. */
  vectors: Float32Array[];
}

export interface IndexCommit {
  documentId: string;
  /** The run's token: if the document no longer carries it (deleted, superseded), nothing is written. */
  indexToken: string;
  model: string;
  dimensions: number;
  chunks: NewChunk[];
  /**
   * Vectors of other models for the same chunks, written to each model's vector table in the
   * same transaction(s) as the chunks; the chunk rows keep `embedding_model = model`.
   */
  alsoVectors?: OtherModelVectors[];
  /** Applied to the document row in the same transaction. */
  document: Pick<DocumentRow, 'markdown_path' | 'converter_command' | 'converter_meta'>;
}

/**
 * Throws (before anything is written) unless each of `commit.alsoVectors` is of another (model,
 * dimensions) than the commit's and the others', and holds one vector of its dimensions per chunk.
 */
export function checkAlsoVectors(commit: IndexCommit): void {
  const seen = new Set([`${commit.model}\u0000${commit.dimensions}`]);
  for (const also of commit.alsoVectors ?? []) {
    const key = `${also.model}\u0000${also.dimensions}`;
    if (seen.has(key)) {
      throw new Error(`alsoVectors repeats the vectors of ${also.model} (${also.dimensions})`);
    }
    seen.add(key);
    if (also.vectors.length !== commit.chunks.length) {
      throw new Error(
        `alsoVectors of ${also.model}: ${also.vectors.length} vectors for ${commit.chunks.length} chunks`,
      );
    }
    if (also.vectors.some((v) => v.length !== also.dimensions)) {
      throw new Error(
        `alsoVectors of ${also.model}: a vector is not of ${also.dimensions} dimensions`,
      );
    }
  }
}

/** How far each model's vectors cover the chunks searches can return (a model switch). */
export interface VectorCoverage {
  /** The current chunks of searchable documents. */
  chunks: number;
  /** Per model id (every model with a vector table), how many of those chunks have its vector. */
  byModel: Map<string, number>;
}

/**
 * What a committed run writes to its document row, in the transaction that swaps its chunks:
 * `indexing → indexed` (see documents.repository.ts), and `version` grows by one. One column list
 * for both stores.
 */
export function indexedDocument(
  commit: IndexCommit,
  now: string,
): [column: keyof KnowledgeDocumentsTable, value: string | null][] {
  return [
    ['status', 'indexed'],
    ['markdown_path', commit.document.markdown_path],
    ['converter_command', commit.document.converter_command],
    ['converter_meta', commit.document.converter_meta],
    ['error_message', null],
    ['embedding_model', commit.model],
    ['index_token', null],
    ['updated_at', now],
  ];
}

/** The update of indexedDocument, with the dialect's parameter placeholder for the n-th value. */
export function markIndexedSql(
  commit: IndexCommit,
  now: string,
  placeholder: (n: number) => string,
): { sql: string; params: (string | null)[] } {
  const columns = indexedDocument(commit, now);
  const sets = columns.map(([column], i) => `${column} = ${placeholder(i + 1)}`).join(', ');
  return {
    sql: `update knowledge_documents set version = version + 1, ${sets}
      where id = ${placeholder(columns.length + 1)}`,
    params: [...columns.map(([, value]) => value), commit.documentId],
  };
}

/**
 * The name of the vector table of a (model, dimensions), the same on both engines; tables are
 * listed in `knowledge_vector_tables`.
 */
export function vectorTableName(model: string, dimensions: number): string {
  const key = `${model}\u0000${dimensions}`;
  return `knowledge_vec_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

/** A chunk joined with its document, as retrieval returns it. */
export type ChunkHit = ChunkRow & {
  document_name: string;
  project_id: string | null;
  source: string;
  /** The document's metadata, JSON text. */
  document_metadata: string;
};

/** What one retrieval asks of the store. */
export interface SearchRequest {
  /** The query text for keyword search; null skips it. */
  text: string | null;
  /** The query vector of `model` for vector search; null skips it. */
  vector: Float32Array | null;
  model: string;
  filter: SearchFilter;
  /**
   * Candidates fetched from each index. A hybrid search (text and vector) also scores the `limit`
   * nearest chunks by their keywords: those that hold a query word join the keyword candidates
   * with their BM25, so a chunk close in meaning that matches below the keyword depth is fused
   * with both.
   */
  limit: number;
}

/** How many nearest chunks a search's vector side returns: `fusedTop` when it is fused, else `limit`. */
export function vectorDepth(request: SearchRequest, ranking: Ranking): number {
  return request.text === null ? request.limit : (ranking.fusedTop ?? request.limit);
}

/** The raw evidence a ranking works from. */
export interface Evidence {
  /** Keyword matches, `score` = BM25 (higher is better). */
  keyword: Candidate[];
  /** Nearest chunks by vector, `score` = cosine similarity. */
  semantic: Candidate[];
  /**
   * Cosine similarity of the keyword candidates that have a vector of the model (a semantic
   * candidate's is its score; the ranking merges the two).
   */
  cosine: Map<string, number>;
  /**
   * The largest BM25 any chunk could score for this query (bm25.ts maxBm25 over the idfs of its
   * words in the whole index; 0 without query text): what keyword evidence is measured against.
   */
  keywordMax: number;
}

/**
 * How a search's candidates become its answer (retrieval/ranking.ts makes it). A store calls it
 * inside its read snapshot, since it reads the answer's rows in that snapshot too.
 */
export interface Ranking {
  /**
   * Set when keyword and vector candidates are fused (hybrid): the answer's length. The vector
   * side then returns that many nearest chunks, not `limit`: fusion scores a chunk without a
   * keyword match by its cosine alone, so none farther away can enter an answer of that length.
   */
  readonly fusedTop?: number;
  /**
   * With `fusedTop`: a passage's fused score from its BM25 (0 without a keyword match) and its
   * cosine, given the query's keyword candidates and keywordMax; non-decreasing in both, so
   * bounds of a cosine bound the score. The SQLite store then reads the exact cosine only of the
   * candidates that could still enter the answer (sqlite/fused-cosines.ts); without it, it reads
   * them all. PostgreSQL computes them all in its query.
   */
  fusedScorer?(
    keyword: readonly Candidate[],
    keywordMax: number,
  ): (bm25: number, cosine: number) => number;
  /** The answer: every candidate scored, ordered, `minScore` applied, cut to `topK`. Pure. */
  rank(evidence: Evidence): Candidate[];
}

/** Where a store tells of its background work (pino's signature: a pino logger fits). */
export interface StoreLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface RankedHit {
  score: number;
  chunk: ChunkHit;
}

export interface ChunkStore {
  /**
   * Gathers the candidates, has `ranking` rank them and loads the ranked chunks, all from one
   * consistent snapshot (no re-index commit lands in between). Chunks deleted meanwhile are left
   * out. The ranking is called inside the store because the rows are read in that one snapshot,
   * and better-sqlite3 transactions are synchronous.
   */
  search(request: SearchRequest, ranking: Ranking): Promise<RankedHit[]>;
  /**
   * Loads what searches of `model` need into memory ahead of the first query (start-up), and
   * returns how many chunks that covered. Stores that search in the database do nothing.
   */
  warm(model: string): Promise<number>;
  /** Stops the store's background work (SQLite: saving snapshots of the in-process copies). */
  close?(): Promise<void>;
  /**
   * Replaces the document's chunks and index rows and marks it indexed (version + 1): searches
   * see the old chunks until the new ones replace them in one step.
   */
  commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'>;
  /** hideDocument then purgeDocument. False if it did not exist. */
  deleteDocument(documentId: string): Promise<boolean>;
  /**
   * Hides the document in one short statement: every read (list, get, search) stops seeing it
   * at once, and its run finds its token gone. False if there is no such (visible) document.
   */
  hideDocument(documentId: string): Promise<boolean>;
  /**
   * Deletes a hidden document's chunks and index rows in slices (the event loop is free in
   * between), then its row. `stop` ends it early (shutdown): the next start finishes it.
   */
  purgeDocument(documentId: string, stop?: () => boolean): Promise<void>;
  /**
   * After a restart (not in read-only mode): purges rows a crash left (a run's staged chunks, a
   * replaced version's) and returns the hidden documents whose purge did not finish. PostgreSQL:
   * also starts the graph builds a stop cut short, in the background.
   */
  purgeLeftovers(stop?: () => boolean): Promise<string[]>;
  listChunks(documentId: string): Promise<ChunkRow[]>;
  /** Current chunks per project id (null: documents without a project); hidden ones left out. */
  chunkCountsByProject(): Promise<Map<string | null, number>>;
  /**
   * Stored vectors of `model` for the given hashes of embedded text (the embedding cache: any
   * chunk of any document embedded from the same text with the same model).
   */
  cachedVectors(
    model: string,
    dimensions: number,
    hashes: string[],
  ): Promise<Map<string, Float32Array>>;
  /**
   * Whether a vector table or a document of another model than `target` is stored (cheap: no
   * chunk is counted). False: there is nothing to switch from.
   */
  otherModelsStored(target: string): Promise<boolean>;
  /**
   * The current chunks of searchable documents, and how many of them have each model's vector.
   * With nothing of another model than `target` stored, counted once (the target covers all).
   */
  vectorCoverage(target: string): Promise<VectorCoverage>;
  /**
   * Drops the vector tables of every model but `keep` (and what searches keep of them); returns
   * the models dropped. Idempotent; safe while searches run. `stop` ends it early (shutdown; on
   * SQLite the next start's purgeLeftovers finishes emptying the tables).
   */
  dropVectors(keep: string, stop?: () => boolean): Promise<string[]>;
}

/** The ranked candidates with their rows, in rank order; chunks deleted meanwhile are left out. */
export function inRankOrder(ranked: readonly Candidate[], rows: readonly ChunkHit[]): RankedHit[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ranked.flatMap((c) => {
    const chunk = byId.get(c.chunkId);
    return chunk === undefined ? [] : [{ score: c.score, chunk }];
  });
}
