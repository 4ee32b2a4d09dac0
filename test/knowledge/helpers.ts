/** Helpers for knowledge HTTP tests: multipart bodies built by hand, upload/index shortcuts. */
import type { AppContext } from '../../src/context.js';
import type { SqliteDatabase } from '../../src/db/database.js';
import { sql } from 'kysely';
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { ChunkStore, NewChunk } from '../../src/knowledge/search/chunk-store.js';
import { SqliteChunkStore } from '../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import type {
  IndexRow,
  VectorSource,
} from '../../src/knowledge/search/sqlite/vector/vector-index.js';
import {
  bearer,
  commandsFile,
  converterScript,
  createTestApp,
  slowConverter,
  type TestApp,
} from '../helpers.js';

export type Part =
  | { name: string; value: string }
  | { name: string; filename: string; content: string | Buffer; contentType?: string };

/** A multipart/form-data body with the parts in the given order. */
export function multipart(parts: Part[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----aps${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if ('filename' in part) {
      head += `; filename="${part.filename}"\r\nContent-Type: ${part.contentType ?? 'application/octet-stream'}`;
    }
    chunks.push(Buffer.from(`${head}\r\n\r\n`));
    chunks.push(
      Buffer.isBuffer((part as { content?: unknown }).content)
        ? (part as { content: Buffer }).content
        : Buffer.from('filename' in part ? part.content : part.value),
    );
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    payload: Buffer.concat(chunks),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

export interface DocumentBody {
  id: string;
  name: string;
  fileType: string;
  status: string;
  version: number;
  checksum: string;
  filePath: string;
  markdownPath: string | null;
  projectId: string | null;
  source: string;
  errorMessage: string | null;
  converterCommand: string | null;
  converterMeta: Record<string, unknown> | null;
}

export class KnowledgeClient {
  constructor(readonly t: TestApp) {}

  url(path: string): string {
    return `${this.t.prefix}/knowledge${path}`;
  }

  async upload(filename: string, content: string | Buffer, fields: Record<string, string> = {}) {
    const body = multipart([
      { name: 'file', filename, content },
      ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    ]);
    return this.t.app.inject({
      method: 'POST',
      url: this.url('/documents/upload'),
      headers: { ...bearer(this.t.key), ...body.headers },
      payload: body.payload,
    });
  }

  async uploadOk(
    filename: string,
    content: string | Buffer,
    fields: Record<string, string> = {},
  ): Promise<DocumentBody> {
    const res = await this.upload(filename, content, fields);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<DocumentBody>();
  }

  index(id: string, body: Record<string, unknown> = {}) {
    return this.t.app.inject({
      method: 'POST',
      url: this.url(`/documents/${id}/index`),
      headers: bearer(this.t.key),
      payload: body,
    });
  }

  async indexOk(id: string, body: Record<string, unknown> = {}) {
    const res = await this.index(id, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ document: DocumentBody; chunkCount: number; embeddingModel: string }>();
  }

  get(path: string) {
    return this.t.app.inject({ method: 'GET', url: this.url(path), headers: bearer(this.t.key) });
  }

  delete(id: string) {
    return this.t.app.inject({
      method: 'DELETE',
      url: this.url(`/documents/${id}`),
      headers: bearer(this.t.key),
    });
  }

  async retrieve(body: Record<string, unknown>) {
    const res = await this.t.app.inject({
      method: 'POST',
      url: this.url('/retrieve'),
      headers: bearer(this.t.key),
      payload: body,
    });
    return res;
  }

  async hits(body: Record<string, unknown>) {
    const res = await this.retrieve(body);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{
      items: {
        id: string;
        documentId: string;
        documentName: string;
        sectionPath: string;
        page: number | null;
        content: string;
        score: number;
        source: string;
        model: string;
        projectId: string | null;
      }[];
    }>().items;
  }

  async waitFor(id: string, statuses: string[], timeoutMs = 20_000): Promise<DocumentBody> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const doc = (await this.get(`/documents/${id}`)).json<DocumentBody>();
      if (statuses.includes(doc.status)) return doc;
      if (Date.now() > deadline) throw new Error(`document ${id} stuck in ${doc.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** A converter command file with scripts the tests control (hang, crash, slow). */
export function fakeConverters(dir: string): string {
  const hang = converterScript(dir, 'hang.mjs', 'setInterval(() => {}, 1000);');
  const crash = converterScript(
    dir,
    'crash.mjs',
    "process.stderr.write('segfault in parser\\n'); process.kill(process.pid, 'SIGSEGV');",
  );
  const slow = slowConverter(dir, {
    ms: 700,
    markdown: '# Slow\n\nSlowly converted text about turtles.',
  });
  return commandsFile(dir, [
    { id: 'hang', description: 'hangs forever', script: hang },
    { id: 'crash', description: 'crashes', script: crash },
    { id: 'slow', description: 'takes 0.7 s', script: slow },
  ]);
}

export async function knowledgeApp(env: Record<string, string> = {}, dir?: string) {
  const t = await createTestApp({ env, ...(dir === undefined ? {} : { dir }) });
  return { t, k: new KnowledgeClient(t) };
}

export { startEmbeddingServer } from '../embedding-server.js';

/**
 * Rows any index holds for the document: chunks, vectors (every model's table) and, on SQLite,
 * the FTS5 rows (PostgreSQL keeps its tsvector in the chunk row).
 */
export async function indexRowCount(ctx: AppContext, documentId: string): Promise<number> {
  const { db } = ctx.database;
  const count = async (table: string) =>
    Number(
      (
        await sql<{
          n: number | string;
        }>`select count(*) as n from ${sql.table(table)} where document_id = ${documentId}`.execute(
          db,
        )
      ).rows[0]?.n ?? 0,
    );
  let total = await count('knowledge_chunks');
  const tables = await sql<{
    table_name: string;
  }>`select table_name from knowledge_vector_tables`.execute(db);
  for (const t of tables.rows) total += await count(t.table_name);
  if (ctx.database.driver === 'sqlite') total += await count('knowledge_chunks_fts');
  return total;
}

/** Whether the storage holds `key` (any driver). */
export async function storedFileExists(t: TestApp, key: string): Promise<boolean> {
  const slash = key.lastIndexOf('/');
  return (await t.ctx.knowledge.storage.list(key.slice(0, slash))).includes(key.slice(slash + 1));
}

/**
 * Inserts a document row in state `indexing` straight into a SQLite database (for tests that
 * drive a chunk store's `commitIndex` without the HTTP layer); returns its id and index token.
 */
export function insertIndexingDocument(
  native: SqliteDatabase['native'],
  projectId: string | null = null,
): { id: string; token: string } {
  const id = randomUUID();
  const token = randomUUID();
  const now = new Date().toISOString();
  native
    .prepare(
      `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id,
         project_key, version, status, checksum, size_bytes, file_path, index_token, created_at,
         updated_at)
       values (?, ?, 'md', 'text/markdown', 'upload', ?, ?, 0, 'indexing', ?, 0, ?, ?, ?, ?)`,
    )
    .run(id, `${id}.md`, projectId, projectId ?? '', id, id, token, now, now);
  return { id, token };
}

/**
 * Commits a new document (insertIndexingDocument) with the chunks `chunksOf(documentId)` through
 * the store's own `commitIndex`, and expects it committed; the document's id.
 */
export async function commitDocument(
  store: ChunkStore,
  native: SqliteDatabase['native'],
  vectors: { model: string; dimensions: number },
  chunksOf: (documentId: string) => NewChunk[],
  projectId: string | null = null,
): Promise<string> {
  const { id, token } = insertIndexingDocument(native, projectId);
  const outcome = await store.commitIndex({
    documentId: id,
    indexToken: token,
    ...vectors,
    chunks: chunksOf(id),
    document: { markdown_path: null, converter_command: null, converter_meta: null },
  });
  expect(outcome).toBe('committed');
  return id;
}

/**
 * A vector table held in memory, for the vector index's own tests: the index reads its rows'
 * exact vectors from it by chunk id, as the store's index reads its SQLite table.
 */
export class MemoryVectorTable implements VectorSource {
  private readonly stored = new Map<string, Float32Array>();
  reads = 0;
  /** Vectors asked for, over all reads. */
  vectorsRead = 0;

  /** Stores the rows' vectors (replacing a chunk's) and returns the rows, to add to an index. */
  put<T extends IndexRow>(rows: readonly T[]): readonly T[] {
    for (const row of rows) this.stored.set(row.chunkId, row.vector);
    return rows;
  }

  vectors(chunkIds: readonly string[]): Map<string, Float32Array> {
    this.reads++;
    this.vectorsRead += chunkIds.length;
    const found = new Map<string, Float32Array>();
    for (const id of chunkIds) {
      const vector = this.stored.get(id);
      if (vector !== undefined) found.set(id, vector);
    }
    return found;
  }
}

/** Another chunk store on the test app's database (the engine it runs on). */
export async function storeOf(ctx: AppContext): Promise<ChunkStore> {
  const { database } = ctx;
  if (database.driver === 'sqlite') return new SqliteChunkStore(database.native);
  const { PostgresChunkStore } =
    await import('../../src/knowledge/search/postgres/postgres-chunk-store.js');
  return new PostgresChunkStore(database.pool);
}
