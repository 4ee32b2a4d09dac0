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
 * - Heartbeat: every leaseMs/3 one statement renews the leases of all jobs running here. A job
 *   whose lease turns out to be gone (another instance reclaimed it), or that could not be renewed
 *   before it expired, has its signal aborted with `JobLeaseLostError`.
 * - Any instance reaps expired leases (every poll): back to `queued`, or `failed` with an
 *   INTERNAL_ERROR after `maxAttempts` claims. Handler errors are never retried (they are
 *   deterministic); only jobs whose instance died are.
 * - Finishing writes `result`/`error` only where `owner` and `attempt` are still this run's, so a
 *   run that lost its lease never overwrites the new owner's state.
 * - NOTIFY on `aps_jobs` ("queued" with the type, "done" with the id) wakes claimers and waiters
 *   at once; one dedicated LISTEN connection per instance (reconnected when it drops, and used
 *   for heartbeats so they never wait for a pool slot) and a poll every `pollMs` as fallback.
 * - `stats()` returns a snapshot refreshed every second and after this instance's own enqueues and
 *   finishes: /health never waits for the database. Completed/failed counts are the jobs kept plus
 *   those pruned (`aps_job_counts`), i.e. since the table was created.
 * - `close()`: stop claiming, wait for running handlers, abort them, and put the jobs still
 *   unfinished back to `queued` without counting an attempt, so another instance takes them now.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../errors.js';
import {
  QueueClosedError,
  summarize,
  type HandleOptions,
  type JobHandler,
  type JobQueue,
  type LaneCounts,
  type QueueStats,
} from './queue.js';

/** The part of a pino logger the queue uses. */
export interface QueueLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PostgresQueueOptions {
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

/** The reason of a job's signal when its lease was lost (another instance may be running it). */
export class JobLeaseLostError extends Error {
  constructor(jobId: string, detail: string) {
    super(`Job ${jobId} lost its lease: ${detail}`);
    this.name = 'JobLeaseLostError';
  }
}

const CHANNEL = 'aps_jobs';
const SILENT: QueueLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
/** The least time between two refreshes of the counts asked for by enqueues and finishes. */
const STATS_GAP_MS = 100;
/** How long aborted handlers get to settle before their jobs are released anyway. */
const ABORT_GRACE_MS = 2000;

interface StoredError {
  code?: string;
  message: string;
}

interface Notice {
  e?: unknown;
  id?: unknown;
  type?: unknown;
}

interface RunningJob {
  id: string;
  attempt: number;
  controller: AbortController;
  /** Local time until which the lease is surely ours (when the last renewal was sent + leaseMs). */
  leaseDeadline: number;
  /** `lost`/`released`: this run may no longer write the job's outcome. */
  state: 'running' | 'finishing' | 'lost' | 'released';
  abortedByClose: boolean;
  /** Settles when the run has finished and its outcome is stored (or dropped). */
  done: Promise<void>;
}

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

interface Waiter {
  promise: Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Loop {
  timer: NodeJS.Timeout | undefined;
  lastError: string | undefined;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const abandonedMessage = (attempts: number) =>
  `The job was abandoned ${attempts} times: each time the instance running it stopped before it finished.`;

const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });

const isFinishing = (job: RunningJob) => job.state === 'finishing';

/** Rebuilds a stored error: an AppError keeps its code, anything else becomes a plain Error. */
function toError(stored: unknown): Error {
  const { code, message } = (stored ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : 'The job failed.';
  if (typeof code === 'string' && Object.hasOwn(ERROR_CATALOGUE, code)) {
    return new AppError(code as ErrorCode, text);
  }
  return new Error(text);
}

function fromError(error: unknown): StoredError {
  if (error instanceof AppError) return { code: error.code, message: error.message };
  return { message: error instanceof Error ? error.message : String(error) };
}

/** JSON text for a jsonb column (`undefined`, which JSON cannot hold, becomes null). */
function toJson(value: unknown): string {
  const text: unknown = JSON.stringify(value);
  return typeof text === 'string' ? text : 'null';
}

/** A data error (SQLSTATE class 22, e.g. a \u0000 in JSON): storing it again will not help. */
function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}

export class PostgresQueue implements JobQueue {
  readonly driver = 'postgres';
  /** This instance in the `owner` column: host, pid and a part unique to this queue object. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly lanes = new Map<string, Lane>();
  private readonly waiters = new Map<string, Waiter>();
  private readonly toCheck = new Set<string>();
  private checking = false;
  private readonly log: QueueLogger;
  private readonly leaseMs: number;
  private readonly historyLimit: number;
  private readonly maxAttempts: number;
  private snapshot: QueueStats;
  private statsRunning = false;
  private statsDirty = false;
  private statsStartedAt = 0;
  private statsTimer: NodeJS.Timeout | undefined;
  /** No more enqueues or claims. */
  private closed = false;
  /** Background work has ended. */
  private stopped = false;
  private closing: Promise<void> | undefined;
  private listener: pg.Client | undefined;
  /** Gives up the current LISTEN connection (it failed or stopped answering) and reconnects. */
  private dropListener: ((error: Error) => void) | undefined;
  private listenerFailures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly loops: Loop[] = [];

  constructor(
    private readonly pool: pg.Pool,
    concurrency: Record<string, number>,
    options: PostgresQueueOptions,
  ) {
    for (const [type, n] of Object.entries(concurrency)) this.lanes.set(type, new Lane(n));
    this.log = options.log ?? SILENT;
    this.leaseMs = options.leaseMs;
    this.historyLimit = options.historyLimit;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.snapshot = this.buildStats([]);
    void this.connectListener();
    this.refreshSoon();
    this.every('poll', options.pollMs ?? 1000, () => this.poll());
    this.every('heartbeat', Math.max(100, Math.floor(this.leaseMs / 3)), () => this.heartbeat());
    this.every('stats', options.statsMs ?? 1000, () => this.refreshStats());
    this.every('prune', options.pruneMs ?? 10_000, () => this.prune());
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
    this.refreshSoon();
    return id;
  }

  wait(jobId: string): Promise<unknown> {
    const existing = this.waiters.get(jobId);
    if (existing !== undefined) return existing.promise;
    if (this.stopped) return Promise.reject(new QueueClosedError());
    let resolve!: (value: unknown) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<unknown>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.waiters.set(jobId, { promise, resolve, reject });
    // Registered first, then checked: a NOTIFY in between is not missed.
    this.checkSoon(jobId);
    return promise;
  }

  async isLive(jobId: string): Promise<boolean> {
    const { rows } = await this.pool.query(
      `select 1 from aps_jobs where id = $1 and status in ('queued', 'running')`,
      [jobId],
    );
    return rows.length > 0;
  }

  stats(): QueueStats {
    return this.snapshot;
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
    const { rows } = await this.pool.query<{ id: string; payload: unknown; attempt: number }>(
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
      await this.release(rows.map((r) => r.id));
      return rows.length;
    }
    for (const row of rows) this.start(type, lane, row, sentAt + this.leaseMs);
    if (rows.length > 0) this.refreshSoon();
    return rows.length;
  }

  private start(
    type: string,
    lane: Lane,
    row: { id: string; payload: unknown; attempt: number },
    leaseDeadline: number,
  ): void {
    const handler = lane.handler;
    if (handler === undefined) return;
    // Our own earlier run of this job lost its lease and is still winding down.
    const previous = lane.running.get(row.id);
    if (previous !== undefined) this.lose(previous, 'claimed again');
    const job: RunningJob = {
      id: row.id,
      attempt: row.attempt,
      controller: new AbortController(),
      leaseDeadline,
      state: 'running',
      abortedByClose: false,
      done: Promise.resolve(),
    };
    lane.running.set(job.id, job);
    job.done = (async () => {
      let outcome: Outcome;
      try {
        const value = await handler(row.payload, {
          id: job.id,
          attempt: job.attempt,
          signal: job.controller.signal,
        });
        outcome = { ok: true, value };
      } catch (error) {
        outcome = { ok: false, error };
      }
      await this.finish(type, job, outcome);
    })()
      .catch((error: unknown) => {
        this.log.error({ err: error, jobId: job.id }, 'job queue: finishing a job failed');
      })
      .finally(() => {
        if (lane.running.get(job.id) === job) lane.running.delete(job.id);
        this.pump(type, false);
      });
  }

  /** Stores a run's outcome, unless the run no longer owns the job. */
  private async finish(type: string, job: RunningJob, outcome: Outcome): Promise<void> {
    if (job.state !== 'running') return;
    if (!outcome.ok && job.abortedByClose) {
      // Interrupted by shutdown, not failed: another instance runs it (same attempt number).
      job.state = 'released';
      await this.release([job.id]);
      return;
    }
    job.state = 'finishing';
    let status: 'completed' | 'failed' = outcome.ok ? 'completed' : 'failed';
    let result: string | null = null;
    let error: string | null = outcome.ok ? null : JSON.stringify(fromError(outcome.error));
    if (outcome.ok) {
      try {
        result = toJson(outcome.value);
      } catch (cause) {
        status = 'failed';
        error = JSON.stringify(
          fromError(new Error(`The job's result is not JSON: ${String(cause)}`)),
        );
      }
    }
    let fallback = false;
    // Retried while the lease holds (the heartbeat goes on): a blip of the database is no reason
    // to run the job again.
    for (let attempt = 1; ; attempt += 1) {
      try {
        const { rowCount } = await this.pool.query(
          `with done as (
             update aps_jobs
             set status = $3, result = $4::jsonb, error = $5::jsonb, owner = null,
                 lease_until = null, finished_at = now()
             where id = $1 and owner = $2 and attempt = $6 and status = 'running'
             returning id, type, status
           )
           select pg_notify($7, json_build_object('e', 'done', 'id', id, 'type', type)::text)
           from done`,
          [job.id, this.instanceId, status, result, error, job.attempt, CHANNEL],
        );
        if (rowCount === 0) {
          this.log.warn(
            { jobId: job.id, type, attempt: job.attempt },
            'job queue: a job finished after its lease was taken over; its outcome is dropped',
          );
        }
        break;
      } catch (writeError) {
        // PostgreSQL refused the JSON itself (a \u0000 in a string, say): fail the job with an
        // error that it can store; trying again would not help.
        if (isDataError(writeError) && !fallback) {
          fallback = true;
          const what = status === 'completed' ? 'result' : 'error';
          status = 'failed';
          result = null;
          error = JSON.stringify({
            message: `The job's ${what} cannot be stored: ${(writeError as Error).message}`,
          });
          continue;
        }
        // The heartbeat may have found the lease gone meanwhile.
        if (attempt >= 5 || !isFinishing(job)) throw writeError;
        await sleep(200 * 2 ** attempt);
      }
    }
    job.state = 'released';
    this.refreshSoon();
  }

  /** Puts jobs this instance claimed back to `queued`, not counting the attempt. */
  private async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(
      `with back as (
         update aps_jobs
         set status = 'queued', attempt = greatest(attempt - 1, 0), owner = null,
             lease_until = null, started_at = null
         where id = any($1) and owner = $2 and status = 'running'
         returning type
       )
       select pg_notify($3, json_build_object('e', 'queued', 'type', type)::text) from back`,
      [ids, this.instanceId, CHANNEL],
    );
  }

  private lose(job: RunningJob, detail: string): void {
    if (job.state !== 'running' && job.state !== 'finishing') return;
    const wasRunning = job.state === 'running';
    job.state = 'lost';
    if (wasRunning) {
      this.log.warn({ jobId: job.id, attempt: job.attempt, detail }, 'job queue: lease lost');
      job.controller.abort(new JobLeaseLostError(job.id, detail));
    }
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
    await this.reap();
    for (const type of this.lanes.keys()) this.pump(type);
    if (this.waiters.size > 0) await this.checkWaiters([...this.waiters.keys()]);
  }

  /** Expired leases: their instance died. Queued again, or failed after `maxAttempts`. */
  private async reap(): Promise<void> {
    const { rows } = await this.pool.query<{
      id: string;
      type: string;
      status: string;
      payload: unknown;
    }>(
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
      [this.maxAttempts, abandonedMessage(this.maxAttempts), CHANNEL],
    );
    for (const row of rows) {
      this.log.warn(
        { jobId: row.id, type: row.type, status: row.status },
        row.status === 'queued'
          ? 'job queue: an instance stopped while running a job; it is queued again'
          : 'job queue: a job was abandoned too often; it failed',
      );
      const onAbandoned = this.lanes.get(row.type)?.onAbandoned;
      if (row.status === 'failed' && onAbandoned !== undefined) {
        const error = new AppError('INTERNAL_ERROR', abandonedMessage(this.maxAttempts));
        await onAbandoned(row.payload, error).catch((err: unknown) => {
          this.log.error({ err, jobId: row.id }, 'job queue: onAbandoned failed');
        });
      }
    }
    if (rows.length > 0) this.refreshSoon();
  }

  /** Renews the leases of this instance's running jobs, on the LISTEN connection when it is up. */
  private async heartbeat(): Promise<void> {
    const jobs = this.runningJobs().filter((j) => j.state === 'running' || j.state === 'finishing');
    if (jobs.length === 0) return;
    const sentAt = Date.now();
    const listener = this.listener;
    const runner = listener ?? this.pool;
    const renewal = runner.query<{ id: string; attempt: number }>(
      `update aps_jobs set lease_until = now() + $3::int * interval '1 millisecond'
       where id = any($1) and owner = $2 and status = 'running'
       returning id, attempt`,
      [jobs.map((j) => j.id), this.instanceId, this.leaseMs],
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          reject(new Error('lease renewal timed out'));
        },
        Math.max(100, Math.floor(this.leaseMs / 3)),
      );
    });
    try {
      const { rows } = await Promise.race([renewal, timeout]);
      const kept = new Set(rows.map((r) => `${r.id}#${r.attempt}`));
      for (const job of jobs) {
        if (kept.has(`${job.id}#${job.attempt}`)) job.leaseDeadline = sentAt + this.leaseMs;
        else this.lose(job, 'another instance took it over');
      }
    } catch (error) {
      renewal.catch(() => undefined);
      // A LISTEN connection that does not answer is likely dead without knowing it: replace it
      // (the next renewal goes through the pool meanwhile).
      if (listener !== undefined && listener === this.listener) this.dropListener?.(error as Error);
      const now = Date.now();
      for (const job of jobs) {
        if (now >= job.leaseDeadline) this.lose(job, 'it could not be renewed in time');
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Refreshes the snapshot in the background: now, or STATS_GAP_MS after the last refresh began,
   * so that a burst of jobs does not keep a connection busy counting them.
   */
  private refreshSoon(): void {
    if (this.stopped || this.statsTimer !== undefined) return;
    const delay = Math.max(0, this.statsStartedAt + STATS_GAP_MS - Date.now());
    this.statsTimer = setTimeout(() => {
      this.statsTimer = undefined;
      this.refreshStats().catch((error: unknown) => {
        this.log.warn({ err: error }, 'job queue: reading the counts failed');
      });
    }, delay).unref();
  }

  private async refreshStats(): Promise<void> {
    if (this.statsRunning) {
      this.statsDirty = true;
      return;
    }
    this.statsRunning = true;
    try {
      do {
        this.statsDirty = false;
        this.statsStartedAt = Date.now();
        const { rows } = await this.pool.query<{ type: string; status: string; n: number }>(
          `select type, status, count(*)::float8 as n from aps_jobs group by type, status
           union all select type, 'completed', completed::float8 from aps_job_counts
           union all select type, 'failed', failed::float8 from aps_job_counts`,
        );
        this.snapshot = this.buildStats(rows);
      } while (this.refreshAgain());
    } finally {
      this.statsRunning = false;
    }
  }

  /** Whether the counts changed while they were being read (set from other callbacks). */
  private refreshAgain(): boolean {
    return this.statsDirty && !this.stopped;
  }

  private buildStats(rows: readonly { type: string; status: string; n: number }[]): QueueStats {
    const byType: QueueStats['byType'] = {};
    const lane = (type: string) =>
      (byType[type] ??= {
        queued: 0,
        running: 0,
        completed: 0,
        failed: 0,
        concurrency: this.lanes.get(type)?.concurrency ?? 0,
      });
    for (const type of this.lanes.keys()) lane(type);
    for (const row of rows) {
      const status = row.status as keyof LaneCounts;
      lane(row.type)[status] += row.n;
    }
    return summarize('postgres', byType);
  }

  /** Keeps the newest `historyLimit` finished jobs per type; the others move to the counts. */
  private async prune(): Promise<void> {
    await this.pool.query(
      `with ranked as (
         select id, row_number() over (partition by type order by finished_at desc, id desc) as n
         from aps_jobs where status in ('completed', 'failed')
       ),
       gone as (
         delete from aps_jobs j using ranked
         where j.id = ranked.id and ranked.n > $1 and j.status in ('completed', 'failed')
         returning j.type, j.status
       ),
       tally as (
         select type,
           count(*) filter (where status = 'completed') as completed,
           count(*) filter (where status = 'failed') as failed
         from gone group by type
       )
       insert into aps_job_counts as c (type, completed, failed)
       select type, completed, failed from tally
       on conflict (type) do update
       set completed = c.completed + excluded.completed, failed = c.failed + excluded.failed`,
      [this.historyLimit],
    );
  }

  // ---- waiting -------------------------------------------------------------------------------

  /** Checks an awaited job soon, in one query with the others asked for meanwhile. */
  private checkSoon(id: string): void {
    this.toCheck.add(id);
    if (this.checking) return;
    this.checking = true;
    void (async () => {
      while (this.toCheck.size > 0) {
        const ids = [...this.toCheck];
        this.toCheck.clear();
        await this.checkWaiters(ids).catch((error: unknown) => {
          // The poll tries again.
          this.log.warn({ err: error }, 'job queue: reading results failed');
        });
      }
      this.checking = false;
    })();
  }

  /** Settles the waiters of finished (or unknown) jobs among `ids`. */
  private async checkWaiters(ids: readonly string[]): Promise<void> {
    const { rows } = await this.pool.query<{
      id: string;
      status: string;
      result: unknown;
      error: unknown;
    }>(`select id, status, result, error from aps_jobs where id = any($1)`, [ids]);
    const found = new Map(rows.map((r) => [r.id, r]));
    for (const id of ids) {
      const row = found.get(id);
      if (row === undefined) {
        this.settleWaiter(id, { ok: false, error: new Error(`Unknown job: ${id}`) });
      } else if (row.status === 'completed') {
        this.settleWaiter(id, { ok: true, value: row.result });
      } else if (row.status === 'failed') {
        this.settleWaiter(id, { ok: false, error: toError(row.error) });
      }
    }
  }

  private settleWaiter(id: string, outcome: Outcome): void {
    const waiter = this.waiters.get(id);
    if (waiter === undefined) return;
    this.waiters.delete(id);
    if (outcome.ok) waiter.resolve(outcome.value);
    else waiter.reject(outcome.error instanceof Error ? outcome.error : toError(outcome.error));
  }

  // ---- LISTEN --------------------------------------------------------------------------------

  private async connectListener(): Promise<void> {
    if (this.stopped) return;
    const options = this.pool.options;
    // `password` is not enumerable in the pool's options: pass it on explicitly.
    const client = new pg.Client({
      ...options,
      password: options.password,
      keepAlive: true,
      application_name: `${options.application_name ?? 'aps'} (queue)`,
    });
    const state = { dead: false };
    const onDown = (error?: Error) => {
      if (state.dead) return;
      state.dead = true;
      if (this.listener === client) {
        this.listener = undefined;
        this.dropListener = undefined;
      }
      if (error !== undefined && !this.stopped) {
        this.log.warn({ err: error }, 'job queue: the LISTEN connection failed; reconnecting');
      }
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onDown);
    client.on('end', () => {
      onDown();
    });
    client.on('notification', (message) => {
      this.onNotice(message.payload);
    });
    try {
      await client.connect();
      await client.query(`listen ${CHANNEL}`);
    } catch (error) {
      onDown(error as Error);
      return;
    }
    // Closed meanwhile, or the connection dropped already (onDown reconnects then).
    if (this.isStopped() || state.dead) {
      state.dead = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    this.dropListener = onDown;
    this.listenerFailures = 0;
    // Whatever was announced while nobody listened: look now.
    void this.poll().catch(() => undefined);
  }

  private isStopped(): boolean {
    return this.stopped;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer !== undefined) return;
    this.listenerFailures += 1;
    const delay = Math.min(10_000, 250 * 2 ** Math.min(this.listenerFailures, 6));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connectListener();
    }, delay).unref();
  }

  private onNotice(payload: string | undefined): void {
    if (payload === undefined) return;
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    if (notice.e === 'queued' && typeof notice.type === 'string') {
      this.pump(notice.type);
    } else if (
      notice.e === 'done' &&
      typeof notice.id === 'string' &&
      this.waiters.has(notice.id)
    ) {
      this.checkSoon(notice.id);
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
    await this.release(stuck.map((j) => j.id)).catch((error: unknown) => {
      this.log.warn({ err: error }, 'job queue: releasing jobs at shutdown failed');
    });

    this.stopped = true;
    for (const loop of this.loops) clearTimeout(loop.timer);
    clearTimeout(this.statsTimer);
    clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = undefined;
    if (listener !== undefined) {
      await Promise.race([listener.end().catch(() => undefined), sleep(1000)]);
    }
    for (const id of [...this.waiters.keys()]) {
      this.settleWaiter(id, { ok: false, error: new QueueClosedError() });
    }
  }
}
