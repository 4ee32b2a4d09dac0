/** Opens the configured database. Each dialect lives in its own module behind this interface. */
import type { Pool } from 'pg';
import type { Config } from '../config.js';
import type { Db } from './schema.js';
import { openSqlite } from './sqlite.js';

interface DatabaseBase {
  db: Db;
  /**
   * Runs `fn` in a transaction that holds the database-wide write lock for its whole length,
   * so concurrent processes (migrations, for one) cannot interleave.
   */
  exclusiveTransaction<T>(fn: (trx: Db) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query within `timeoutMs`; rejects otherwise. */
  ping(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export interface SqliteDatabase extends DatabaseBase {
  driver: 'sqlite';
  /** The better-sqlite3 handle, for the SQLite search index's prepared statements. */
  native: import('better-sqlite3').Database;
}

export interface PostgresDatabase extends DatabaseBase {
  driver: 'postgres';
  /** The connection pool, for the queue's LISTEN connection and the search index's raw SQL. */
  pool: Pool;
}

export type Database = SqliteDatabase | PostgresDatabase;

export async function openDatabase(config: Config['database']): Promise<Database> {
  if (config.driver === 'sqlite') return openSqlite(config.filename);
  // Loaded only when configured: the embedded default never loads the PostgreSQL client.
  const { openPostgres } = await import('./postgres.js');
  return openPostgres(config);
}
