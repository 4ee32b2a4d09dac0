/** The job-queue interface: one lane per job type, each with its own concurrency. */

export interface LaneCounts {
  queued: number;
  running: number;
  completed: number;
  failed: number;
}

export interface QueueStats {
  driver: string;
  totalJobs: number;
  queuedJobs: number;
  runningJobs: number;
  completedJobs: number;
  failedJobs: number;
  byType: Record<string, LaneCounts & { concurrency: number }>;
}

export interface JobContext {
  id: string;
  /** 1 for the first run; more when an instance died while running it and another took over. */
  attempt: number;
  /**
   * Aborted when the queue is closed while the job still runs, or (shared queue) when this
   * instance lost the job's lease and another instance runs it now.
   */
  signal: AbortSignal;
}

export interface HandleOptions {
  onAbandoned?: (payload: unknown, error: Error) => Promise<void>;
}

/** Runs one job. Payloads and results are JSON values (they may cross instances). */
export type JobHandler = (payload: unknown, job: JobContext) => Promise<unknown>;

/**
 * The job-queue interface: one lane per job type, each with its own concurrency per instance.
 * `memory` runs jobs in this process; `postgres` shares them between instances (a job enqueued
 * on one may run on any, and is run again elsewhere when its instance dies).
 */
export interface JobQueue {
  readonly driver: 'memory' | 'postgres';
  /**
   * Registers this instance's handler of a job type; jobs run here only once it exists.
   * `onAbandoned` runs (on one instance) when a job is given up because the instances running it
   * kept dying (shared queue only): the job's subject can then be marked failed.
   */
  handle(type: string, handler: JobHandler, options?: HandleOptions): void;
  /** Enqueues a job and returns its id (`id`, when given, must be new: a UUID). */
  enqueue(type: string, payload: unknown, options?: { id?: string }): Promise<string>;
  /** Resolves with the job's result when it has run; rejects with its error. */
  wait(jobId: string): Promise<unknown>;
  /** Whether the job is queued or running (anywhere). */
  isLive(jobId: string): Promise<boolean>;
  /** Counts as of now (memory) or of the last refresh, at most a second or two old (postgres). */
  stats(): QueueStats;
  /** Stops taking jobs and waits (up to `timeoutMs`) for running ones, then aborts them. */
  close(timeoutMs?: number): Promise<void>;
}

/** The totals of a queue's per-type counts, as `/health` reports them. */
export function summarize(driver: string, byType: QueueStats['byType']): QueueStats {
  const totals = { queued: 0, running: 0, completed: 0, failed: 0 };
  for (const counts of Object.values(byType)) {
    totals.queued += counts.queued;
    totals.running += counts.running;
    totals.completed += counts.completed;
    totals.failed += counts.failed;
  }
  return {
    driver,
    totalJobs: totals.queued + totals.running + totals.completed + totals.failed,
    queuedJobs: totals.queued,
    runningJobs: totals.running,
    completedJobs: totals.completed,
    failedJobs: totals.failed,
    byType,
  };
}

/** Rejects `wait` for jobs that never started because the queue closed. */
export class QueueClosedError extends Error {
  constructor() {
    super('The job queue is closed');
    this.name = 'QueueClosedError';
  }
}
