import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * Large documents without stalls.
 *
 * - (SQLite) `knowledge_chunks.run_token`: the indexing run that wrote the chunk, and
 *   `knowledge_documents.chunk_token`: the run whose chunks are the document's current ones. A
 *   run writes its chunks in slices under its token (searches ignore them) and makes them current
 *   by setting `chunk_token` (one short update); the replaced chunks are purged in slices after.
 *   Chunks written before this migration have a null token, as have their documents.
 *   PostgreSQL writes a document's chunks in one MVCC transaction: the columns stay null there.
 * - (SQLite) chunk numbers unique per document and run (instead of per document).
 *
 * Deleting a document hides its row first (status `deleting`, a row state the API never shows)
 * and purges its rows in slices; nothing in the schema changes for that.
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  await sql`alter table knowledge_chunks add column run_token text`.execute(db);
  await sql`alter table knowledge_documents add column chunk_token text`.execute(db);
  if (driver !== 'sqlite') return;
  // A document holds its current chunks and a run's staged ones at once: chunk numbers are
  // unique per run (the index also finds a run's, or a replaced version's, chunks).
  await sql`drop index knowledge_chunks_document`.execute(db);
  await sql`create unique index knowledge_chunks_document
    on knowledge_chunks (document_id, run_token, chunk_index)`.execute(db);
}
