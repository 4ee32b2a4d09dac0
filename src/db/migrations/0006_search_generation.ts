import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (SQLite) A generation counter of the searchable chunks: every insert, delete or update of a
 * knowledge_chunks row (by any connection or process, cascades included) bumps it, in the same
 * transaction. The chunk store keeps an in-process copy of the vectors for fast exact search and
 * checks the counter (one point read) at every search: a change it did not make itself means
 * another process (e.g. `aps reindex`) wrote, and the copy is reloaded.
 *
 * PostgreSQL: nothing (its vector search runs in the database).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'sqlite') return;
  await sql`create table knowledge_search_generation (
    id integer primary key check (id = 1),
    generation integer not null
  )`.execute(db);
  await sql`insert into knowledge_search_generation (id, generation) values (1, 0)`.execute(db);
  for (const event of ['insert', 'delete', 'update']) {
    await sql
      .raw(
        `create trigger knowledge_chunks_generation_${event} after ${event} on knowledge_chunks
         begin update knowledge_search_generation set generation = generation + 1 where id = 1; end`,
      )
      .execute(db);
  }
}
