import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (SQLite) What the in-process copies of the search tables (search/sqlite/copies/) need to follow
 * writes of other processes without reloading everything, and to find a document's keyword rows
 * without scanning:
 *
 * - `knowledge_chunks.fts_rowid`: the chunk's row in knowledge_chunks_fts (whose `chunk_id` and
 *   `document_id` columns are not indexed), filled for the existing chunks.
 * - `knowledge_search_changes`: per document, the generation of the last change to its chunks.
 *   The triggers of 0006 are replaced by ones that also record it, so a store whose copy reflects
 *   generation g reloads just the documents changed after g.
 *
 * PostgreSQL: nothing (its searches run in the database).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'sqlite') return;
  await sql`alter table knowledge_chunks add column fts_rowid integer`.execute(db);
  // One pass over the FTS table (a correlated lookup per chunk would scan it once per chunk).
  await sql`create temp table fts_rowids (chunk_id text primary key, fts_rowid integer not null)`.execute(
    db,
  );
  await sql`insert or ignore into temp.fts_rowids (chunk_id, fts_rowid)
    select chunk_id, rowid from knowledge_chunks_fts`.execute(db);
  await sql`update knowledge_chunks set fts_rowid = (
    select r.fts_rowid from temp.fts_rowids r where r.chunk_id = knowledge_chunks.id)`.execute(db);
  await sql`drop table temp.fts_rowids`.execute(db);

  await sql`create table knowledge_search_changes (
    document_id text primary key,
    generation integer not null
  )`.execute(db);
  await sql`create index knowledge_search_changes_generation
    on knowledge_search_changes (generation)`.execute(db);
  const record = (document: string) => `
    insert into knowledge_search_changes (document_id, generation)
      select ${document}, generation from knowledge_search_generation where id = 1
      on conflict (document_id) do update set generation = excluded.generation;`;
  const bump = 'update knowledge_search_generation set generation = generation + 1 where id = 1;';
  for (const event of ['insert', 'delete', 'update']) {
    await sql.raw(`drop trigger knowledge_chunks_generation_${event}`).execute(db);
  }
  await sql
    .raw(
      `create trigger knowledge_chunks_change_insert after insert on knowledge_chunks
       begin ${bump} ${record('new.document_id')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger knowledge_chunks_change_delete after delete on knowledge_chunks
       begin ${bump} ${record('old.document_id')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger knowledge_chunks_change_update after update on knowledge_chunks
       begin ${bump} ${record('old.document_id')} ${record('new.document_id')} end`,
    )
    .execute(db);
}
