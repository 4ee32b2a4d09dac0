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
  /** Aborted when the queue is closed while the job still runs. */
  signal: AbortSignal;
}

export interface JobQueue {
  /** Enqueues a job on its type's lane and resolves with its result when it has run. */
  run<T>(type: string, handler: (job: JobContext) => Promise<T>): Promise<T>;
  stats(): QueueStats;
  /** Stops accepting jobs, drops queued ones and waits (up to `timeoutMs`) for running ones. */
  close(timeoutMs?: number): Promise<void>;
}

/** Thrown by `run` for jobs that never started because the queue closed. */
export class QueueClosedError extends Error {
  constructor() {
    super('The job queue is closed');
    this.name = 'QueueClosedError';
  }
}
