/** Schemas of the health routes: validation, types and OpenAPI in one place. */
import { Type } from 'typebox';

const LaneSchema = Type.Object({
  queued: Type.Integer(),
  running: Type.Integer(),
  completed: Type.Integer(),
  failed: Type.Integer(),
});

export const HealthSchema = Type.Object({
  status: Type.Enum(['ok', 'degraded']),
  mode: Type.Enum(['normal', 'read_only']),
  queueDriver: Type.String(),
  queue: Type.Object({
    agentRunConcurrency: Type.Integer(),
    toolExecuteConcurrency: Type.Integer(),
    totalJobs: Type.Integer({ description: 'Queued + running + completed + failed since start.' }),
    queuedJobs: Type.Integer(),
    runningJobs: Type.Integer(),
    completedJobs: Type.Integer(),
    failedJobs: Type.Integer(),
    byType: Type.Object(
      { agentRun: LaneSchema, toolExecute: LaneSchema },
      { additionalProperties: LaneSchema, description: 'One entry per job type.' },
    ),
  }),
  migration: Type.Object({
    status: Type.Enum(['ok', 'degraded']),
    pendingCount: Type.Integer(),
    appliedCount: Type.Integer(),
    errorMessage: Type.Union([Type.String(), Type.Null()]),
  }),
});

export const ReadySchema = Type.Object({
  status: Type.Literal('ready'),
  databaseDriver: Type.Enum(['sqlite', 'postgres']),
  databaseLatencyMs: Type.Integer({ description: 'How long the last database check took.' }),
  checkedAt: Type.String({
    format: 'date-time',
    description: 'When the database was last checked (a check is reused for READY_CHECK_CACHE_MS).',
  }),
});
