/** Wires the knowledge base: storage, chunk store, converter commands, embedder and services. */
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { JobQueue } from '../queue/queue.js';
import { converterStatus, loadCommands, type ConverterCommand } from './converting/commands.js';
import { runConverter } from './converting/runner.js';
import { DocumentsRepository } from './documents.repository.js';
import { DocumentsService } from './documents.service.js';
import { createEmbeddingProvider } from './embeddings/index.js';
import type { EmbeddingProvider } from './embeddings/provider.js';
import { IndexingService } from './indexing.service.js';
import { RetrievalService } from './retrieval.service.js';
import type { ChunkStore } from './search/chunk-store.js';
import { SqliteChunkStore } from './search/sqlite/sqlite-chunk-store.js';
import { LocalStorage } from './storage/local-storage.js';
import type { FileStorage } from './storage/storage.js';

export interface KnowledgeModule {
  storage: FileStorage;
  /** Local directory for uploads being received and converter output. */
  scratchDir: string;
  commands: readonly ConverterCommand[];
  embedder: EmbeddingProvider;
  documents: DocumentsService;
  indexing: IndexingService;
  retrieval: RetrievalService;
  uploadMaxBytes: number;
  converterStatus(): ReturnType<typeof converterStatus>;
  close(): Promise<void>;
}

// The PostgreSQL drivers are loaded only when configured: the embedded default never loads them.
async function createStorage(
  config: Config,
  database: Database,
  scratchDir: string,
): Promise<FileStorage> {
  if (config.storage.driver === 'local') return new LocalStorage(config.dataDir, scratchDir);
  if (database.driver !== 'postgres') throw new Error('STORAGE_DRIVER=postgres needs PostgreSQL');
  const { PostgresStorage } = await import('./storage/postgres-storage.js');
  return new PostgresStorage(database.pool, scratchDir);
}

async function createChunkStore(database: Database): Promise<ChunkStore> {
  if (database.driver === 'sqlite') return new SqliteChunkStore(database.native);
  const { PostgresChunkStore } = await import('./search/postgres/postgres-chunk-store.js');
  return new PostgresChunkStore(database.pool);
}

export async function createKnowledgeModule(
  config: Config,
  database: Database,
  queue: JobQueue,
  log: FastifyBaseLogger,
  embedder: EmbeddingProvider = createEmbeddingProvider(config.embedding),
): Promise<KnowledgeModule> {
  const scratchDir = join(config.dataDir, 'tmp');
  const storage = await createStorage(config, database, scratchDir);
  const repo = new DocumentsRepository(database.db);
  const store = await createChunkStore(database);
  const commands = loadCommands(config.knowledge);
  const indexing = new IndexingService({
    repo,
    store,
    storage,
    queue,
    embedder,
    commands,
    convert: runConverter,
    config: config.knowledge,
    dataDir: config.dataDir,
    scratchDir,
    log,
  });
  const documents = new DocumentsService(repo, store, storage, log, (id) => {
    indexing.cancel(id);
  });
  return {
    storage,
    scratchDir,
    commands,
    embedder,
    documents,
    indexing,
    retrieval: new RetrievalService(store, embedder, log),
    uploadMaxBytes: config.knowledge.uploadMaxBytes,
    converterStatus: () => converterStatus(config.knowledge),
    close: () => embedder.close(),
  };
}
