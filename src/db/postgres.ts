/**
 * The PostgreSQL dialect module: a `pg` pool with a statement timeout behind Kysely. Needs the
 * pgvector extension (created by the first migration when the role may, or by an administrator).
 *
 * The database may restart or vanish at any time: every connection has its `error` event handled
 * (an unhandled one ends the process), waiting for a connection is bounded, and the queries that
 * were running fail with errors that `unavailable.ts` recognises (503 DATABASE_UNAVAILABLE).
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

const APPLICATION_NAME = 'agent-platform-server';

/** A connection breaking is expected (restarts, failovers); what was running on it fails. */
const ignoreConnectionError = (): void => undefined;

/**
 * Checks that the database answers, on a connection of its own: a pool whose connections are all
 * busy is no reason to call the database unreachable. The connection is replaced after a failure.
 */
class Pinger {
  private client: pg.Client | undefined;
  private closed = false;

  constructor(private readonly url: string) {}

  async ping(timeoutMs: number): Promise<void> {
    if (this.closed) throw new Error('Client was closed and is not queryable');
    let timer: NodeJS.Timeout | undefined;
    const attempt = this.attempt(timeoutMs);
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`Connection terminated: no answer within ${String(timeoutMs)} ms`));
      }, timeoutMs);
    });
    try {
      await Promise.race([attempt, timeout]);
    } catch (error) {
      attempt.catch(() => undefined);
      void this.discard();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** No more checks (the database was closed). */
  close(): Promise<void> {
    this.closed = true;
    return this.discard();
  }

  /** Ends the connection (without waiting on a server that may not answer). */
  discard(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    return client?.end().catch(() => undefined) ?? Promise.resolve();
  }

  private async attempt(timeoutMs: number): Promise<void> {
    let client = this.client;
    if (client === undefined) {
      client = new pg.Client({
        connectionString: this.url,
        connectionTimeoutMillis: timeoutMs,
        statement_timeout: timeoutMs,
        application_name: `${APPLICATION_NAME} (ready)`,
      });
      const own = client;
      own.on('error', () => {
        if (this.client === own) this.client = undefined;
      });
      this.client = own;
      await own.connect();
    }
    await client.query('select 1');
  }
}

export async function openPostgres(
  config: Extract<Config['database'], { driver: 'postgres' }>,
): Promise<PostgresDatabase> {
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolMax,
    statement_timeout: config.statementTimeoutMs,
    // The default (0) waits forever for a free or new connection: requests would hang while the
    // database is away or every connection is stuck.
    connectionTimeoutMillis: config.connectTimeoutMs,
    // Notices a server that vanished without closing the connection.
    keepAlive: true,
    application_name: APPLICATION_NAME,
    types,
  });
  // An idle connection that the server drops must not crash the process; the next query reconnects.
  pool.on('error', ignoreConnectionError);
  // pg-pool's own listener (above) is removed while a connection is checked out (by Kysely, a
  // transaction, pool.query), and a connection that breaks then emits `error` with nobody
  // listening: the process would die. This one stays for the connection's life; the query that
  // was running fails, and pg-pool discards the broken connection when it comes back.
  pool.on('connect', (client) => {
    client.on('error', ignoreConnectionError);
  });
  // Fail at start-up with a clear message instead of at the first request.
  const client = await pool.connect().catch(async (error: unknown) => {
    await pool.end();
    throw new Error(`Cannot connect to PostgreSQL: ${(error as Error).message}`, { cause: error });
  });
  client.release();
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  const pinger = new Pinger(config.url);
  return {
    driver: 'postgres',
    db,
    pool,
    ping: (timeoutMs) => pinger.ping(timeoutMs),
    exclusiveTransaction(fn) {
      // A transaction-scoped advisory lock: instances starting together migrate one at a time.
      return db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
        return fn(trx);
      });
    },
    async close() {
      await Promise.race([pinger.close(), new Promise((r) => setTimeout(r, 1000).unref())]);
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
