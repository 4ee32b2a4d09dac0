/**
 * The SQLite dialect module: the only place that knows it is talking to SQLite.
 * better-sqlite3 in WAL mode; writers wait (busy_timeout) instead of failing at once.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql, type SqliteDialectConfig } from 'kysely';
import type { SqliteDatabase } from './database.js';
import type { DB } from './schema.js';

/**
 * Databases made before migration 0008 hold sqlite-vec (`vec0`) virtual tables, and SQLite drops
 * a virtual table only through its module: this stand-in, with no rows, lets 0008 drop them
 * without the extension (it reads their vectors from the plain shadow tables).
 */
function registerInertVec0(native: BetterSqlite3.Database): void {
  native.table('vec0', {
    columns: ['unused'],
    *rows() {
      // No rows: nothing reads these tables; 0008 only drops them.
    },
  });
}

/** Compiled statements kept at most (the queries Kysely builds are a few hundred shapes). */
const STATEMENT_CACHE = 512;

/**
 * The handle Kysely sees: better-sqlite3 compiles SQL at every `prepare`, and Kysely prepares
 * every query it runs, which cost a tenth of the server's time when documents stream in. The same
 * SQL text gets the same compiled statement (least recently used ones dropped). Safe because
 * Kysely runs each statement to completion synchronously (`all`/`run`; nothing here streams).
 */
function withStatementCache(native: BetterSqlite3.Database): SqliteDialectConfig['database'] {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => native.close(),
    prepare(text: string) {
      let statement = cache.get(text);
      if (statement !== undefined) {
        cache.delete(text); // most recently used last
      } else {
        statement = native.prepare(text);
        if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(text, statement);
      return statement;
    },
  };
}

export function openSqlite(filename: string): SqliteDatabase {
  mkdirSync(dirname(filename), { recursive: true, mode: 0o700 });
  const native = new BetterSqlite3(filename);
  native.pragma('journal_mode = WAL');
  native.pragma('synchronous = NORMAL');
  native.pragma('foreign_keys = ON');
  native.pragma('busy_timeout = 10000');
  registerInertVec0(native);
  const db = new Kysely<DB>({
    dialect: new SqliteDialect({ database: withStatementCache(native) }),
  });

  const probe = native.prepare('select 1');
  return {
    driver: 'sqlite',
    db,
    native,
    // In-process and synchronous: it fails only when the file is gone or the handle closed.
    ping: () =>
      new Promise<void>((resolve) => {
        probe.get();
        resolve();
      }),
    async exclusiveTransaction(fn) {
      // BEGIN IMMEDIATE takes SQLite's write lock up front, so two processes serialise here
      // instead of both reading the same state and one failing on upgrade.
      return db.connection().execute(async (conn) => {
        await sql`begin immediate`.execute(conn);
        try {
          const result = await fn(conn);
          await sql`commit`.execute(conn);
          return result;
        } catch (error) {
          await sql`rollback`.execute(conn);
          throw error;
        }
      });
    },
    async close() {
      await db.destroy();
    },
  };
}
