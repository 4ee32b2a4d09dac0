import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (PostgreSQL) `knowledge_fts_stats.generation`, a counter of what a keyword search reads besides
 * the statistics: the postings rows and which documents are searchable. Each instance keeps the
 * postings of hot lexemes in memory (search/postgres/keyword/postings-cache.ts) and trusts them
 * only while the generation it read in the search's snapshot is the one they were read at, so a
 * change made by any instance is seen by every other at its next search.
 *
 * - the chunk store bumps it where it writes postings, with the statistics (last in the
 *   transaction, so the row is held briefly);
 * - a trigger bumps it when a document enters or leaves the searchable statuses (`indexed`,
 *   `indexing`: chunk-store.ts SEARCHABLE) without its postings changing: a failed re-index
 *   (`failed`), a delete (`deleting`), a new run of a failed document (`indexing`).
 *
 * Safe to run again (`if not exists`, `or replace`); nothing to backfill (existing caches: none).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'postgres') return;
  await sql`alter table knowledge_fts_stats
    add column if not exists generation bigint not null default 0`.execute(db);
  await sql`create or replace function aps_keyword_generation_bump() returns trigger
    language plpgsql as $$
    begin
      update knowledge_fts_stats set generation = generation + 1 where id = 1;
      return null;
    end $$`.execute(db);
  await sql`drop trigger if exists knowledge_documents_searchable on knowledge_documents`.execute(
    db,
  );
  await sql`create trigger knowledge_documents_searchable
    after update of status on knowledge_documents
    for each row
    when ((old.status in ('indexed', 'indexing')) is distinct from (new.status in ('indexed', 'indexing')))
    execute function aps_keyword_generation_bump()`.execute(db);
}
