/**
 * Wires the knowledge base (storage, chunk store, converter commands, embedder, services, the
 * indexing job, and the documents service's hooks to events and the job) and starts it: `start()`
 * is the start-up housekeeping the server runs before it listens.
 */
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { KnowledgeObserver } from '../metrics/observer.js';
import type { JobQueue } from '../queue/queue.js';
import {
  converterStatus,
  loadCommands,
  type ConverterCommand,
} from './indexing/converting/commands.js';
import {
  createPooledConverter,
  type PooledConverter,
} from './indexing/converting/pooled-converter.js';
import { DocumentsRepository } from './documents/documents.repository.js';
import { DocumentsService } from './documents/documents.service.js';
import { postgresDocumentSql, registerSqliteFilter, sqliteDocumentSql } from './filter/sql.js';
import { DocumentMarkdownService } from './markdown/markdown.service.js';
import { KnowledgeEvents } from './events/events.js';
import { createEmbeddingProvider, providerForModel } from './embeddings/index.js';
import { ModelSwitch } from './embeddings/model-switch.js';
import type { EmbeddingProvider } from './embeddings/provider.js';
import { IndexJob } from './indexing/index-job.js';
import { IndexPipeline } from './indexing/index-pipeline.js';
import { IndexingService } from './indexing/indexing.service.js';
import { IngestService } from './ingest/ingest.service.js';
import { createRerankProvider } from './rerank/index.js';
import { RetrievalService } from './retrieval/retrieval.service.js';
import type { ChunkStore } from './search/chunk-store.js';
import { SqliteChunkStore } from './search/sqlite/sqlite-chunk-store.js';
import { LocalStorage } from './storage/local-storage.js';
import { sweepScratch } from './storage/scratch.js';
import type { FileStorage } from './storage/storage.js';

/** Instances sharing the storage may be mid-upload: their files look orphaned this long. */
const SHARED_ORPHAN_GRACE_MS = 60_000;

export interface KnowledgeModule {
  storage: FileStorage;
  commands: readonly ConverterCommand[];
  embedder: EmbeddingProvider;
  documents: DocumentsService;
  indexing: IndexingService;
  retrieval: RetrievalService;
  /** Which embedding model answers semantic searches (a switch of model may be under way). */
  models: ModelSwitch;
  /** A document's converted markdown, whole or a page or chunk range (the markdown route). */
  markdown: DocumentMarkdownService;
  /** One-step, batch, text and URL ingest. */
  ingest: IngestService;
  /** Document events for live views (the events route). */
  events: KnowledgeEvents;
  /** Open events streams: heartbeat interval and cap per instance. */
  eventStreams: { heartbeatMs: number; maxStreams: number };
  uploadMaxBytes: number;
  batchMaxFiles: number;
  /** The convert function indexing uses, and the bundled converter's worker pool. */
  converter: PooledConverter;
  converterStatus(): ReturnType<typeof converterStatus>;
  /**
   * Start-up, before the server listens. With `recover` (not in read-only mode): stale scratch
   * files removed, files of deleted documents swept, runs a crash or restart interrupted queued
   * again. Then the search indexes are loaded (the first query should not pay for it; a failure
   * only delays it to the first search) and the embedding model starts loading in the background.
   * With `searchInBackground` (the server) the indexes load after start() returns: the server
   * listens at once, readiness says when they are loaded, and searches wait for them.
   */
  start(options: { recover: boolean; searchInBackground?: boolean }): Promise<void>;
  /**
   * Whether the search indexes are loaded (readiness). False until `start()` loaded them; when
   * that failed, each call while none is under way starts another load in the background.
   */
  searchReady(): boolean;
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

async function createChunkStore(
  config: Config,
  database: Database,
  log: FastifyBaseLogger,
): Promise<ChunkStore> {
  if (database.driver === 'sqlite') {
    const delayMs = config.knowledge.searchSnapshotDelayMs;
    const file = database.native.name;
    // An in-memory database has no directory to keep snapshots in.
    const snapshots =
      delayMs === null || file === ':memory:' || file === ''
        ? null
        : {
            databaseFile: file,
            delayMs,
            log: (message: string, fields?: Record<string, unknown>) => {
              log.info(fields, message);
            },
          };
    const annMin = config.knowledge.searchAnnMinVectors;
    return new SqliteChunkStore(database.native, {
      snapshots,
      vectors: { annMin: annMin ?? Number.POSITIVE_INFINITY },
      preread: config.knowledge.sqlitePreread ? { log } : null,
    });
  }
  const { PostgresChunkStore } = await import('./search/postgres/postgres-chunk-store.js');
  return new PostgresChunkStore(database.pool, { log });
}

export async function createKnowledgeModule(
  config: Config,
  database: Database,
  queue: JobQueue,
  log: FastifyBaseLogger,
  embedder: EmbeddingProvider = createEmbeddingProvider(config.embedding, log),
  /** Stage, embedding and search timings for the metrics; absent when metrics are off. */
  observer?: KnowledgeObserver,
): Promise<KnowledgeModule> {
  const scratchDir = join(config.dataDir, 'tmp');
  // Document lists evaluate filters with the SQLite functions the chunk store also registers.
  if (database.driver === 'sqlite') registerSqliteFilter(database.native);
  const storage = await createStorage(config, database, scratchDir);
  const repo = new DocumentsRepository(
    database.db,
    database.driver === 'sqlite' ? sqliteDocumentSql : postgresDocumentSql,
  );
  const store = await createChunkStore(config, database, log);
  // While the embedding model is being switched, the previous one keeps answering.
  const models = new ModelSwitch(
    embedder,
    store,
    (model) => providerForModel(model, config.embedding, log),
    log,
  );
  const commands = loadCommands(config.knowledge);
  const converter = createPooledConverter(config.knowledge);
  const pipeline = new IndexPipeline({
    repo,
    store,
    storage,
    embedder,
    models,
    commands,
    convert: converter.convert,
    config: config.knowledge,
    scratchDir,
    log,
    ...(observer === undefined ? {} : { observer }),
  });
  const events = new KnowledgeEvents(
    repo,
    log,
    database.driver === 'postgres' ? database.pool : undefined,
  );
  const job = new IndexJob({ pipeline, repo, dataDir: config.dataDir, log, events });
  job.register(queue);
  const indexing = new IndexingService({ repo, queue, commands, log, events });
  const documents = new DocumentsService(repo, store, storage, log, {
    cancelIndexing: (id) => {
      job.cancel(id);
    },
    announce: (type, document) => {
      events.announce(type, document);
      // A deletion may complete a switch of the embedding model.
      if (type === 'document.deleted') models.changed();
    },
  });
  const reranker = createRerankProvider(config.rerank, config.embedding.modelDir);
  const retrieval = new RetrievalService(store, embedder, log, {
    hybridCandidates: config.knowledge.hybridCandidates,
    reranker,
    rerankCandidates: config.rerank.candidates,
    rerankTimeoutMs: config.rerank.timeoutMs,
    models,
    documentsOf: (projects) => documents.idsInProjects(projects),
    ...(observer === undefined ? {} : { observer }),
  });
  const ingest = new IngestService({
    documents,
    indexing,
    storage,
    uploadMaxBytes: config.knowledge.uploadMaxBytes,
    urlTimeoutMs: config.knowledge.urlTimeoutMs,
    urlAllowPrivate: config.knowledge.urlAllowPrivate,
    log,
  });

  async function recover(): Promise<void> {
    const swept = await sweepScratch(scratchDir, { singleHost: queue.driver === 'memory' });
    if (swept > 0) log.info({ entries: swept }, 'removed scratch files left by stopped processes');
    if (queue.driver === 'memory') await documents.sweepOrphanFiles();
    else {
      // Other instances may be mid-upload: orphans are confirmed after a grace, in the background.
      void documents.sweepOrphanFiles(SHARED_ORPHAN_GRACE_MS).catch((error: unknown) => {
        log.warn({ err: error }, 'sweeping orphan files failed');
      });
    }
    await indexing.recoverInterrupted();
    const purges = await documents.resumePurges();
    if (purges > 0) log.info({ documents: purges }, 'purging documents deleted before the stop');
  }

  const search = { started: false, loaded: false, loading: false };
  /** Set by close(): what fails from then on was stopped, not broken. */
  let closing = false;
  async function warmSearch(): Promise<void> {
    const start = performance.now();
    search.loading = true;
    try {
      const chunks = await retrieval.warm();
      search.loaded = true;
      if (chunks > 0) {
        log.info({ chunks, ms: Math.round(performance.now() - start) }, 'search indexes loaded');
      }
    } catch (error) {
      log.warn({ err: error }, 'loading the search indexes failed; the first search retries');
    } finally {
      search.loading = false;
    }
  }

  return {
    storage,
    commands,
    embedder,
    documents,
    indexing,
    retrieval,
    models,
    markdown: new DocumentMarkdownService(documents, storage),
    ingest,
    events,
    eventStreams: {
      heartbeatMs: config.knowledge.eventsHeartbeatMs,
      maxStreams: config.knowledge.eventsMaxStreams,
    },
    uploadMaxBytes: config.knowledge.uploadMaxBytes,
    batchMaxFiles: config.knowledge.batchMaxFiles,
    converterStatus: () => converterStatus(config.knowledge),
    async start({ recover: shouldRecover, searchInBackground = false }) {
      if (shouldRecover) await recover();
      // Which model answers (a switch of the embedding model may be under way), before the
      // search copies of that model load.
      await models.refresh().catch((error: unknown) => {
        log.warn({ err: error }, 'counting the embedding models’ vectors failed');
      });
      search.started = true;
      if (searchInBackground) void warmSearch();
      else await warmSearch();
      // Loads (on the very first start, builds) the embedding model in the background.
      // A shutdown during the load ends it: that is no failure of the model.
      for (const model of new Set([embedder, models.serving()])) {
        model.ready().catch((error: unknown) => {
          if (closing) log.debug({ err: error }, 'the embedding model stopped loading: closing');
          else
            log.error(
              { err: error, model: model.model },
              'the embedding model could not be loaded',
            );
        });
      }
      // The reranking model too: a missing one is reported now; answers then keep the fused order.
      reranker?.ready().catch((error: unknown) => {
        if (closing) log.debug({ err: error }, 'the reranking model stopped loading: closing');
        else log.error({ err: error }, 'the reranking model could not be loaded');
      });
    },
    searchReady() {
      if (!search.loaded && search.started && !search.loading) void warmSearch();
      return search.loaded;
    },
    converter,
    async close() {
      closing = true;
      await documents.close();
      await events.close();
      await models.close();
      await Promise.all([embedder.close(), reranker?.close(), converter.close(), store.close?.()]);
    },
  };
}
