/**
 * Database failures reach clients as 503 DATABASE_UNAVAILABLE, not as a generic 500, and a
 * connection that breaks never takes the process down.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase, type PostgresDatabase } from '../../src/db/database.js';
import { toErrorBody } from '../../src/http/errors.js';
import { freshDatabase, TEST_DATABASE_URL } from './pg.js';

describe.skipIf(TEST_DATABASE_URL === undefined)('PostgreSQL failures', () => {
  it('a statement over DATABASE_STATEMENT_TIMEOUT_MS is cancelled and answered with 503', async () => {
    const fresh = await freshDatabase();
    const database = await openDatabase({
      driver: 'postgres',
      url: fresh.url,
      poolMax: 2,
      statementTimeoutMs: 200,
      connectTimeoutMs: 5000,
    });
    try {
      if (database.driver !== 'postgres') throw new Error('expected PostgreSQL');
      const started = performance.now();
      const error: unknown = await database.pool
        .query('select pg_sleep(5)')
        .catch((e: unknown) => e);
      expect(performance.now() - started).toBeLessThan(3000);
      expect(toErrorBody(error)).toEqual({
        statusCode: 503,
        code: 'DATABASE_UNAVAILABLE',
        message: expect.stringMatching(/retry/) as string,
      });
    } finally {
      await database.close();
      await fresh.drop();
    }
  });

  it('an unreachable server fails start-up with a clear message', async () => {
    const url = new URL(TEST_DATABASE_URL ?? '');
    url.port = '1'; // nothing listens there
    await expect(
      openDatabase({
        driver: 'postgres',
        url: url.toString(),
        poolMax: 1,
        statementTimeoutMs: 1000,
        connectTimeoutMs: 5000,
      }),
    ).rejects.toThrow(/Cannot connect to PostgreSQL/);
  });

  async function open(url: string, poolMax: number, connectTimeoutMs = 5000) {
    const database = await openDatabase({
      driver: 'postgres',
      url,
      poolMax,
      statementTimeoutMs: 30_000,
      connectTimeoutMs,
    });
    if (database.driver !== 'postgres') throw new Error('expected PostgreSQL');
    return database;
  }

  /** Ends the server side of a connection, as a database restart does. */
  async function terminate(admin: PostgresDatabase, pid: number) {
    await admin.pool.query('select pg_terminate_backend($1)', [pid]);
  }

  const unavailable = {
    statusCode: 503,
    code: 'DATABASE_UNAVAILABLE',
    message: expect.stringMatching(/retry/) as string,
  };

  // pg-pool removes its error listener while a connection is checked out: unless the server
  // listens too, the `error` event of a connection broken then is unhandled and kills the process.
  it('a connection broken while checked out fails its query (503) and the process lives on', async () => {
    const fresh = await freshDatabase();
    const database = await open(fresh.url, 2);
    const admin = await open(fresh.url, 1);
    try {
      // A client held outside any query (between the statements of a transaction).
      const client = await database.pool.connect();
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      await terminate(admin, rows[0]!.pid);
      // The server's goodbye arrives while no query runs: the connection emits `error`.
      await sleep(300);
      const error: unknown = await client.query('select 1').catch((e: unknown) => e);
      expect(toErrorBody(error)).toEqual(unavailable);
      client.release(error as Error);

      // Inside a Kysely transaction, mid-way.
      const failed: unknown = await database.db
        .transaction()
        .execute(async (trx) => {
          const pid = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          await terminate(admin, pid.rows[0]!.pid);
          await sql`select pg_sleep(0.2)`.execute(trx);
        })
        .catch((e: unknown) => e);
      expect(toErrorBody(failed)).toEqual(unavailable);

      // The pool replaced the broken connections.
      const { rows: after } = await database.pool.query<{ one: number }>('select 1 as one');
      expect(after).toEqual([{ one: 1 }]);
    } finally {
      await database.close();
      await admin.close();
      await fresh.drop();
    }
  });

  // pg's connectionTimeoutMillis defaults to 0: left so, a request waits for a connection forever.
  it('waits at most DATABASE_CONNECT_TIMEOUT_MS for a connection, then answers 503', async () => {
    const fresh = await freshDatabase();
    const database = await open(fresh.url, 1, 300);
    try {
      const held = await database.pool.connect();
      const started = performance.now();
      const error: unknown = await database.pool.query('select 1').catch((e: unknown) => e);
      expect(performance.now() - started).toBeLessThan(3000);
      expect(toErrorBody(error)).toEqual(unavailable);
      held.release();
      expect((await database.pool.query('select 1')).rowCount).toBe(1);
    } finally {
      await database.close();
      await fresh.drop();
    }
  });

  it('ping answers on its own connection (a full pool is no reason to fail) and fails once closed', async () => {
    const fresh = await freshDatabase();
    const database = await open(fresh.url, 1, 300);
    try {
      const held = await database.pool.connect();
      await expect(database.ping(1000)).resolves.toBeUndefined();
      held.release();
    } finally {
      await database.close();
      await fresh.drop();
    }
    await expect(database.ping(1000)).rejects.toThrow();
  });
});
