/**
 * Every table, typed: `DB` (both dialects) is what Kysely checks queries against; the dialect-only
 * tables below it are queried with raw SQL by their modules. Timestamps of `DB` tables are
 * ISO-8601 UTC text; the PostgreSQL-only tables use timestamptz.
 */
import type { ColumnType, Generated, Kysely, Selectable } from 'kysely';

export type AgentLevel = 'L0' | 'L1' | 'L2';

export interface MigrationsTable {
  name: string;
  applied_at: string;
}

export interface MigrationLockTable {
  id: number;
  locked_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  name: string;
  level: AgentLevel;
  /** HMAC-SHA256 of the raw key under API_KEY_SALT, hex. The raw key is never stored. */
  key_hash: string;
  /** Display hints only. */
  prefix: string;
  last_four: string;
  /** How the key came to be: `api`, `cli`, `bootstrap`, `first-start`, `rotation`. */
  origin: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Set on a key revoked by rotation: the id of its successor. */
  replaced_by: string | null;
  /** The projects the key may see and touch, a JSON array; null: every project (0019). */
  projects: string | null;
  /** What the key may do: `read`, `write` or `admin` (0019; default and existing keys: `admin`). */
  access: Generated<KeyAccess>;
}

/** What a key may do: read < write (documents) < admin (keys, audit). */
export type KeyAccess = 'read' | 'write' | 'admin';

/**
 * One row (id 1): bumped by every revocation and rotation of a key (migration 0015), so that
 * cached verifications of keys and tokens are dropped at once (auth/revocations.ts).
 */
export interface ApiKeyGenerationTable {
  id: number;
  generation: number | string;
}

/** A nullable column an insert may leave out (it defaults to null). */
type NullByDefault<T> = ColumnType<T | null, T | null | undefined, T | null>;

export interface AuditLogTable {
  id: string;
  at: string;
  /** `api_key:<id>`, `cli`, `system` or `anonymous`. */
  actor: string;
  action: string;
  target: string;
  /** JSON text. */
  details: string | null;
  /** The key that acted, and its name then (0019); null for the CLI and the system. */
  key_id: NullByDefault<string>;
  key_name: NullByDefault<string>;
  /** The request it happened in (`x-request-id`), if any. */
  request_id: NullByDefault<string>;
}

export type DocumentStatus = 'uploaded' | 'indexing' | 'indexed' | 'failed';

export interface KnowledgeDocumentsTable {
  id: string;
  name: string;
  file_type: string;
  mime_type: string;
  source: string;
  /** Null when uploaded without a project. */
  project_id: string | null;
  /** `project_id` or '' — the uniqueness scope of `checksum` (NULLs never collide in SQL). */
  project_key: string;
  version: number;
  status: DocumentStatus;
  checksum: string;
  size_bytes: number;
  /** Storage keys, relative to the data directory. */
  file_path: string;
  markdown_path: string | null;
  converter_command: string | null;
  /** JSON text. */
  converter_meta: string | null;
  error_message: string | null;
  /** Embedding model of the document's current chunks. */
  embedding_model: string | null;
  /** Identifies the indexing run in progress; a run whose token is gone is discarded. */
  index_token: string | null;
  /** JSON text: the parameters of the last index request (re-queued after a restart). */
  index_params: string | null;
  /** SQLite (migration 0011): the run whose chunks are current (null: chunks of no run). */
  chunk_token?: string | null;
  /** JSON text: the document's metadata object (`{}` by default; migration 0009). */
  metadata: Generated<string>;
  /** JSON text `{stage, done, total}`: the progress of the run in progress (read while indexing). */
  progress: string | null;
  created_at: string;
  updated_at: string;
}

export interface KnowledgeChunksTable {
  id: string;
  document_id: string;
  chunk_index: number;
  section_path: string;
  page: number | null;
  /** Last page of the chunk's text (null: unpaged); migration 0012. */
  page_end: number | null;
  content: string;
  token_estimate: number;
  /** JSON text. */
  metadata: string;
  embedding_model: string;
  embedding_dimensions: number;
  /** sha256 of the embedded text (section trail + content): with the model, the embedding-cache key. */
  content_hash: string;
  created_at: string;
  /** SQLite only (migration 0007): the chunk's row in knowledge_chunks_fts. */
  fts_rowid?: number | null;
  /** SQLite (migration 0011): the run that wrote the chunk; current while its document's `chunk_token`. */
  run_token?: string | null;
}

/** The vector table of each (model, dimensions) in use (tables are made on first use). */
export interface KnowledgeVectorTablesTable {
  model: string;
  dimensions: number;
  table_name: string;
  /** PostgreSQL (migration 0017): the centre of the table's HNSW graph, a vector literal. */
  centre?: string | null;
}

/**
 * A vector table (`knowledge_vec_<hash>`, one per model and dimensions; see
 * knowledge_vector_tables): a row per chunk embedded with that model, deleted with its chunk.
 */
export interface KnowledgeVectorTable {
  chunk_id: string;
  document_id: string;
  /** The document's `project_key`, so that scope filters need no join. */
  project_key: string;
  /** SQLite: float32 little-endian BLOB. PostgreSQL: pgvector `vector`, as text when read. */
  embedding: Uint8Array | string;
}

export interface DB {
  aps_migrations: MigrationsTable;
  aps_migration_lock: MigrationLockTable;
  api_keys: ApiKeysTable;
  api_key_generation: ApiKeyGenerationTable;
  audit_log: AuditLogTable;
  knowledge_documents: KnowledgeDocumentsTable;
  knowledge_chunks: KnowledgeChunksTable;
  knowledge_vector_tables: KnowledgeVectorTablesTable;
}

// --- SQLite only: the search tables the in-process indexes load from (raw SQL in search/sqlite/)

/**
 * FTS5 virtual table `knowledge_chunks_fts` (porter unicode61): a row per chunk, `rowid` recorded
 * in knowledge_chunks.fts_rowid. `chunk_id` and `document_id` are stored, not indexed.
 */
export interface Fts5ChunksTable {
  rowid: number;
  chunk_id: string;
  document_id: string;
  document_name: string;
  section_path: string;
  content: string;
}

/** One row (id 1): bumped by triggers on every change to knowledge_chunks (migration 0006). */
export interface SearchGenerationTable {
  id: number;
  generation: number;
}

/** Per document, the generation of the last change to its chunks (triggers, migration 0007). */
export interface SearchChangesTable {
  document_id: string;
  generation: number;
}

export interface SqliteOnlyTables {
  knowledge_chunks_fts: Fts5ChunksTable;
  knowledge_search_generation: SearchGenerationTable;
  knowledge_search_changes: SearchChangesTable;
}

// --- PostgreSQL only: keyword index, job queue, file storage (raw SQL in their modules) -------

/** `knowledge_chunks_fts` on PostgreSQL: a row per chunk with its weighted lexemes. */
export interface TsvectorChunksTable {
  chunk_id: string;
  document_id: string;
  project_key: string;
  /** BM25's D: the chunk's words in all columns. */
  token_count: number;
  /** tsvector: lexemes with positions labelled A (section path), B (name), D (content). */
  terms: string;
  /** Orders ties as FTS5's rowid does. */
  seq: number;
}

/**
 * Keyword postings per (lexeme, document) (migration 0015, search/postgres/keyword/postings.ts):
 * the document's chunks holding the lexeme, packed (seq offsets from `seq_base`, lengths, counts).
 */
export interface FtsPostingsTable {
  lexeme: string;
  document_id: string;
  project_key: string;
  seq_base: number;
  postings: Uint8Array;
}

/** BM25's n(t): in how many chunks each lexeme occurs. */
export interface FtsTermsTable {
  lexeme: string;
  chunks: number;
}

/** BM25's N and the total of D (one row, id 1). */
export interface FtsStatsTable {
  id: number;
  chunks: number;
  tokens: number;
  /** Bumped when postings or searchable documents change (migration 0016): caches check it. */
  generation: number;
}

export type JobStatus = 'queued' | 'running' | 'completed' | 'failed';

/** The shared job queue (migration 0004): a row per job, claimed with FOR UPDATE SKIP LOCKED. */
export interface JobsTable {
  id: string;
  /** FIFO order within a type. */
  seq: number;
  type: string;
  status: JobStatus;
  /** jsonb. */
  payload: unknown;
  result: unknown;
  /** jsonb `{code?, message}`. */
  error: unknown;
  /** Claims so far; more than one means an instance died while running it. */
  attempt: number;
  /** The instance running it (set exactly while `running`, with `lease_until`). */
  owner: string | null;
  lease_until: Date | null;
  enqueued_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** Finished jobs pruned from aps_jobs, still counted per type. */
export interface JobCountsTable {
  type: string;
  completed: number;
  failed: number;
}

/** A stored file (STORAGE_DRIVER=postgres): its key, size and checksum. */
export interface FilesTable {
  key: string;
  size: number;
  checksum: string;
  created_at: Date;
}

/** A file's content in 1 MiB rows, in `seq` order. */
export interface FileChunksTable {
  key: string;
  seq: number;
  data: Uint8Array;
}

export interface PostgresOnlyTables {
  knowledge_chunks_fts: TsvectorChunksTable;
  knowledge_fts_terms: FtsTermsTable;
  knowledge_fts_postings: FtsPostingsTable;
  knowledge_fts_stats: FtsStatsTable;
  aps_jobs: JobsTable;
  aps_job_counts: JobCountsTable;
  aps_files: FilesTable;
  aps_files_chunks: FileChunksTable;
}

export type DocumentRow = Selectable<KnowledgeDocumentsTable>;
export type ChunkRow = Selectable<KnowledgeChunksTable>;

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type Db = Kysely<DB>;
