/** Types and a helper shared by the pieces of the PostgreSQL job queue (see queue.ts). */

/** The part of a pino logger the queue uses. */
export interface QueueLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** One run of a job on this instance, from its claim until its outcome is stored (or dropped). */
export interface RunningJob {
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

/** How a run ended, or what a waiter is settled with. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Resolves after `ms`; its timer does not keep the process alive. */
export const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });
