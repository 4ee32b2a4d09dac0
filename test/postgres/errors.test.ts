/** Database failures reach clients as 503 DATABASE_UNAVAILABLE, not as a generic 500. */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
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
});
