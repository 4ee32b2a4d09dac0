import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (SQLite) Vectors move from sqlite-vec's `vec0` virtual tables to plain tables (one per model
 * and dimensions, under the same name): the in-process vector index answers every search, so
 * sqlite-vec only stored them, and the dependency goes.
 *
 * The vectors are read without the extension, from the virtual table's own (ordinary) shadow
 * tables, as sqlite-vec 0.1 lays them out: `<t>_rowids` maps a key (`id`, the chunk id) to a
 * vector chunk and a slot, and `<t>_vector_chunks00` holds each vector chunk's vectors as one
 * BLOB of float32 slots. The document and project come from the chunk rows. A table whose
 * vectors cannot all be found fails the migration (the server then runs read-only and says so)
 * rather than losing any. SQLite drops a virtual table only through its module: `openSqlite`
 * registers an inert `vec0` for that.
 *
 * PostgreSQL: nothing (pgvector stays).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'sqlite') return;
  const tables = await sql<{ table_name: string; dimensions: number; sql: string | null }>`
    select t.table_name, t.dimensions, m.sql from knowledge_vector_tables t
    left join sqlite_master m on m.name = t.table_name`.execute(db);
  for (const { table_name: table, dimensions, sql: ddl } of tables.rows) {
    if (ddl === null || !/^create virtual table/i.test(ddl)) continue;
    const moved = `${table}_moved`;
    await sql
      .raw(
        `create table ${moved} (
           chunk_id text primary key references knowledge_chunks (id) on delete cascade,
           document_id text not null,
           project_key text not null,
           embedding blob not null
         )`,
      )
      .execute(db);
    const bytes = dimensions * 4;
    await sql
      .raw(
        `insert into ${moved} (chunk_id, document_id, project_key, embedding)
         select r.id, c.document_id, d.project_key,
           substr(v.vectors, r.chunk_offset * ${bytes} + 1, ${bytes})
         from ${table}_rowids r
         join ${table}_vector_chunks00 v on v.rowid = r.chunk_id
         join knowledge_chunks c on c.id = r.id
         join knowledge_documents d on d.id = c.document_id`,
      )
      .execute(db);
    const counts = await sql<{ chunks: number; vectors: number; short: number }>`
      select
        (select count(*) from knowledge_chunks c join ${sql.table(table + '_rowids')} r on r.id = c.id)
          as chunks,
        (select count(*) from ${sql.table(moved)}) as vectors,
        (select count(*) from ${sql.table(moved)} where length(embedding) <> ${bytes}) as short`.execute(
      db,
    );
    const count = counts.rows[0];
    if (count === undefined || count.chunks !== count.vectors || count.short > 0) {
      throw new Error(
        `the vectors of ${table} could not all be read from sqlite-vec's tables ` +
          `(${count?.vectors ?? 0} of ${count?.chunks ?? 0} found, ${count?.short ?? 0} short)`,
      );
    }
    const shadows = await sql<{ name: string }>`
      select name from sqlite_master
      where type = 'table' and name like ${`${table}\\_%`} escape '\\' and name <> ${moved}`.execute(
      db,
    );
    await sql.raw(`drop table ${table}`).execute(db);
    for (const { name } of shadows.rows) await sql.raw(`drop table "${name}"`).execute(db);
    await sql.raw(`alter table ${moved} rename to ${table}`).execute(db);
  }
}
