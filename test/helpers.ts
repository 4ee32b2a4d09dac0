/** Test factories: a real app on a fresh temporary SQLite database, with captured logs. */
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

export async function createTestApp(
  options: {
    env?: Record<string, string>;
    migrations?: readonly Migration[];
    dir?: string;
    embedder?: EmbeddingProvider;
  } = {},
): Promise<TestApp> {
  const dir = options.dir ?? tempDir();
  const config = testConfig(dir, options.env);
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
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
