import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/database.js';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate, migrationStatus, type Migration } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { tempDir } from '../../helpers.js';

const opened: Database[] = [];
function open(file = join(tempDir(), 'db.sqlite')): Database {
  const db = openSqlite(file);
  opened.push(db);
  return db;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((d) => d.close()));
});

const table = (name: string): Migration => ({
  name,
  up: async (db: Kysely<unknown>) => {
    await db.schema.createTable(`t_${name}`).addColumn('id', 'integer').execute();
  },
});

async function tables(database: Database): Promise<string[]> {
  const rows = await sql<{
    name: string;
  }>`select name from sqlite_master where type = 'table' and name like 't_%' order by name`.execute(
    database.db,
  );
  return rows.rows.map((r) => r.name);
}

describe('migrate', () => {
  it('applies pending migrations in order, once', async () => {
    const db = open();
    const first = await migrate(db, [table('001'), table('002')]);
    expect(first).toMatchObject({ status: 'ok', pending: [], unknown: [], errorMessage: null });
    expect(first.applied.map((a) => a.name)).toEqual(['001', '002']);
    const again = await migrate(db, [table('001'), table('002'), table('003')]);
    expect(again.applied.map((a) => a.name)).toEqual(['001', '002', '003']);
    expect(await tables(db)).toEqual(['t_001', 't_002', 't_003']);
  });

  it('a failing migration rolls back alone and leaves the state degraded', async () => {
    const db = open();
    const failing: Migration = {
      name: '002',
      up: async (trx) => {
        await trx.schema.createTable('t_002').addColumn('id', 'integer').execute();
        throw new Error('column type exploded');
      },
    };
    const state = await migrate(db, [table('001'), failing, table('003')]);
    expect(state.status).toBe('degraded');
    expect(state.errorMessage).toBe('Migration 002 failed: column type exploded');
    expect(state.applied.map((a) => a.name)).toEqual(['001']);
    expect(state.pending).toEqual(['002', '003']);
    expect(await tables(db)).toEqual(['t_001']);
  });

  it('a database migrated by a newer version is reported, and nothing is applied', async () => {
    const file = join(tempDir(), 'db.sqlite');
    await migrate(open(file), [table('001'), table('002')]);
    const older = await migrate(open(file), [table('001'), table('001b')]);
    expect(older.status).toBe('degraded');
    expect(older.unknown).toEqual(['002']);
    expect(older.errorMessage).toMatch(/migrated by a newer version.*002/);
    expect(older.pending).toEqual(['001b']);
    expect(await tables(opened[1]!)).toEqual(['t_001', 't_002']);
  });

  it('status reports without applying', async () => {
    const db = open();
    const state = await migrationStatus(db, MIGRATIONS);
    expect(state.pending).toEqual(MIGRATIONS.map((m) => m.name));
    expect(state.applied).toEqual([]);
    // Not even the bookkeeping tables: status changes nothing.
    const created = await sql<{ name: string }>`select name from sqlite_master`.execute(db.db);
    expect(created.rows).toEqual([]);
  });

  it('status after migrating reports what was applied', async () => {
    const db = open();
    await migrate(db, [table('001')]);
    const state = await migrationStatus(db, [table('001'), table('002')]);
    expect(state.applied.map((a) => a.name)).toEqual(['001']);
    expect(state.pending).toEqual(['002']);
  });

  it('refuses an unordered migration list (a programming error)', async () => {
    await expect(migrate(open(), [table('002'), table('001')])).rejects.toThrow(/ascending/);
  });
});
