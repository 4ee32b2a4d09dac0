/**
 * Everything the server runs on, started in order: secrets, database, migration safety check,
 * job queue, services. Shared by `aps serve`, the CLI's key commands and the HTTP tests.
 */
import { ApiKeyRepository } from './auth/api-key.repository.js';
import { ApiKeyService } from './auth/api-key.service.js';
import { TokenService } from './auth/token.service.js';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/database.js';
import { MIGRATIONS } from './db/migrations/index.js';
import { migrate, type Migration, type MigrationState } from './db/migrator.js';
import { MemoryQueue } from './queue/memory-queue.js';
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
  apiKeys: ApiKeyService;
  tokens: TokenService;
  close(): Promise<void>;
}

export interface ContextOptions {
  /** The migrations to apply; tests pass failing or extra ones. */
  migrations?: readonly Migration[];
}

export async function createContext(
  config: Config,
  options: ContextOptions = {},
): Promise<AppContext> {
  const secrets = resolveSecrets(config);
  const database = openDatabase(config.database);
  const migration = await migrate(database, options.migrations ?? MIGRATIONS);
  const readOnly = migration.status !== 'ok';
  const queue = new MemoryQueue(
    {
      agentRun: config.queue.agentRunConcurrency,
      toolExecute: config.queue.toolExecuteConcurrency,
    },
    config.queue.historyLimit,
  );
  const apiKeys = new ApiKeyService(
    new ApiKeyRepository(database.db),
    secrets.apiKeySalt,
    () => readOnly,
  );
  const tokens = new TokenService(secrets.jwtSecret, config.jwtTtlSeconds, apiKeys);
  return {
    config,
    secrets,
    database,
    migration,
    readOnly,
    queue,
    apiKeys,
    tokens,
    async close() {
      await queue.close();
      await database.close();
    },
  };
}
