import type { Kysely } from 'kysely';

/**
 * Finds earlier vectors by (model, hash of the embedded text), so that re-indexing skips
 * re-embedding unchanged chunks; and documents by embedding model, to report stale ones.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('knowledge_chunks_embedding')
    .on('knowledge_chunks')
    .columns(['embedding_model', 'embedding_dimensions', 'content_hash'])
    .execute();
  await db.schema
    .createIndex('knowledge_documents_embedding_model')
    .on('knowledge_documents')
    .column('embedding_model')
    .execute();
}
