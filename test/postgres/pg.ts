/**
 * PostgreSQL test support: every caller gets a fresh database on the server of
 * `TEST_DATABASE_URL` (its template has the pgvector extension), dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { openDatabase, type PostgresDatabase } from '../../src/db/database.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { migrate } from '../../src/db/migrator.js';

/** The admin URL of the test server, or undefined when PostgreSQL tests are off. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

export interface FreshDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  if (TEST_DATABASE_URL === undefined) throw new Error('TEST_DATABASE_URL is not set');
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function freshDatabase(): Promise<FreshDatabase> {
  const name = `aps_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await admin((c) => c.query(`create database ${name}`));
  const url = new URL(TEST_DATABASE_URL ?? '');
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () =>
      admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

/** Opens the database at `url` and applies every migration; throws if they fail. */
export async function openMigrated(
  url: string,
  statementTimeoutMs = 60_000,
): Promise<PostgresDatabase> {
  const database = await openDatabase({
    driver: 'postgres',
    url,
    poolMax: 10,
    statementTimeoutMs,
    connectTimeoutMs: 5000,
  });
  if (database.driver !== 'postgres') throw new Error('expected PostgreSQL');
  const state = await migrate(database, MIGRATIONS);
  if (state.status !== 'ok') {
    await database.close();
    throw new Error(`migrations failed: ${state.errorMessage}`);
  }
  return database;
}

/** The database of {@link migratedDatabase}; read it in hooks and tests, once its beforeAll ran. */
export interface MigratedDatabase {
  readonly url: string;
  readonly name: string;
  readonly database: PostgresDatabase;
}

/**
 * A fresh, migrated database for the `describe` block that calls this: made in a beforeAll that
 * runs before the block's own later ones, closed and dropped in an afterAll that runs after the
 * block's own (hooks run as a stack).
 */
export function migratedDatabase(statementTimeoutMs?: number): MigratedDatabase {
  let fresh: FreshDatabase | undefined;
  let database: PostgresDatabase | undefined;
  beforeAll(async () => {
    fresh = await freshDatabase();
    database = await openMigrated(fresh.url, statementTimeoutMs);
  }, 60_000);
  afterAll(async () => {
    await database?.close();
    await fresh?.drop();
  });
  const ready = () => {
    if (fresh === undefined || database === undefined) throw new Error('no database yet');
    return { fresh, database };
  };
  return {
    get url() {
      return ready().fresh.url;
    },
    get name() {
      return ready().fresh.name;
    },
    get database() {
      return ready().database;
    },
  };
}

/**
 * A pool whose clients run `before(sql)` ahead of every statement: to count statements, or to
 * hold one back until something else happened.
 */
export function instrumentedPool(
  pool: pg.Pool,
  before: (sql: string) => Promise<void> | void,
): pg.Pool {
  /** `target` with its `query` running `before` first (and `connect` giving such clients). */
  const instrument = <T extends pg.Pool | pg.PoolClient>(target: T): T =>
    new Proxy(target, {
      get(object, prop) {
        if (prop === 'query') {
          // A statement's text, or a named one's (a query config).
          return async (...args: [string | pg.QueryConfig, unknown[]?]) => {
            await before(typeof args[0] === 'string' ? args[0] : args[0].text);
            return object.query(...(args as [string, unknown[]?]));
          };
        }
        if (prop === 'connect' && object instanceof pg.Pool) {
          return async () => instrument(await object.connect());
        }
        const value: unknown = Reflect.get(object, prop, object);
        return typeof value === 'function' ? (value as () => unknown).bind(object) : value;
      },
    });
  return instrument(pool);
}
