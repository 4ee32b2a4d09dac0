/**
 * The PostgreSQL revocation generation: every bump of `api_key_generation` is NOTIFYed
 * with its committed value, and each instance adopts that value as it arrives. A bump this
 * instance already read (its own revocation) or an older one changes nothing, so there is no
 * window in which the generation is unknown and every request pays a full verification. Runs only
 * when TEST_DATABASE_URL is set.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PostgresDatabase } from '../../src/db/database.js';
import { PostgresRevocations } from '../../src/auth/revocations-postgres.js';
import { migratedDatabase, TEST_DATABASE_URL } from './pg.js';

describe.skipIf(TEST_DATABASE_URL === undefined)('PostgreSQL revocation generation', () => {
  const fresh = migratedDatabase();
  let database: PostgresDatabase;
  let revocations: PostgresRevocations;

  beforeAll(() => {
    ({ database } = fresh);
    revocations = new PostgresRevocations(database.pool, pino({ level: 'silent' }));
  });
  afterAll(async () => {
    await revocations.close();
  });

  /** A bump as another instance commits it: its own connection, its own transaction. */
  const bumpElsewhere = async (): Promise<number> => {
    const { rows } = await database.pool.query<{ generation: string }>(
      'update api_key_generation set generation = generation + 1 where id = 1 returning generation',
    );
    return Number(rows[0]?.generation);
  };

  it('adopts a bump from its notice, never passing through "unknown"', async () => {
    await vi.waitFor(() => {
      expect(revocations.current()).not.toBeNull();
    });
    const before = revocations.current();
    const seen: (number | null)[] = [];
    const sampler = setInterval(() => seen.push(revocations.current()), 1);
    const query = vi.spyOn(database.pool, 'query');
    try {
      const bumped = await bumpElsewhere();
      query.mockClear(); // the bump's own statement
      await vi.waitFor(() => {
        expect(revocations.current()).toBe(bumped);
      });
      expect(bumped).toBe(Number(before) + 1);
      // Taken from the notice: no read of the counter, and no sample found it unknown.
      expect(query).not.toHaveBeenCalled();
      expect(seen).not.toContain(null);
    } finally {
      clearInterval(sampler);
      query.mockRestore();
    }
  });
});
