/**
 * Ordered, versioned migrations recorded in `aps_migrations`. Each migration runs in its own
 * transaction holding the database-wide lock, and the list of applied migrations is re-read under
 * that lock, so two processes starting together apply each migration exactly once.
 *
 * Kysely's own Migrator is not used: it runs every migration in one transaction on PostgreSQL and
 * in none on SQLite, and its SQLite lock only guards one process.
 */
import type { Kysely } from 'kysely';
import type { Database } from './database.js';
import type { Db } from './schema.js';

export interface Migration {
  name: string;
  /** `driver` lets a migration add dialect-specific objects (full-text tables, for one). */
  up(db: Kysely<unknown>, driver: Database['driver']): Promise<void>;
}

export interface MigrationState {
  /** `ok`, or `degraded` when the safety check failed and the server must stay read-only. */
  status: 'ok' | 'degraded';
  applied: { name: string; appliedAt: string }[];
  pending: string[];
  /** Applied in the database but unknown to this build (a newer version migrated it). */
  unknown: string[];
  errorMessage: string | null;
}

async function ensureBookkeeping(db: Db): Promise<void> {
  await db.schema
    .createTable('aps_migrations')
    .ifNotExists()
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('applied_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('aps_migration_lock')
    .ifNotExists()
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('locked_at', 'text')
    .execute();
  await db
    .insertInto('aps_migration_lock')
    .values({ id: 1, locked_at: null })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

async function readApplied(db: Db): Promise<{ name: string; appliedAt: string }[]> {
  const rows = await db.selectFrom('aps_migrations').selectAll().orderBy('name').execute();
  return rows.map((r) => ({ name: r.name, appliedAt: r.applied_at }));
}

function describe(
  applied: { name: string; appliedAt: string }[],
  migrations: readonly Migration[],
  errorMessage: string | null,
): MigrationState {
  const known = new Set(migrations.map((m) => m.name));
  const done = new Set(applied.map((a) => a.name));
  const unknown = applied.filter((a) => !known.has(a.name)).map((a) => a.name);
  const message =
    errorMessage ??
    (unknown.length > 0
      ? `The database was migrated by a newer version (unknown migrations: ${unknown.join(', ')})`
      : null);
  return {
    status: message === null ? 'ok' : 'degraded',
    applied,
    pending: migrations.filter((m) => !done.has(m.name)).map((m) => m.name),
    unknown,
    errorMessage: message,
  };
}

/**
 * Reports applied, pending and unknown migrations without changing anything. It creates nothing
 * either: instances starting together on a fresh PostgreSQL database ask this while another
 * one migrates, and an unlocked CREATE TABLE IF NOT EXISTS there fails with a duplicate key.
 */
export async function migrationStatus(
  database: Database,
  migrations: readonly Migration[],
): Promise<MigrationState> {
  const tables = await database.db.introspection.getTables();
  const applied = tables.some((t) => t.name === 'aps_migrations' && !t.isView)
    ? await readApplied(database.db)
    : [];
  return describe(applied, migrations, null);
}

/**
 * The start-up migration safety check: applies pending migrations one transaction each. Never
 * throws: a failure is reported as a `degraded` state, which puts the server in read-only mode.
 */
export async function migrate(
  database: Database,
  migrations: readonly Migration[],
): Promise<MigrationState> {
  const names = migrations.map((m) => m.name);
  if (
    new Set(names).size !== names.length ||
    names.some((n, i) => i > 0 && n <= (names[i - 1] ?? ''))
  ) {
    throw new Error('Migrations must have unique names in ascending order');
  }
  try {
    // Under the lock too: PostgreSQL's CREATE TABLE IF NOT EXISTS races between instances.
    await database.exclusiveTransaction(ensureBookkeeping);
    for (;;) {
      const state = await database.exclusiveTransaction(async (trx) => {
        await trx
          .updateTable('aps_migration_lock')
          .set({ locked_at: new Date().toISOString() })
          .where('id', '=', 1)
          .execute();
        const current = describe(await readApplied(trx), migrations, null);
        const next = migrations.find((m) => m.name === current.pending[0]);
        if (current.status !== 'ok' || next === undefined) return current;
        try {
          await next.up(trx as unknown as Kysely<unknown>, database.driver);
        } catch (error) {
          throw new Error(`Migration ${next.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        await trx
          .insertInto('aps_migrations')
          .values({ name: next.name, applied_at: new Date().toISOString() })
          .execute();
        return null;
      });
      if (state !== null) return state;
    }
  } catch (error) {
    const applied = await readApplied(database.db).catch(() => []);
    return describe(applied, migrations, (error as Error).message);
  }
}
