/** Opens the configured database. Each dialect lives in its own module behind this interface. */
import type { Config } from '../config.js';
import type { Db } from './schema.js';
import { openSqlite } from './sqlite.js';

export interface Database {
  driver: 'sqlite';
  db: Db;
  /** The better-sqlite3 handle, for the SQLite search index's prepared statements. */
  native: import('better-sqlite3').Database;
  /**
   * Runs `fn` in a transaction that holds the database-wide write lock for its whole length,
   * so concurrent processes (migrations, for one) cannot interleave.
   */
  exclusiveTransaction<T>(fn: (trx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function openDatabase(config: Config['database']): Database {
  // One driver so far; PostgreSQL joins as another member of Config['database'].
  return openSqlite(config.filename);
}
