import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (PostgreSQL) `knowledge_vector_tables.centre`, the vector a table's HNSW graph is centred on
 * (search/postgres/vector/vector-graph.ts), as a pgvector literal; null until the table first holds
 * more chunks than are searched exactly and its centred graph is built. Tables made before keep
 * their graph over the raw vectors until then (the store replaces it in the background). Safe to
 * run again (`if not exists`); nothing to backfill.
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'postgres') return;
  await sql`alter table knowledge_vector_tables add column if not exists centre text`.execute(db);
}
