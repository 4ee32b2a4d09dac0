/**
 * The PostgreSQL dialect module: a `pg` pool with a statement timeout behind Kysely. Needs the
 * pgvector extension (created by the first migration when the role may, or by an administrator).
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { PostgresDatabase } from './database.js';
import type { DB } from './schema.js';

/** Key of the advisory lock that `exclusiveTransaction` holds ("aps" in ASCII). */
const LOCK_KEY = 0x617073;

// Counts and sizes are bigint in PostgreSQL; every one of ours fits a JS number.
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export async function openPostgres(
  config: Extract<Config['database'], { driver: 'postgres' }>,
): Promise<PostgresDatabase> {
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolMax,
    statement_timeout: config.statementTimeoutMs,
    application_name: 'agent-platform-server',
    types,
  });
  // An idle connection that the server drops must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  // Fail at start-up with a clear message instead of at the first request.
  const client = await pool.connect().catch(async (error: unknown) => {
    await pool.end();
    throw new Error(`Cannot connect to PostgreSQL: ${(error as Error).message}`, { cause: error });
  });
  client.release();
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    driver: 'postgres',
    db,
    pool,
    exclusiveTransaction(fn) {
      // A transaction-scoped advisory lock: instances starting together migrate one at a time.
      return db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
        return fn(trx);
      });
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * Runs `fn` in a transaction on one pooled connection (`begin` may set the isolation level). A
 * connection that cannot roll back is destroyed instead of going back to the pool.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  begin: string,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    try {
      const result = await fn(client);
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch((rollbackError: unknown) => {
        broken = rollbackError as Error;
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
