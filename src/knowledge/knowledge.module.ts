/** Wires the knowledge base: storage, chunk store, converter commands, embedder and services. */
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { converterStatus, loadCommands, type ConverterCommand } from '../converter/commands.js';
import { runConverter } from '../converter/runner.js';
import type { Database } from '../db/database.js';
import type { JobQueue } from '../queue/queue.js';
import { DocumentsRepository } from './documents.repository.js';
import { DocumentsService } from './documents.service.js';
import { createEmbeddingProvider } from './embeddings/index.js';
import type { EmbeddingProvider } from './embeddings/provider.js';
import { IndexingService } from './indexing.service.js';
import { RetrievalService } from './retrieval.service.js';
import { SqliteChunkStore } from './search/sqlite-chunk-store.js';
import { LocalStorage } from './storage/local-storage.js';
import type { FileStorage } from './storage/storage.js';

export interface KnowledgeModule {
  storage: FileStorage;
  commands: readonly ConverterCommand[];
  embedder: EmbeddingProvider;
  documents: DocumentsService;
  indexing: IndexingService;
  retrieval: RetrievalService;
  uploadMaxBytes: number;
  converterStatus(): ReturnType<typeof converterStatus>;
  close(): Promise<void>;
}

export function createKnowledgeModule(
  config: Config,
  database: Database,
  queue: JobQueue,
  log: FastifyBaseLogger,
  embedder: EmbeddingProvider = createEmbeddingProvider(config.embedding),
): KnowledgeModule {
  const storage = new LocalStorage(config.dataDir);
  const repo = new DocumentsRepository(database.db);
  const store = new SqliteChunkStore(database.native);
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
    log,
  });
  const documents = new DocumentsService(repo, store, storage, log, (id) => {
    indexing.cancel(id);
  });
  return {
    storage,
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
