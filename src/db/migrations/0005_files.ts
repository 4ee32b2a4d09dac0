import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (PostgreSQL) Stored files for STORAGE_DRIVER=postgres: one header row per key and the content in
 * ordered chunks of about 1 MiB, so files of any size are written and read in bounded memory.
 * Keys use the "C" collation whatever the database's default: byte order makes `key >= 'p/' and
 * key < 'p0'` exactly "every key under p/", a range scan of the primary key. SQLite: nothing (its
 * deployments keep files on the local storage driver).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'postgres') return;
  await sql`
    create table aps_files (
      key text collate "C" primary key,
      size bigint not null check (size >= 0),
      checksum text not null,
      created_at timestamptz not null default now()
    )
  `.execute(db);
  await sql`
    create table aps_files_chunks (
      key text collate "C" not null references aps_files (key) on delete cascade,
      seq integer not null check (seq >= 0),
      data bytea not null,
      primary key (key, seq)
    )
  `.execute(db);
}
