/**
 * Leases of running jobs. A claim sets `lease_until = now() + leaseMs` (the database's clock
 * only, so instances' clocks may disagree); while a handler runs, its instance renews the lease,
 * and an instance that stops renewing (it died) loses its jobs to whichever instance reaps them.
 *
 * - Heartbeat: every leaseMs/3 one statement renews the leases of all jobs running here. A job
 *   whose lease turns out to be gone (another instance reclaimed it), or that could not be renewed
 *   before it expired, has its signal aborted with `JobLeaseLostError`.
 * - A worker thread renews them too (lease-keeper.ts), so that a busy event loop cannot lose
 *   them; `keep()` tells it which jobs run here.
 * - Any instance reaps expired leases (every poll): back to `queued`, or `failed` with an
 *   INTERNAL_ERROR after `maxAttempts` claims. Handler errors are never retried (they are
 *   deterministic); only jobs whose instance died are.
 */
import type pg from 'pg';
import type { JobsTable } from '../../db/schema.js';
import { AppError } from '../../errors.js';
import type { HandleOptions } from '../queue.js';
import { JobLeaseLostError } from './errors.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { QueueListener } from './listener.js';
import type { QueueLogger, RunningJob } from './shared.js';

interface LeaseOptions {
  pool: pg.Pool;
  /** This instance in the `owner` column. */
  instanceId: string;
  leaseMs: number;
  /** Claims of a job before it is failed (each one after the first means an instance died). */
  maxAttempts: number;
  channel: string;
  log: QueueLogger;
  /** Renewals go over its connection while it is up, so they never wait for a pool slot. */
  listener: QueueListener;
  /** This instance's runs. */
  runningJobs: () => RunningJob[];
  onAbandoned: (type: string) => HandleOptions['onAbandoned'];
  /** Jobs changed state: the counts are out of date. */
  onChange: () => void;
}

const abandonedMessage = (attempts: number) =>
  `The job was abandoned ${attempts} times: each time the instance running it stopped before it finished.`;

/** Renews, reaps, releases and loses leases. */
export class Leases {
  /** How often the heartbeat runs, and how long one renewal may take. */
  readonly heartbeatMs: number;
  private readonly keeper: LeaseKeeper;

  constructor(private readonly options: LeaseOptions) {
    this.heartbeatMs = Math.max(100, Math.floor(options.leaseMs / 3));
    this.keeper = new LeaseKeeper({
      pool: options.pool,
      owner: options.instanceId,
      leaseMs: options.leaseMs,
      everyMs: this.heartbeatMs,
    });
  }

  /** Tells the lease keeper which jobs run here now (and that this thread is alive). */
  keep(): void {
    this.keeper.keep(this.renewable());
  }

  private renewable(): RunningJob[] {
    return this.options
      .runningJobs()
      .filter((j) => j.state === 'running' || j.state === 'finishing');
  }

  /** Stops the lease keeper (the queue is closing). */
  stop(): Promise<void> {
    return this.keeper.stop();
  }

  /** Expired leases: their instance died. Queued again, or failed after `maxAttempts`. */
  async reap(): Promise<void> {
    const { pool, maxAttempts, channel, log } = this.options;
    const { rows } = await pool.query<Pick<JobsTable, 'id' | 'type' | 'status' | 'payload'>>(
      `with expired as (
         select id from aps_jobs
         where status = 'running' and lease_until < now()
         for update skip locked
       ),
       moved as (
         update aps_jobs j
         set status = case when j.attempt >= $1 then 'failed' else 'queued' end,
             error = case when j.attempt >= $1
               then jsonb_build_object('code', 'INTERNAL_ERROR', 'message', $2::text) end,
             finished_at = case when j.attempt >= $1 then now() end,
             owner = null, lease_until = null
         from expired where j.id = expired.id
         returning j.id, j.type, j.status, j.attempt, j.payload
       )
       select id, type, status, attempt, payload,
         pg_notify($3, json_build_object(
           'e', case when status = 'queued' then 'queued' else 'done' end, 'id', id, 'type', type
         )::text)
       from moved`,
      [maxAttempts, abandonedMessage(maxAttempts), channel],
    );
    for (const row of rows) {
      log.warn(
        { jobId: row.id, type: row.type, status: row.status },
        row.status === 'queued'
          ? 'job queue: an instance stopped while running a job; it is queued again'
          : 'job queue: a job was abandoned too often; it failed',
      );
      const onAbandoned = this.options.onAbandoned(row.type);
      if (row.status === 'failed' && onAbandoned !== undefined) {
        const error = new AppError('INTERNAL_ERROR', abandonedMessage(maxAttempts));
        await onAbandoned(row.payload, error).catch((err: unknown) => {
          log.error({ err, jobId: row.id }, 'job queue: onAbandoned failed');
        });
      }
    }
    if (rows.length > 0) this.options.onChange();
  }

  /** Renews the leases of this instance's running jobs, on the LISTEN connection when it is up. */
  async heartbeat(): Promise<void> {
    const { pool, instanceId, leaseMs } = this.options;
    const jobs = this.renewable();
    this.keeper.keep(jobs);
    if (jobs.length === 0) return;
    const sentAt = Date.now();
    const listener = this.options.listener.client;
    const runner = listener ?? pool;
    const renewal = runner.query<Pick<JobsTable, 'id' | 'attempt'>>(
      `update aps_jobs set lease_until = now() + $3::int * interval '1 millisecond'
       where id = any($1) and owner = $2 and status = 'running'
       returning id, attempt`,
      [jobs.map((j) => j.id), instanceId, leaseMs],
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error('lease renewal timed out'));
      }, this.heartbeatMs);
    });
    try {
      const { rows } = await Promise.race([renewal, timeout]);
      const kept = new Set(rows.map((r) => `${r.id}#${r.attempt}`));
      for (const job of jobs) {
        if (kept.has(`${job.id}#${job.attempt}`)) job.leaseDeadline = sentAt + leaseMs;
        else this.lose(job, 'another instance took it over');
      }
    } catch (error) {
      renewal.catch(() => undefined);
      // A LISTEN connection that does not answer is likely dead without knowing it: replace it
      // (the next renewal goes through the pool meanwhile).
      if (listener !== undefined) this.options.listener.drop(listener, error as Error);
      const now = Date.now();
      for (const job of jobs) {
        if (now >= job.leaseDeadline) this.lose(job, 'it could not be renewed in time');
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Puts jobs this instance claimed back to `queued`, not counting the attempt. */
  async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.options.pool.query(
      `with back as (
         update aps_jobs
         set status = 'queued', attempt = greatest(attempt - 1, 0), owner = null,
             lease_until = null, started_at = null
         where id = any($1) and owner = $2 and status = 'running'
         returning type
       )
       select pg_notify($3, json_build_object('e', 'queued', 'type', type)::text) from back`,
      [ids, this.options.instanceId, this.options.channel],
    );
  }

  /** This run may no longer write the job's outcome; a running handler is aborted. */
  lose(job: RunningJob, detail: string): void {
    if (job.state !== 'running' && job.state !== 'finishing') return;
    const wasRunning = job.state === 'running';
    job.state = 'lost';
    if (wasRunning) {
      this.options.log.warn(
        { jobId: job.id, attempt: job.attempt, detail },
        'job queue: lease lost',
      );
      job.controller.abort(new JobLeaseLostError(job.id, detail));
    }
  }
}
