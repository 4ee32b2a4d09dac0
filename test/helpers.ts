/** Test factories: a real app on a fresh temporary SQLite database, with captured logs. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { createContext, type AppContext } from '../src/context.js';
import type { Migration } from '../src/db/migrator.js';
import type { EmbeddingProvider } from '../src/knowledge/embeddings/provider.js';
import type { JobContext, JobQueue } from '../src/queue/queue.js';
import { freshDatabase, TEST_DATABASE_URL, type FreshDatabase } from './postgres/pg.js';

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'aps-test-'));
}

/** Building the static embedding cache takes seconds: every test shares one. */
export const TEST_EMBEDDING_CACHE =
  process.env.APS_TEST_EMBEDDING_CACHE ??
  resolve(import.meta.dirname, '../node_modules/.cache/aps-test-embeddings');

export function testConfig(dir: string, env: Record<string, string> = {}): Config {
  return loadConfig(
    {
      DATA_DIR: dir,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
      ...env,
    },
    dir,
  );
}

/** Collects every log line the app writes. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  dir: string;
  logs: LogCapture;
  /** A raw L0 key (created through the service unless the database is unusable). */
  key: string;
  prefix: string;
  /** Closes the app and context; `keepDir` leaves the data directory for a restart. */
  close(keepDir?: boolean): Promise<void>;
}

/** The PostgreSQL database of each test data directory, when the suite runs on PostgreSQL. */
const postgresDatabases = new Map<string, FreshDatabase>();

/**
 * With `TEST_DATABASE_URL` set, every test app gets its own fresh PostgreSQL database (kept per
 * data directory, so a restart on the same directory finds its data) and keeps files in it.
 */
export async function postgresEnv(
  dir: string,
  env: Record<string, string> = {},
): Promise<Record<string, string>> {
  if (TEST_DATABASE_URL === undefined || env.DATABASE_URL !== undefined) return {};
  let database = postgresDatabases.get(dir);
  if (database === undefined) {
    database = await freshDatabase();
    postgresDatabases.set(dir, database);
  }
  return { DATABASE_URL: database.url, STORAGE_DRIVER: 'postgres' };
}

export async function createTestApp(
  options: {
    env?: Record<string, string>;
    migrations?: readonly Migration[];
    dir?: string;
    embedder?: EmbeddingProvider;
  } = {},
): Promise<TestApp> {
  const dir = options.dir ?? tempDir();
  const pgEnv = await postgresEnv(dir, options.env);
  const config = testConfig(dir, { ...pgEnv, ...options.env });
  const logs = new LogCapture();
  const ctx = await createContext(config, {
    logStream: logs,
    ...(options.migrations ? { migrations: options.migrations } : {}),
    ...(options.embedder ? { embedder: options.embedder } : {}),
  });
  const app = await buildApp(ctx);
  const existing = await ctx.apiKeys.list().catch(() => []);
  const key =
    existing.length === 0 && !ctx.readOnly
      ? (
          await ctx.apiKeys.create({
            name: 'test-admin',
            level: 'L0',
            actor: 'test',
            origin: 'cli',
          })
        ).rawKey
      : '';
  return {
    app,
    ctx,
    dir,
    logs,
    key,
    prefix: config.apiPrefix,
    async close(keepDir = false) {
      await app.close();
      await ctx.close();
      if (!keepDir) {
        rmSync(dir, { recursive: true, force: true });
        await postgresDatabases.get(dir)?.drop();
        postgresDatabases.delete(dir);
      }
    },
  };
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

const jobFunctions = new Map<string, (job: JobContext) => Promise<unknown>>();
const dispatching = new WeakMap<JobQueue, Set<string>>();

/**
 * Runs `fn` as a job of `type` on `queue` (any driver) and resolves with its result: a handler
 * that dispatches on a key in the (JSON) payload is registered once per queue and type.
 */
export async function runJob<T>(
  queue: JobQueue,
  type: string,
  fn: (job: JobContext) => Promise<T>,
): Promise<T> {
  const types = dispatching.get(queue) ?? new Set<string>();
  dispatching.set(queue, types);
  if (!types.has(type)) {
    queue.handle(type, (key, job) => {
      const run = jobFunctions.get(key as string);
      if (run === undefined) return Promise.reject(new Error(`no test job ${String(key)}`));
      return run(job);
    });
    types.add(type);
  }
  const key = randomUUID();
  jobFunctions.set(key, fn);
  try {
    return (await queue.wait(await queue.enqueue(type, key))) as T;
  } finally {
    jobFunctions.delete(key);
  }
}
