/**
 * Everything the server runs on, started in order: secrets, database, migration safety check,
 * job queue, services. Shared by `aps serve`, the CLI's key commands and the HTTP tests.
 */
import { ApiKeyRepository } from './auth/api-key.repository.js';
import { AuditRepository } from './audit/audit.repository.js';
import { AuditService } from './audit/audit.service.js';
import { ApiKeyService } from './auth/api-key.service.js';
import { SqliteRevocations, type RevocationGeneration } from './auth/revocations.js';
import { TokenService } from './auth/token.service.js';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/database.js';
import { MIGRATIONS } from './db/migrations/index.js';
import { migrate, type Migration, type MigrationState } from './db/migrator.js';
import { INDEX_JOB } from './knowledge/indexing/index-job.js';
import { createKnowledgeModule, type KnowledgeModule } from './knowledge/knowledge.module.js';
import type { EmbeddingProvider } from './knowledge/embeddings/provider.js';
import { createLogger } from './logger.js';
import { registerCollectors } from './metrics/collectors.js';
import { createMetrics, type Metrics } from './metrics/metrics.js';
import { Readiness } from './health/readiness.js';
import { MemoryQueue } from './queue/memory-queue.js';
import { observeJobs } from './queue/observed-jobs.js';
import type { FastifyBaseLogger } from 'fastify';
import type { DestinationStream } from 'pino';
import type { JobQueue } from './queue/queue.js';
import { resolveSecrets, type Secrets } from './secrets.js';

export interface AppContext {
  config: Config;
  secrets: Secrets;
  database: Database;
  migration: MigrationState;
  /** True when the migration safety check failed: every state-changing request answers 503. */
  readOnly: boolean;
  queue: JobQueue;
  log: FastifyBaseLogger;
  knowledge: KnowledgeModule;
  apiKeys: ApiKeyService;
  tokens: TokenService;
  /** The audit trail (audit/). */
  audit: AuditService;
  /** Prometheus metrics (METRICS_TOKEN or METRICS_PORT); null: off, nothing counted. */
  metrics: Metrics | null;
  close(): Promise<void>;
}

export interface ContextOptions {
  /** The migrations to apply; tests pass failing or extra ones. */
  migrations?: readonly Migration[];
  /** Where logs go (tests capture them); default stdout. */
  logStream?: DestinationStream;
  /** Whether `logStream` is a terminal (LOG_FORMAT=auto then writes readable lines). */
  logIsTTY?: boolean;
  /** Replaces the configured embedding provider (tests and benchmarks). */
  embedder?: EmbeddingProvider;
}

/** In-process lanes on SQLite; a queue shared by every instance on PostgreSQL. */
async function createQueue(
  config: Config,
  database: Database,
  log: FastifyBaseLogger,
): Promise<JobQueue> {
  const concurrency = {
    agentRun: config.queue.agentRunConcurrency,
    toolExecute: config.queue.toolExecuteConcurrency,
    [INDEX_JOB]: config.knowledge.indexConcurrency,
  };
  if (database.driver === 'sqlite') return new MemoryQueue(concurrency, config.queue.historyLimit);
  const { PostgresQueue } = await import('./queue/postgres/queue.js');
  return new PostgresQueue(database.pool, concurrency, {
    leaseMs: config.queue.leaseMs,
    historyLimit: config.queue.historyLimit,
    log,
  });
}

/** How verified keys learn of revocations: data_version on SQLite, LISTEN on PostgreSQL. */
async function createRevocations(
  database: Database,
  log: FastifyBaseLogger,
): Promise<RevocationGeneration> {
  if (database.driver === 'sqlite') return new SqliteRevocations(database.native);
  const { PostgresRevocations } = await import('./auth/revocations-postgres.js');
  return new PostgresRevocations(database.pool, log);
}

export async function createContext(
  config: Config,
  options: ContextOptions = {},
): Promise<AppContext> {
  const log = createLogger(config, options.logStream, options.logIsTTY);
  const secrets = resolveSecrets(config);
  const database = await openDatabase(config.database);
  const migration = await migrate(database, options.migrations ?? MIGRATIONS);
  const readOnly = migration.status !== 'ok';
  const { token, port } = config.metrics;
  const metrics = token === null && port === null ? null : createMetrics();
  const created = await createQueue(config, database, log);
  const queue = metrics === null ? created : observeJobs(created, metrics.jobs);
  const revocations = await createRevocations(database, log);
  const apiKeys = new ApiKeyService(
    new ApiKeyRepository(database.db),
    secrets.apiKeySalt,
    () => readOnly,
    revocations,
  );
  const tokens = new TokenService(secrets.jwtSecret, config.jwtTtlSeconds, apiKeys, {
    maxSessionSeconds: config.jwtMaxSessionSeconds,
  });
  const audit = new AuditService(new AuditRepository(database.db), log, () => readOnly);
  const knowledge = await createKnowledgeModule(
    config,
    database,
    queue,
    log,
    options.embedder,
    metrics?.knowledge,
  );
  if (metrics !== null) watch(metrics, { config, database, migration, queue, knowledge });
  return {
    config,
    secrets,
    database,
    migration,
    readOnly,
    queue,
    log,
    knowledge,
    apiKeys,
    tokens,
    audit,
    metrics,
    async close() {
      await queue.close();
      await revocations.close();
      await knowledge.close();
      await audit.close();
      await database.close();
    },
  };
}

/** The scrape-time sources of the metrics (collectors.ts), and the database's broken connections. */
function watch(
  metrics: Metrics,
  ctx: Pick<AppContext, 'config' | 'database' | 'migration' | 'queue' | 'knowledge'>,
): void {
  const { database, knowledge } = ctx;
  const readiness = new Readiness({
    database,
    migration: ctx.migration,
    searchReady: () => knowledge.searchReady(),
    timeoutMs: ctx.config.readiness.timeoutMs,
    cacheMs: ctx.config.readiness.cacheMs,
  });
  const pool = database.driver === 'postgres' ? database.pool : null;
  pool?.on('error', () => {
    metrics.databaseError('connection');
  });
  registerCollectors(metrics.registry, {
    queue: () => ctx.queue.stats(),
    documents: async () => {
      const { uploaded, indexing, indexed, failed } = await knowledge.documents.status(
        knowledge.models.serving().model,
      );
      return { uploaded, indexing, indexed, failed };
    },
    chunks: () => knowledge.documents.chunkCount(),
    converter: () => knowledge.converter.pool?.stats() ?? null,
    ...(pool === null
      ? {}
      : {
          databasePool: () => ({
            total: pool.totalCount,
            idle: pool.idleCount,
            waiting: pool.waitingCount,
          }),
        }),
    sseClients: () => knowledge.events.subscribers,
    ready: () =>
      readiness.check().then(
        () => true,
        () => false,
      ),
  });
}
