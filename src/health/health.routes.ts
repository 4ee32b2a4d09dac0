/**
 * GET /health (liveness): public, unprefixed, always 200; answers from memory, never from the
 * database. GET /health/ready (readiness): 200 when this instance can serve, 503 otherwise.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import type { MigrationState } from '../db/migrator.js';
import { described, errorResponses } from '../http/schemas.js';
import { HealthSchema, ReadySchema } from './health.schemas.js';
import { pollingLogLevel } from '../logger.js';
import type { JobQueue, LaneCounts } from '../queue/queue.js';
import { Readiness } from './readiness.js';

type HealthDeps = Pick<AppContext, 'queue' | 'migration' | 'database' | 'knowledge' | 'config'>;

function healthReport({ queue, migration }: { queue: JobQueue; migration: MigrationState }) {
  const stats = queue.stats();
  const lane = (type: string): LaneCounts => {
    const l = stats.byType[type];
    return {
      queued: l?.queued ?? 0,
      running: l?.running ?? 0,
      completed: l?.completed ?? 0,
      failed: l?.failed ?? 0,
    };
  };
  const byType = Object.fromEntries(Object.keys(stats.byType).map((type) => [type, lane(type)]));
  const readOnly = migration.status !== 'ok';
  return {
    status: readOnly ? ('degraded' as const) : ('ok' as const),
    mode: readOnly ? ('read_only' as const) : ('normal' as const),
    queueDriver: stats.driver,
    queue: {
      agentRunConcurrency: stats.byType.agentRun?.concurrency ?? 0,
      toolExecuteConcurrency: stats.byType.toolExecute?.concurrency ?? 0,
      totalJobs: stats.totalJobs,
      queuedJobs: stats.queuedJobs,
      runningJobs: stats.runningJobs,
      completedJobs: stats.completedJobs,
      failedJobs: stats.failedJobs,
      byType: { ...byType, agentRun: lane('agentRun'), toolExecute: lane('toolExecute') },
    },
    migration: {
      status: migration.status,
      pendingCount: migration.pending.length,
      appliedCount: migration.applied.length,
      errorMessage: migration.errorMessage,
    },
  };
}

export const healthRoutes: FastifyPluginAsyncTypebox<HealthDeps> = async (app, deps) => {
  // Load balancers poll these every few seconds: their request lines are debug, not info.
  const logLevel = pollingLogLevel(app.log.level);
  app.get(
    '/health',
    {
      logLevel,
      config: { access: 'public', mutates: false },
      schema: {
        summary: 'Runtime mode, job-queue statistics and migration status',
        tags: ['core'],
        security: [],
        response: {
          200: described('Always 200: mode, queue and migration state.', HealthSchema),
        },
      },
    },
    () => healthReport(deps),
  );

  const readiness = new Readiness({
    database: deps.database,
    migration: deps.migration,
    searchReady: () => deps.knowledge.searchReady(),
    timeoutMs: deps.config.readiness.timeoutMs,
    cacheMs: deps.config.readiness.cacheMs,
  });
  app.get(
    '/health/ready',
    {
      logLevel,
      config: { access: 'public', mutates: false },
      schema: {
        summary: 'Readiness: whether this instance can serve requests now',
        description:
          'For load balancers and orchestrators (liveness is `/health`). 200 when the database answers, the migrations succeeded and the search indexes are loaded; otherwise 503 with the error body: `DATABASE_UNAVAILABLE`, `READ_ONLY_MODE` or `NOT_READY`.',
        tags: ['core'],
        security: [],
        response: {
          200: described(
            'Ready: database reachable, migrations applied, search indexes loaded.',
            ReadySchema,
          ),
          ...errorResponses(503),
        },
      },
    },
    () => readiness.check(),
  );
};
