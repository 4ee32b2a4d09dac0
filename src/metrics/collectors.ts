/**
 * The gauges (and counters kept elsewhere) computed when Prometheus scrapes, from the state the
 * server keeps anyway: the queue's counts, the documents by status and the chunks (two grouped
 * counts, not a query per request), the converter pool, the database pool, the event streams,
 * load shedding and readiness. A source that fails (the database is away) leaves its family
 * empty for that scrape instead of failing the whole scrape: `aps_ready` then says 0.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PoolStats } from '../knowledge/indexing/converting/worker-pool.js';
import type { QueueStats } from '../queue/queue.js';

/** Where the scrape-time figures come from (context.ts and app.ts wire them). */
export interface MetricSources {
  queue: () => QueueStats;
  /** Documents by status (uploaded, indexing, indexed, failed). */
  documents: () => Promise<Record<string, number>>;
  /** Current chunks, all documents. */
  chunks: () => Promise<number>;
  /** Null: no pool (KNOWLEDGE_CONVERTER_PATH runs a process per conversion). */
  converter: () => PoolStats | null;
  /**
   * PostgreSQL's pool (pg: totalCount, idleCount, waitingCount). Absent on SQLite, and so are
   * its families: one connection used synchronously, never "in use" between two turns of the
   * event loop, and nothing ever waits for it.
   */
  databasePool?: () => { total: number; idle: number; waiting: number };
  /** Open event streams (server-sent events) of this instance. */
  sseClients: () => number;
  /** Whether GET /health/ready would answer 200 (its cached database check). */
  ready: () => Promise<boolean>;
}

/** The load-shedding figures (http/load-shedding.ts), bound once the app exists. */
export interface SheddingSource {
  readonly inFlight: number;
  readonly shed: number;
}

/** A gauge whose values are set by `read` at each scrape; empty when `read` fails. */
function gauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: (set: (labels: Partial<Record<L, string>>, value: number) => void) => Promise<void> | void,
): void {
  new Gauge<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        await read((labels, value) => {
          this.set(labels, value);
        });
      } catch {
        this.reset();
      }
    },
  });
}

/** A counter kept elsewhere as a running total, copied at each scrape. */
function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => [Partial<Record<L, string>>, number][],
): void {
  new Counter<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.inc(labels, value);
    },
  });
}

/** Registers the scrape-time families of the context's sources. */
export function registerCollectors(registry: Registry, sources: MetricSources): void {
  gauge(
    registry,
    'aps_queue_jobs',
    'Jobs by lane and state: queued (waiting for a slot) and running (PostgreSQL: all instances, refreshed every second or two).',
    ['lane', 'state'],
    (set) => {
      for (const [lane, counts] of Object.entries(sources.queue().byType)) {
        set({ lane, state: 'queued' }, counts.queued);
        set({ lane, state: 'running' }, counts.running);
      }
    },
  );
  gauge(
    registry,
    'aps_documents',
    'Knowledge documents by status (uploaded, indexing, indexed, failed).',
    ['status'],
    async (set) => {
      for (const [status, count] of Object.entries(await sources.documents())) {
        set({ status }, count);
      }
    },
  );
  gauge(registry, 'aps_chunks', 'Current chunks of all documents.', [], async (set) => {
    set({}, await sources.chunks());
  });
  gauge(
    registry,
    'aps_converter_workers',
    'Converter worker pool: the size allowed (max), the runs holding a worker (busy), the runs waiting for one (queued).',
    ['state'],
    (set) => {
      const pool = sources.converter();
      if (pool === null) return;
      set({ state: 'max' }, pool.size);
      set({ state: 'busy' }, pool.busy);
      set({ state: 'queued' }, pool.queued);
    },
  );
  counter(
    registry,
    'aps_converter_worker_starts_total',
    'Converter worker processes started: the first ones and each replacement (after a kill, a crash or CONVERTER_WORKER_MAX_JOBS).',
    [],
    () => [[{}, sources.converter()?.started ?? 0]],
  );
  counter(
    registry,
    'aps_converter_worker_kills_total',
    'Converter workers killed, by reason: timeout (CONVERTER_TIMEOUT_MS), memory (CONVERTER_WORKER_MAX_MEMORY_MB), overflow (CONVERTER_MAX_OUTPUT_BYTES), aborted (the run was cancelled).',
    ['reason'],
    () => Object.entries(sources.converter()?.killed ?? {}).map(([reason, n]) => [{ reason }, n]),
  );
  const pool = sources.databasePool;
  if (pool !== undefined) {
    gauge(
      registry,
      'aps_db_pool_connections',
      'PostgreSQL connection pool of this instance: connections in use and idle.',
      ['state'],
      (set) => {
        const { total, idle } = pool();
        set({ state: 'in_use' }, total - idle);
        set({ state: 'idle' }, idle);
      },
    );
    gauge(
      registry,
      'aps_db_pool_waiting',
      'PostgreSQL: queries waiting for a pooled connection.',
      [],
      (set) => {
        set({}, pool().waiting);
      },
    );
  }
  gauge(
    registry,
    'aps_sse_clients',
    'Open document event streams (GET …/knowledge/events) of this instance.',
    [],
    (set) => {
      set({}, sources.sseClients());
    },
  );
  gauge(
    registry,
    'aps_ready',
    '1 when GET /health/ready answers 200 (migrations applied, database answering, search indexes loaded), else 0.',
    [],
    async (set) => {
      set({}, (await sources.ready()) ? 1 : 0);
    },
  );
}

/** Registers the load-shedding families (the app's state, bound when the app is built). */
export function registerShedding(registry: Registry, shedding: SheddingSource): void {
  if (registry.getSingleMetric('aps_http_requests_in_flight') !== undefined) return;
  gauge(
    registry,
    'aps_http_requests_in_flight',
    'API requests holding a load-shedding slot now (0 when MAX_REQUESTS_IN_FLIGHT=0 turns shedding off).',
    [],
    (set) => {
      set({}, shedding.inFlight);
    },
  );
  counter(
    registry,
    'aps_http_requests_shed_total',
    'API requests answered 503 OVERLOADED because MAX_REQUESTS_IN_FLIGHT were being served.',
    [],
    () => [[{}, shedding.shed]],
  );
}
