/**
 * The product's own path, as an operator would drive it: a real server on port 0 over a temporary
 * data directory, documents uploaded as multipart over HTTP, indexed by POST …/index (converter
 * process → chunker → embedder → SQLite), queried by POST /knowledge/retrieve.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { ChunkStore } from '../../src/knowledge/search/chunk-store.js';
import { startServer, type RunningServer } from '../../src/server.js';

export type Mode = 'keyword' | 'semantic' | 'hybrid';
export const MODES: readonly Mode[] = ['keyword', 'semantic', 'hybrid'];

/** Where the static model's int8 cache lives between runs (shared with the tests and bench:scifact). */
export const DEFAULT_EMBEDDING_CACHE = resolve(
  import.meta.dirname,
  '../../node_modules/.cache/aps-test-embeddings',
);

export interface Hit {
  id: string;
  documentId: string;
  sectionPath: string;
  content: string;
  score: number;
}

export interface IndexedDocument {
  id: string;
  chunkCount: number;
  embeddingModel: string;
  ms: number;
}

export class BenchServer {
  private constructor(
    readonly server: RunningServer,
    private readonly dir: string,
    private readonly api: string,
    private readonly headers: Record<string, string>,
    private readonly cleanup: () => Promise<void>,
  ) {}

  /** `env` adds settings, e.g. a PostgreSQL `DATABASE_URL`; `cleanup` runs after close. */
  static async start(
    label: string,
    embeddingCache = DEFAULT_EMBEDDING_CACHE,
    env: Record<string, string> = {},
    cleanup: () => Promise<void> = () => Promise.resolve(),
  ) {
    const dir = mkdtempSync(join(tmpdir(), `aps-bench-${label}-`));
    const config = loadConfig(
      {
        ...env,
        DATA_DIR: dir,
        PORT: '0',
        LOG_LEVEL: 'warn',
        NODE_ENV: 'test',
        EMBEDDING_CACHE_DIR: embeddingCache,
        UPLOAD_MAX_BYTES: String(1 << 30),
      },
      dir,
    );
    const lines: string[] = [];
    let server: RunningServer;
    try {
      server = await startServer(config, { print: (l) => lines.push(l) });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      await cleanup();
      throw error;
    }
    // A kept database (--pg-database) has its key already: the bench passes it as the bootstrap key.
    const key = env.BOOTSTRAP_API_KEY ?? /^\s+(aps_\S+)$/m.exec(lines.join('\n'))?.[1];
    if (key === undefined) {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
      await cleanup();
      throw new Error('the server printed no first API key');
    }
    await server.ctx.knowledge.embedder.ready();
    return new BenchServer(
      server,
      dir,
      `${server.address}${config.apiPrefix}/knowledge`,
      { authorization: `Bearer ${key}` },
      cleanup,
    );
  }

  private async request<T>(path: string, init: RequestInit): Promise<T> {
    const res = await fetch(`${this.api}${path}`, {
      ...init,
      headers: { ...this.headers, ...(init.headers as Record<string, string> | undefined) },
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  private postJson<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /**
   * Uploads one file (multipart; a string is sent as markdown, bytes as they are, the converter
   * choosing by the name's extension) and indexes it; resolves when indexing is done.
   */
  async ingest(
    name: string,
    content: string | Uint8Array,
    index: { maxChars?: number; overlapChars?: number } = {},
  ): Promise<IndexedDocument> {
    const t = performance.now();
    const form = new FormData();
    const blob =
      typeof content === 'string'
        ? new Blob([content], { type: 'text/markdown' })
        : new Blob([content], { type: 'application/octet-stream' });
    form.append('file', blob, name);
    const uploaded = await this.request<{ id: string }>('/documents/upload', {
      method: 'POST',
      body: form,
    });
    const indexed = await this.postJson<{ chunkCount: number; embeddingModel: string }>(
      `/documents/${uploaded.id}/index`,
      index,
    );
    return {
      id: uploaded.id,
      chunkCount: indexed.chunkCount,
      embeddingModel: indexed.embeddingModel,
      ms: performance.now() - t,
    };
  }

  /** POST /knowledge/retrieve; `ms` is the client-side round trip. */
  /** A retrieval with minScore -1 (every hit), or as a client asks by default (`asked`). */
  async retrieve(
    query: string,
    mode: Mode,
    topK: number,
    asked = false,
  ): Promise<{ items: Hit[]; ms: number }> {
    const t = performance.now();
    const body = await this.postJson<{ items: Hit[] }>('/retrieve', {
      query,
      topK,
      mode,
      ...(asked ? {} : { minScore: -1 }),
    });
    return { items: body.items, ms: performance.now() - t };
  }

  /**
   * The server's chunk store, bypassing HTTP and the retrieval service: the floor of a query.
   * `RetrievalService.store` is private; reached the way bench/fusion-sweep.ts does.
   */
  store(): ChunkStore | undefined {
    const store = (this.server.ctx.knowledge.retrieval as unknown as { store?: ChunkStore }).store;
    return typeof store?.search === 'function' ? store : undefined;
  }

  async close(): Promise<void> {
    try {
      await this.server.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
      await this.cleanup();
    }
  }
}
