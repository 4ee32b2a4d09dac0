/**
 * The run of a claimed job on this instance: its handler gets an AbortSignal (aborted at shutdown
 * or when the lease is lost, see leases.ts), and its outcome is written only where `owner` and
 * `attempt` are still this run's, so a run that lost its lease never overwrites the new owner's
 * state.
 */
import type pg from 'pg';
import type { JobHandler } from '../queue.js';
import { fromError, isDataError, toJson } from './errors.js';
import type { Leases } from './leases.js';
import { sleep, type Outcome, type QueueLogger, type RunningJob } from './shared.js';

/** The part of a lane that runs use: its handler and its runs in progress. */
interface RunLane {
  readonly handler: JobHandler | undefined;
  readonly running: Map<string, RunningJob>;
}

interface RunOptions {
  pool: pg.Pool;
  /** This instance in the `owner` column. */
  instanceId: string;
  channel: string;
  log: QueueLogger;
  leases: Leases;
  /** An outcome was stored: the counts are out of date. */
  onStored: () => void;
  /** A run of `type` has ended: its slot is free. */
  onEnded: (type: string) => void;
}

const isFinishing = (job: RunningJob) => job.state === 'finishing';

/** Starts runs and stores their outcomes. */
export class Runs {
  constructor(private readonly options: RunOptions) {}

  /** Starts the handler of a claimed job, kept in `lane.running` until its run has ended. */
  start(
    type: string,
    lane: RunLane,
    row: { id: string; payload: unknown; attempt: number },
    leaseDeadline: number,
  ): void {
    const handler = lane.handler;
    if (handler === undefined) return;
    // Our own earlier run of this job lost its lease and is still winding down.
    const previous = lane.running.get(row.id);
    if (previous !== undefined) this.options.leases.lose(previous, 'claimed again');
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
    // Before the handler starts: it may hold the event loop at once (lease-keeper.ts).
    this.options.leases.keep();
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
        this.options.log.error({ err: error, jobId: job.id }, 'job queue: finishing a job failed');
      })
      .finally(() => {
        if (lane.running.get(job.id) === job) lane.running.delete(job.id);
        this.options.onEnded(type);
      });
  }

  /** Stores a run's outcome, unless the run no longer owns the job. */
  private async finish(type: string, job: RunningJob, outcome: Outcome): Promise<void> {
    const { pool, instanceId, channel, log, leases } = this.options;
    if (job.state !== 'running') return;
    if (!outcome.ok && job.abortedByClose) {
      // Interrupted by shutdown, not failed: another instance runs it (same attempt number).
      job.state = 'released';
      await leases.release([job.id]);
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
        const { rowCount } = await pool.query(
          `with done as (
             update aps_jobs
             set status = $3, result = $4::jsonb, error = $5::jsonb, owner = null,
                 lease_until = null, finished_at = now()
             where id = $1 and owner = $2 and attempt = $6 and status = 'running'
             returning id, type, status
           )
           select pg_notify($7, json_build_object('e', 'done', 'id', id, 'type', type)::text)
           from done`,
          [job.id, instanceId, status, result, error, job.attempt, channel],
        );
        if (rowCount === 0) {
          log.warn(
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
    this.options.onStored();
  }
}
