/**
 * The server's Prometheus metrics: a registry of its own (never prom-client's global one), the
 * families observed as things happen (jobs, indexing stages, embedding calls, searches, database
 * errors), Node's own (event-loop lag, memory, CPU, GC: `collectDefaultMetrics`, prefixed `aps_`)
 * and the HTTP request families (request-metrics.ts). The gauges read from a database or from
 * live state are computed when scraped (collectors.ts). Made only when metrics are configured
 * (METRICS_TOKEN or METRICS_PORT): otherwise nothing is counted and nothing is hooked.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { JobObserver, KnowledgeObserver } from './observer.js';
import { RequestMetrics } from './request-metrics.js';

/** Route patterns the request families leave out: the scrape itself. */
export const METRICS_PATH = '/metrics';

/** Buckets of durations from 5 ms to 30 min (jobs, indexing stages). */
const LONG_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
/** Buckets of durations from 1 ms to 30 s (searches, embedding calls). */
const SHORT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Why a database call failed, as counted in `aps_database_errors_total`. */
export type DatabaseErrorKind = 'unavailable' | 'connection';

export interface Metrics {
  readonly registry: Registry;
  /** The HTTP request families (the http plugin's onResponse hook records into it). */
  readonly requests: RequestMetrics;
  /** Passed to the knowledge base: stages, embedding calls, searches. */
  readonly knowledge: KnowledgeObserver;
  /** Passed to the job queue: each job's duration by lane and outcome. */
  readonly jobs: JobObserver;
  /** A database call failed (an outage answered 503, or a pooled connection broke). */
  databaseError(kind: DatabaseErrorKind): void;
  /** The whole exposition: the registry's families, then the HTTP ones. */
  text(): Promise<string>;
  /** The exposition's media type (Prometheus text format 0.0.4). */
  readonly contentType: string;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'aps_' });
  const registers = [registry];
  const jobDuration = new Histogram({
    name: 'aps_queue_job_duration_seconds',
    help: 'Time a job ran on this instance, by lane (job type) and outcome (completed, failed).',
    labelNames: ['lane', 'outcome'] as const,
    buckets: LONG_BUCKETS,
    registers,
  });
  const stageDuration = new Histogram({
    name: 'aps_index_stage_duration_seconds',
    help: 'Time of each stage of an indexing run: convert, chunk, embed, index (the commit).',
    labelNames: ['stage'] as const,
    buckets: LONG_BUCKETS,
    registers,
  });
  const embedding = new Histogram({
    name: 'aps_embedding_batch_duration_seconds',
    help: "Time of one call of the embedding provider: a part of a document's chunks (documents) or a search query (query).",
    labelNames: ['kind'] as const,
    buckets: SHORT_BUCKETS,
    registers,
  });
  const search = new Histogram({
    name: 'aps_search_duration_seconds',
    help: 'Time to answer a retrieval, by mode (keyword, semantic, hybrid).',
    labelNames: ['mode'] as const,
    buckets: SHORT_BUCKETS,
    registers,
  });
  const databaseErrors = new Counter({
    name: 'aps_database_errors_total',
    help: 'Database failures: requests answered 503 DATABASE_UNAVAILABLE (unavailable), pooled PostgreSQL connections that broke while idle (connection).',
    labelNames: ['kind'] as const,
    registers,
  });
  // Both kinds exist from the start, so an alert on their rate sees a zero, not no series.
  databaseErrors.inc({ kind: 'unavailable' }, 0);
  databaseErrors.inc({ kind: 'connection' }, 0);
  const requests = new RequestMetrics(new Set([METRICS_PATH]));

  return {
    registry,
    requests,
    knowledge: {
      indexStage: (stage, seconds) => {
        stageDuration.observe({ stage }, seconds);
      },
      embeddingBatch: (kind, seconds) => {
        embedding.observe({ kind }, seconds);
      },
      search: (mode, seconds) => {
        search.observe({ mode }, seconds);
      },
    },
    jobs: (lane, outcome, seconds) => {
      jobDuration.observe({ lane, outcome }, seconds);
    },
    databaseError: (kind) => {
      databaseErrors.inc({ kind });
    },
    async text() {
      return `${await registry.metrics()}\n${requests.text()}`;
    },
    contentType: registry.contentType,
  };
}
