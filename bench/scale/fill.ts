/**
 * Fills a data directory with synthetic chunks fast, through the store's own write path: an
 * in-process server over the directory (migrations, the first key), then per document one row
 * inserted as an upload would leave it (`indexing`, with a run token) and one
 * `ChunkStore.commitIndex` of its chunks, embedded by the server's own embedder. No HTTP, no
 * converter, no chunker: what is measured later is search, not ingestion.
 */
import { createHash, randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config.js';
import type { ChunkStore, NewChunk } from '../../src/knowledge/search/chunk-store.js';
import { startServer } from '../../src/server.js';
import { DEFAULT_EMBEDDING_CACHE } from '../retrieval/harness.js';
import type { SentenceGenerator } from '../retrieval/synthetic.js';

export interface FillResult {
  chunks: number;
  documents: number;
  seconds: number;
}

/** The settings every server of this benchmark runs with. */
export function benchEnv(dataDir: string, key: string): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    NODE_ENV: 'test',
    LOG_LEVEL: 'error',
    BOOTSTRAP_API_KEY: key,
    EMBEDDING_CACHE_DIR: DEFAULT_EMBEDDING_CACHE,
    MAX_CONNECTIONS_PER_CLIENT: '0',
  };
}

/** The markdown section's title line and body, as the chunker would cut them. */
function chunkOf(generator: SentenceGenerator, n: number, part: number): [string, string] {
  const [heading = '', , body = ''] = generator
    .section(`S${String(n).padStart(7, '0')}`)
    .split('\n');
  return [`Synthetic corpus part ${part} > ${heading.slice(3)}`, body];
}

/** Adds `chunks` synthetic chunks in documents of `perDocument`; logs progress with `log`. */
export async function fill(
  dataDir: string,
  key: string,
  generator: SentenceGenerator,
  chunks: number,
  perDocument: number,
  log: (line: string) => void,
): Promise<FillResult> {
  // No approximate graph while filling: the servers measured build it.
  const env = { ...benchEnv(dataDir, key), PORT: '0', SEARCH_ANN_MIN_VECTORS: '-1' };
  const config = loadConfig(env, dataDir);
  const server = await startServer(config, { print: () => undefined });
  const started = performance.now();
  let documents = 0;
  try {
    const { embedder, retrieval } = server.ctx.knowledge;
    await embedder.ready();
    const store = (retrieval as unknown as { store: ChunkStore }).store;
    const database = server.ctx.database;
    if (database.driver !== 'sqlite') throw new Error('bench:scale fills SQLite only');
    const insert = database.native.prepare(
      `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id,
         project_key, version, status, checksum, size_bytes, file_path, index_token, created_at,
         updated_at)
       values (?, ?, 'md', 'text/markdown', 'upload', null, '', 0, 'indexing', ?, 0, ?, ?, ?, ?)`,
    );
    let last = performance.now();
    for (let first = 0; first < chunks; first += perDocument, documents++) {
      const count = Math.min(perDocument, chunks - first);
      const id = randomUUID();
      const token = randomUUID();
      const now = new Date().toISOString();
      insert.run(id, `synthetic-${documents}.md`, `bench:${id}`, `bench/${id}`, token, now, now);
      const texts = Array.from({ length: count }, (_, i) =>
        chunkOf(generator, first + i, documents),
      );
      const vectors = await embedder.embedDocuments(texts.map(([s, c]) => `${s}\n\n${c}`));
      const rows: NewChunk[] = texts.map(([sectionPath, content], i) => ({
        id: randomUUID(),
        chunkIndex: i,
        sectionPath,
        page: null,
        content,
        tokenEstimate: Math.ceil(content.length / 4),
        metadata: {},
        contentHash: createHash('sha256').update(content).digest('hex'),
        vector: vectors[i]!,
      }));
      const outcome = await store.commitIndex({
        documentId: id,
        indexToken: token,
        model: embedder.model,
        dimensions: embedder.dimensions,
        chunks: rows,
        document: { markdown_path: null, converter_command: null, converter_meta: null },
      });
      if (outcome !== 'committed') throw new Error(`commit of ${id}: ${outcome}`);
      if (performance.now() - last > 10_000) {
        last = performance.now();
        const done = first + count;
        const rate = done / ((last - started) / 1000);
        log(`fill: ${done} / ${chunks} chunks (${Math.round(rate)} chunks/s)`);
      }
    }
  } finally {
    await server.close();
  }
  return { chunks, documents, seconds: (performance.now() - started) / 1000 };
}
