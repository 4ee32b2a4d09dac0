/**
 * The shared job queue on PostgreSQL (table `aps_jobs`, migration 0004): a job enqueued on one
 * instance runs on any instance that registered a handler for its type, at most that type's
 * concurrency at a time per instance.
 *
 * Written here on `SELECT … FOR UPDATE SKIP LOCKED` rather than on pg-boss: pg-boss 10 has no
 * heartbeat, so a job of a dead instance is only retried once its `expireInSeconds` (a fixed upper
 * bound on the run time, 15 minutes by default) passes and the next maintenance run notices; an
 * indexing run that legitimately takes longer would be run twice. A lease renewed while the
 * handler runs gives both: long runs are fine and a dead instance's job moves on after `leaseMs`.
 * pg-boss would also bring its own schema, a second migration system and a new dependency.
 *
 * - Claiming: the oldest queued jobs of a type, `FOR UPDATE SKIP LOCKED`, set `running` with
 *   `owner` (this instance), `attempt + 1` and `lease_until = now() + leaseMs` (the database's
 *   clock only, so instances' clocks may disagree).
 * - Leases (leases.ts): a heartbeat renews them while handlers run; any instance reaps expired
 *   ones (every poll) and runs their jobs again, or fails them after `maxAttempts` claims.
 * - Running (runs.ts): finishing writes `result`/`error` only where `owner` and `attempt` are
 *   still this run's, so a run that lost its lease never overwrites the new owner's state.
 * - NOTIFY on `aps_jobs` ("queued" with the type, "done" with the id) wakes claimers and waiters
 *   (waiters.ts) at once; one dedicated LISTEN connection per instance (listener.ts) and a poll
 *   every `pollMs` as fallback.
 * - `stats()` returns a snapshot refreshed in the background (stats.ts): /health never waits for
 *   the database.
 * - `close()`: stop claiming, wait for running handlers, abort them, and put the jobs still
 *   unfinished back to `queued` without counting an attempt, so another instance takes them now.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { JobsTable } from '../../db/schema.js';
import {
  QueueClosedError,
  type HandleOptions,
  type JobHandler,
  type JobQueue,
  type QueueStats,
} from '../queue.js';
import { toJson } from './errors.js';
import { Leases } from './leases.js';
import { QueueListener, type Notice } from './listener.js';
import { Runs } from './runs.js';
import { sleep, type QueueLogger, type RunningJob } from './shared.js';
import { JobCounts } from './stats.js';
import { Waiters } from './waiters.js';

interface PostgresQueueOptions {
  /** A running job whose instance stops renewing it for this long is run again elsewhere. */
  leaseMs: number;
  /** Finished jobs kept per type (older ones are pruned; counts keep them). */
  historyLimit: number;
  log?: QueueLogger;
  /** Claims of a job before it is failed (each one after the first means an instance died). */
  maxAttempts?: number;
  /** Fallback poll for queued jobs, expired leases and awaited results (NOTIFY is the fast path). */
  pollMs?: number;
  /** How often `stats()`'s snapshot is refreshed. */
  statsMs?: number;
  /** How often finished jobs beyond `historyLimit` are pruned. */
  pruneMs?: number;
}

const CHANNEL = 'aps_jobs';
const SILENT: QueueLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
/** How long aborted handlers get to settle before their jobs are released anyway. */
const ABORT_GRACE_MS = 2000;

class Lane {
  handler: JobHandler | undefined;
  onAbandoned: HandleOptions['onAbandoned'];
  readonly running = new Map<string, RunningJob>();
  claiming = false;
  /** A hint of new jobs came while claiming. */
  again = false;
  /** Queued jobs may exist: false once a claim found fewer than it asked for (and no hint since). */
  maybeMore = true;

  constructor(readonly concurrency: number) {}
}

interface Loop {
  timer: NodeJS.Timeout | undefined;
  lastError: string | undefined;
}

/** The JobQueue of instances that share one PostgreSQL database. */
export class PostgresQueue implements JobQueue {
  readonly driver = 'postgres';
  /** This instance in the `owner` column: host, pid and a part unique to this queue object. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly lanes = new Map<string, Lane>();
  private readonly log: QueueLogger;
  private readonly leaseMs: number;
  private readonly waiters: Waiters;
  private readonly counts: JobCounts;
  private readonly listener: QueueListener;
  private readonly leases: Leases;
  private readonly runs: Runs;
  /** No more enqueues or claims. */
  private closed = false;
  /** Background work has ended. */
  private stopped = false;
  private closing: Promise<void> | undefined;
  private readonly loops: Loop[] = [];

  constructor(
    private readonly pool: pg.Pool,
    concurrency: Record<string, number>,
    options: PostgresQueueOptions,
  ) {
    for (const [type, n] of Object.entries(concurrency)) this.lanes.set(type, new Lane(n));
    this.log = options.log ?? SILENT;
    this.leaseMs = options.leaseMs;
    this.waiters = new Waiters(pool, this.log);
    this.counts = new JobCounts(pool, this.lanes, this.log, options.historyLimit);
    this.listener = new QueueListener({
      poolOptions: pool.options,
      channel: CHANNEL,
      log: this.log,
      onNotice: (notice) => {
        this.onNotice(notice);
      },
      onConnected: () => {
        void this.poll().catch(() => undefined);
      },
    });
    this.leases = new Leases({
      pool,
      instanceId: this.instanceId,
      leaseMs: this.leaseMs,
      maxAttempts: options.maxAttempts ?? 3,
      channel: CHANNEL,
      log: this.log,
      listener: this.listener,
      runningJobs: () => this.runningJobs(),
      onAbandoned: (type) => this.lanes.get(type)?.onAbandoned,
      onChange: () => {
        this.counts.refreshSoon();
      },
    });
    this.runs = new Runs({
      pool,
      instanceId: this.instanceId,
      channel: CHANNEL,
      log: this.log,
      leases: this.leases,
      onStored: () => {
        this.counts.refreshSoon();
      },
      onEnded: (type) => {
        this.pump(type, false);
      },
    });
    this.listener.start();
    this.counts.refreshSoon();
    this.every('poll', options.pollMs ?? 1000, () => this.poll());
    this.every('heartbeat', this.leases.heartbeatMs, () => this.leases.heartbeat());
    this.every('stats', options.statsMs ?? 1000, () => this.counts.refreshStats());
    this.every('prune', options.pruneMs ?? 10_000, () => this.counts.prune());
  }

  handle(type: string, handler: JobHandler, options: HandleOptions = {}): void {
    const lane = this.lanes.get(type);
    if (lane === undefined) throw new Error(`Unknown job type: ${type}`);
    lane.handler = handler;
    lane.onAbandoned = options.onAbandoned;
    this.pump(type);
  }

  async enqueue(type: string, payload: unknown, options: { id?: string } = {}): Promise<string> {
    if (!this.lanes.has(type)) throw new Error(`Unknown job type: ${type}`);
    if (this.closed) throw new QueueClosedError();
    const id = options.id ?? randomUUID();
    const json = toJson(payload);
    try {
      await this.pool.query(
        `with job as (
           insert into aps_jobs (id, type, payload) values ($1, $2, $3::jsonb) returning type
         )
         select pg_notify($4, json_build_object('e', 'queued', 'type', type)::text) from job`,
        [id, type, json, CHANNEL],
      );
    } catch (error) {
      if ((error as { code?: unknown }).code === '23505') {
        throw new Error(`Job ${id} exists already`, { cause: error });
      }
      throw error;
    }
    this.pump(type);
    this.counts.refreshSoon();
    return id;
  }

  wait(jobId: string): Promise<unknown> {
    const existing = this.waiters.get(jobId);
    if (existing !== undefined) return existing;
    if (this.stopped) return Promise.reject(new QueueClosedError());
    return this.waiters.add(jobId);
  }

  async isLive(jobId: string): Promise<boolean> {
    const { rows } = await this.pool.query(
      `select 1 from aps_jobs where id = $1 and status in ('queued', 'running')`,
      [jobId],
    );
    return rows.length > 0;
  }

  stats(): QueueStats {
    return this.counts.current;
  }

  close(timeoutMs = 10_000): Promise<void> {
    this.closing ??= this.shutdown(timeoutMs);
    return this.closing;
  }

  // ---- claiming and running ------------------------------------------------------------------

  /**
   * Claims as many jobs of `type` as this instance has free slots for, and starts them. `hint`:
   * jobs may have been queued (an enqueue, a NOTIFY, the poll); without it (a slot came free) the
   * database is only asked when the last claim did not come back short.
   */
  private pump(type: string, hint = true): void {
    const lane = this.lanes.get(type);
    if (lane?.handler === undefined || this.closed) return;
    if (hint) lane.maybeMore = true;
    if (lane.claiming) {
      if (hint) lane.again = true;
      return;
    }
    const free = lane.concurrency - lane.running.size;
    if (free <= 0 || !lane.maybeMore) return;
    lane.claiming = true;
    lane.again = false;
    this.claim(type, lane, free).then(
      (claimed) => {
        lane.claiming = false;
        if (claimed < free && !lane.again) lane.maybeMore = false;
        this.pump(type, false);
      },
      (error: unknown) => {
        lane.claiming = false;
        // The next poll tries again.
        this.log.warn({ err: error, type }, 'job queue: claiming failed');
      },
    );
  }

  private async claim(type: string, lane: Lane, limit: number): Promise<number> {
    const sentAt = Date.now();
    const { rows } = await this.pool.query<Pick<JobsTable, 'id' | 'payload' | 'attempt'>>(
      `with next as (
         select id from aps_jobs
         where type = $1 and status = 'queued'
         order by seq
         limit $2
         for update skip locked
       )
       update aps_jobs j
       set status = 'running', owner = $3, attempt = j.attempt + 1, started_at = now(),
           lease_until = now() + $4::int * interval '1 millisecond'
       from next where j.id = next.id
       returning j.id, j.payload, j.attempt`,
      [type, limit, this.instanceId, this.leaseMs],
    );
    if (this.closed) {
      // Closed while claiming: hand them straight back.
      await this.leases.release(rows.map((r) => r.id));
      return rows.length;
    }
    for (const row of rows) this.runs.start(type, lane, row, sentAt + this.leaseMs);
    if (rows.length > 0) this.counts.refreshSoon();
    return rows.length;
  }

  private runningJobs(): RunningJob[] {
    return [...this.lanes.values()].flatMap((lane) => [...lane.running.values()]);
  }

  // ---- background work -----------------------------------------------------------------------

  /** Runs `fn` every `ms` (never overlapping) until the queue stops; failures are logged once. */
  private every(name: string, ms: number, fn: () => Promise<void>): void {
    const loop: Loop = { timer: undefined, lastError: undefined };
    const run = async () => {
      try {
        await fn();
        loop.lastError = undefined;
      } catch (error) {
        const message = (error as Error).message;
        if (message !== loop.lastError) {
          this.log.warn({ err: error }, `job queue: ${name} failed`);
          loop.lastError = message;
        }
      }
      if (!this.stopped) loop.timer = setTimeout(() => void run(), ms).unref();
    };
    loop.timer = setTimeout(() => void run(), ms).unref();
    this.loops.push(loop);
  }

  private async poll(): Promise<void> {
    await this.leases.reap();
    for (const type of this.lanes.keys()) this.pump(type);
    await this.waiters.checkAll();
  }

  private onNotice(notice: Notice): void {
    if (notice.e === 'queued' && typeof notice.type === 'string') {
      this.pump(notice.type);
    } else if (
      notice.e === 'done' &&
      typeof notice.id === 'string' &&
      this.waiters.has(notice.id)
    ) {
      this.waiters.checkSoon(notice.id);
    }
  }

  // ---- shutdown ------------------------------------------------------------------------------

  private async shutdown(timeoutMs: number): Promise<void> {
    this.closed = true;
    const settled = () =>
      Promise.allSettled(this.runningJobs().map((j) => j.done)).then(() => undefined);
    if (this.runningJobs().length > 0) {
      await Promise.race([settled(), sleep(timeoutMs)]);
    }
    const unfinished = this.runningJobs().filter((j) => j.state === 'running');
    if (unfinished.length > 0) {
      for (const job of unfinished) {
        job.abortedByClose = true;
        job.controller.abort(new QueueClosedError());
      }
      // A moment to clean up (and to hand their jobs back themselves).
      await Promise.race([settled(), sleep(ABORT_GRACE_MS)]);
    }
    const stuck = this.runningJobs().filter((j) => j.state === 'running');
    for (const job of stuck) job.state = 'released';
    await this.leases.release(stuck.map((j) => j.id)).catch((error: unknown) => {
      this.log.warn({ err: error }, 'job queue: releasing jobs at shutdown failed');
    });

    this.stopped = true;
    for (const loop of this.loops) clearTimeout(loop.timer);
    this.counts.stop();
    const listenerEnded = this.listener.stop();
    if (listenerEnded !== undefined) await Promise.race([listenerEnded, sleep(1000)]);
    this.waiters.close();
    await this.leases.stop();
  }
}
