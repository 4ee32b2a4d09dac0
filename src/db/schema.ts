/** The typed database schema Kysely checks every query against. Timestamps are ISO-8601 UTC text. */
import type { Kysely, Selectable } from 'kysely';

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
}

export interface AuditLogTable {
  id: string;
  at: string;
  /** `api_key:<id>`, `cli` or `system`. */
  actor: string;
  action: string;
  target: string;
  /** JSON text. */
  details: string | null;
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
  created_at: string;
  updated_at: string;
}

export interface KnowledgeChunksTable {
  id: string;
  document_id: string;
  chunk_index: number;
  section_path: string;
  page: number | null;
  content: string;
  token_estimate: number;
  /** JSON text. */
  metadata: string;
  embedding_model: string;
  embedding_dimensions: number;
  /** sha256 of the embedded text (section trail + content): with the model, the embedding-cache key. */
  content_hash: string;
  created_at: string;
}

export interface EmbeddingCacheTable {
  model: string;
  content_hash: string;
  /** Float32 little-endian bytes. */
  vector: Uint8Array;
  created_at: string;
}

export interface DB {
  aps_migrations: MigrationsTable;
  aps_migration_lock: MigrationLockTable;
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
  knowledge_documents: KnowledgeDocumentsTable;
  knowledge_chunks: KnowledgeChunksTable;
}

export type DocumentRow = Selectable<KnowledgeDocumentsTable>;
export type ChunkRow = Selectable<KnowledgeChunksTable>;

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type AuditRow = Selectable<AuditLogTable>;
export type Db = Kysely<DB>;
