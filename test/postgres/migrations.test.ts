/**
 * Instances starting together on a fresh PostgreSQL database: each asks for the migration status
 * (`aps serve` does, to say whether the database is new) while the others migrate. Nobody fails,
 * every migration is applied exactly once, and asking the status creates nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { migrate, migrationStatus } from '../../src/db/migrator.js';
import { freshDatabase, TEST_DATABASE_URL, type FreshDatabase } from './pg.js';

const INSTANCES = 6;

describe.skipIf(!TEST_DATABASE_URL)('migrations on PostgreSQL, instances starting together', () => {
  const fresh: FreshDatabase[] = [];
  const opened: Database[] = [];
  const open = async (url: string) => {
    const database = await openDatabase({
      driver: 'postgres',
      url,
      poolMax: 4,
      statementTimeoutMs: 60_000,
      connectTimeoutMs: 5000,
    });
    opened.push(database);
    return database;
  };
  afterAll(async () => {
    await Promise.all(opened.map((d) => d.close()));
    await Promise.all(fresh.map((f) => f.drop()));
  });

  it('status on a fresh database creates nothing', async () => {
    const db = await freshDatabase();
    fresh.push(db);
    const database = await open(db.url);
    const state = await migrationStatus(database, MIGRATIONS);
    expect(state.applied).toEqual([]);
    expect(state.pending).toEqual(MIGRATIONS.map((m) => m.name));
    const tables = await database.db.introspection.getTables();
    expect(tables.map((t) => t.name)).toEqual([]);
  });

  it('each asks the status, then migrates: no failure, each migration applied once', async () => {
    for (let round = 0; round < 3; round += 1) {
      const db = await freshDatabase();
      fresh.push(db);
      const databases = await Promise.all(Array.from({ length: INSTANCES }, () => open(db.url)));
      const states = await Promise.all(
        databases.map(async (database) => {
          await migrationStatus(database, MIGRATIONS);
          const state = await migrate(database, MIGRATIONS);
          return { state, after: await migrationStatus(database, MIGRATIONS) };
        }),
      );
      for (const { state, after } of states) {
        expect(state.errorMessage).toBeNull();
        expect(state.status).toBe('ok');
        expect(after.pending).toEqual([]);
        expect(after.applied.map((a) => a.name)).toEqual(MIGRATIONS.map((m) => m.name));
      }
    }
  });
});
