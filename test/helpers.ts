/**
 * Test factories: a real app on a fresh temporary SQLite database, with captured logs; converter
 * scripts and commands files the tests control; a seeded generator.
 */
import { CLI } from '../src/audit/actor.js';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
            actor: CLI,
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

/**
 * A linear congruential generator in [0, 1) (glibc's constants). The tests that draw their corpus
 * from it keep it: `seededRandom` (mulberry32) would draw other data from the same seed.
 */
export function lcgRandom(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/** Writes `body` as an executable Node script `name` in `dir` (a converter the test controls). */
export function converterScript(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/usr/bin/env node\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * A converter (`slow.mjs` in `dir`) that takes `ms`, then writes `markdown` as the document; with
 * `runsLog`, each run first appends to that file the pid of the server process that started it.
 */
export function slowConverter(
  dir: string,
  options: { ms: number; markdown: string; runsLog?: string },
): string {
  const { ms, markdown, runsLog } = options;
  const logRun =
    runsLog === undefined
      ? ''
      : `appendFileSync(${JSON.stringify(runsLog)}, process.ppid + '\\n');\n`;
  return converterScript(
    dir,
    'slow.mjs',
    `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
${logRun}const out = process.argv[3];
setTimeout(() => {
  mkdirSync(out, { recursive: true });
  writeFileSync(out + '/document.md', ${JSON.stringify(markdown)});
}, ${ms});`,
  );
}

/** A commands file (KNOWLEDGE_COMMANDS_FILE) in `dir`: each command runs `script {input} {outputDir}`. */
export function commandsFile(
  dir: string,
  commands: { id: string; description: string; script: string }[],
): string {
  const file = join(dir, 'commands.json');
  writeFileSync(
    file,
    JSON.stringify({
      commands: commands.map(({ id, description, script }) => ({
        id,
        description,
        argv: [script, '{input}', '{outputDir}'],
      })),
    }),
  );
  return file;
}
