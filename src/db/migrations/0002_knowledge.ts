import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/** Knowledge documents and chunks, and (SQLite) the FTS5 keyword index of the chunks. */
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

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- PostgreSQL gets its own branch
  if (driver === 'sqlite') {
    // Keyword index: porter stemming over unicode61 words. `chunk_id`/`document_id` are stored,
    // not indexed: rows are found by the full-text match and joined back by chunk id.
    await sql`create virtual table knowledge_chunks_fts using fts5(
      chunk_id unindexed, document_id unindexed, document_name, section_path, content,
      tokenize = 'porter unicode61 remove_diacritics 2'
    )`.execute(db);
    // Vectors live in one sqlite-vec table per (model, dimensions), created on first use.
    await sql`create table knowledge_vector_tables (
      model text not null, dimensions integer not null, table_name text not null unique,
      primary key (model, dimensions)
    )`.execute(db);
  }
}
