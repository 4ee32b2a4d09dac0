import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * Knowledge documents and chunks, and their keyword and vector indexes: on SQLite FTS5 and
 * sqlite-vec tables, on PostgreSQL a tsvector table with BM25 statistics and pgvector tables.
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  await db.schema
    .createTable('knowledge_documents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('file_type', 'text', (c) => c.notNull())
    .addColumn('mime_type', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text')
    .addColumn('project_key', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('checksum', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('file_path', 'text', (c) => c.notNull())
    .addColumn('markdown_path', 'text')
    .addColumn('converter_command', 'text')
    .addColumn('converter_meta', 'text')
    .addColumn('error_message', 'text')
    .addColumn('embedding_model', 'text')
    .addColumn('index_token', 'text')
    .addColumn('index_params', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('knowledge_documents_checksum')
    .unique()
    .on('knowledge_documents')
    .columns(['project_key', 'checksum'])
    .execute();
  await db.schema
    .createIndex('knowledge_documents_project_created')
    .on('knowledge_documents')
    .columns(['project_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('knowledge_documents_status')
    .on('knowledge_documents')
    .columns(['status', 'created_at'])
    .execute();

  await db.schema
    .createTable('knowledge_chunks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('document_id', 'text', (c) =>
      c.notNull().references('knowledge_documents.id').onDelete('cascade'),
    )
    .addColumn('chunk_index', 'integer', (c) => c.notNull())
    .addColumn('section_path', 'text', (c) => c.notNull())
    .addColumn('page', 'integer')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('token_estimate', 'integer', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('embedding_model', 'text', (c) => c.notNull())
    .addColumn('embedding_dimensions', 'integer', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('knowledge_chunks_document')
    .unique()
    .on('knowledge_chunks')
    .columns(['document_id', 'chunk_index'])
    .execute();

  if (driver === 'sqlite') {
    // Keyword index: porter stemming over unicode61 words. `chunk_id`/`document_id` are stored,
    // not indexed: rows are found by the full-text match and joined back by chunk id.
    await sql`create virtual table knowledge_chunks_fts using fts5(
      chunk_id unindexed, document_id unindexed, document_name, section_path, content,
      tokenize = 'porter unicode61 remove_diacritics 2'
    )`.execute(db);
    // Vectors live in one table per (model, dimensions), created on first use (sqlite-vec
    // tables until migration 0008, plain tables since).
    await sql`create table knowledge_vector_tables (
      model text not null, dimensions integer not null, table_name text not null unique,
      primary key (model, dimensions)
    )`.execute(db);
  }

  if (driver === 'postgres') await postgresIndexes(db);
}

/** The oldest pgvector with HNSW indexes (iterative index scans, used when present, need 0.8.0). */
const PGVECTOR_MIN = [0, 5, 0];

function versionAtLeast(version: string, min: number[]): boolean {
  const parts = version.split('.').map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < min.length; i++) {
    const a = parts[i] ?? 0;
    const b = min[i] ?? 0;
    if (Number.isNaN(a) || a !== b) return !Number.isNaN(a) && a > b;
  }
  return true;
}

/**
 * Creates the pgvector extension unless it exists. `CREATE EXTENSION vector` needs a superuser
 * (pgvector is not a trusted extension): when the role may not, the error says what to ask for.
 */
async function ensurePgvector(db: Kysely<unknown>): Promise<void> {
  const installed = await sql<{ extversion: string }>`
    select extversion from pg_extension where extname = 'vector'`.execute(db);
  let version = installed.rows[0]?.extversion;
  if (version === undefined) {
    const who = await sql<{ role: string; database: string; available: string | null }>`
      select current_user as role, current_database() as database,
        (select default_version from pg_available_extensions where name = 'vector') as available`.execute(
      db,
    );
    const { role, database, available } = who.rows[0] ?? {
      role: '?',
      database: '?',
      available: null,
    };
    if (available === null) {
      throw new Error(
        'The pgvector extension is not installed on the PostgreSQL server: install pgvector ' +
          '0.8 or newer for this PostgreSQL version (e.g. the postgresql-<version>-pgvector ' +
          `package or scripts/postgres/install-pgvector.sh), then run CREATE EXTENSION vector in database "${database}" and restart`,
      );
    }
    try {
      await sql`create extension if not exists vector`.execute(db);
    } catch (error) {
      throw new Error(
        `The pgvector extension is missing in database "${database}" and role "${role}" may not create it ` +
          `(${(error as Error).message}): ask an administrator (a superuser) to run CREATE EXTENSION vector ` +
          `in database "${database}", then restart`,
        { cause: error },
      );
    }
    version = available;
  }
  if (!versionAtLeast(version, PGVECTOR_MIN)) {
    throw new Error(
      `pgvector ${version} is too old: HNSW indexes need 0.5.0 or newer (0.8.0 or newer for ` +
        'iterative index scans). Upgrade the package, then run ALTER EXTENSION vector UPDATE',
    );
  }
}

async function postgresIndexes(db: Kysely<unknown>): Promise<void> {
  await ensurePgvector(db);
  // The stemmer of the keyword index: Snowball's Porter stemmer, the algorithm of FTS5's `porter`
  // tokenizer, so both dialects index (and score) the same lexemes. No stop words: FTS5 has none.
  await sql`create text search dictionary aps_porter (template = snowball, language = porter)`.execute(
    db,
  );
  // Keyword index, one row per chunk: the lexemes of its words (FTS5's unicode61 words, stemmed
  // by aps_porter) with positions weighted A (section path), B (document name) and D (content),
  // and its length in words for BM25. `seq` orders ties like FTS5's rowid. Deleted with its chunk.
  await sql`create table knowledge_chunks_fts (
    chunk_id text primary key references knowledge_chunks (id) on delete cascade,
    document_id text not null,
    project_key text not null,
    token_count integer not null,
    terms tsvector not null,
    seq bigint generated always as identity
  )`.execute(db);
  await sql`create index knowledge_chunks_fts_terms on knowledge_chunks_fts using gin (terms)`.execute(
    db,
  );
  await sql`create index knowledge_chunks_fts_document on knowledge_chunks_fts (document_id)`.execute(
    db,
  );
  await sql`create index knowledge_chunks_fts_project on knowledge_chunks_fts (project_key)`.execute(
    db,
  );
  // BM25 statistics, kept in step with knowledge_chunks_fts by the same transactions (as FTS5
  // keeps its own): in how many chunks each lexeme occurs, and the number and total length of
  // the chunks.
  await sql`create table knowledge_fts_terms (
    lexeme text primary key,
    chunks integer not null
  )`.execute(db);
  await sql`create table knowledge_fts_stats (
    id integer primary key check (id = 1),
    chunks bigint not null,
    tokens bigint not null
  )`.execute(db);
  await sql`insert into knowledge_fts_stats (id, chunks, tokens) values (1, 0, 0)`.execute(db);
  // Vectors live in one pgvector table per (model, dimensions) with its own HNSW index (an HNSW
  // index needs one dimension), created on first use.
  await sql`create table knowledge_vector_tables (
    model text not null, dimensions integer not null, table_name text not null unique,
    primary key (model, dimensions)
  )`.execute(db);
}
