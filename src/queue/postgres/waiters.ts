/**
 * Callers of `wait` on the PostgreSQL queue: settled from the job's row once it has finished,
 * looked up when a NOTIFY "done" names the job (any instance may have run it) and on every poll.
 */
import type pg from 'pg';
import type { JobsTable } from '../../db/schema.js';
import { QueueClosedError } from '../queue.js';
import { toError } from './errors.js';
import type { Outcome, QueueLogger } from './shared.js';

interface Waiter {
  promise: Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** The awaited jobs of this instance, checked in batches. */
export class Waiters {
  private readonly waiters = new Map<string, Waiter>();
  private readonly toCheck = new Set<string>();
  private checking = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: QueueLogger,
  ) {}

  /** The outcome of a job already awaited, if it is. */
  get(jobId: string): Promise<unknown> | undefined {
    return this.waiters.get(jobId)?.promise;
  }

  /** Whether someone here waits for the job. */
  has(jobId: string): boolean {
    return this.waiters.has(jobId);
  }

  /** Awaits a job's outcome (the job may have finished already). */
  add(jobId: string): Promise<unknown> {
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

  /** Checks an awaited job soon, in one query with the others asked for meanwhile. */
  checkSoon(id: string): void {
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

  /** Checks every awaited job (the poll's fallback for missed NOTIFYs). */
  async checkAll(): Promise<void> {
    if (this.waiters.size > 0) await this.checkWaiters([...this.waiters.keys()]);
  }

  /** Rejects every waiter with QueueClosedError. */
  close(): void {
    for (const id of [...this.waiters.keys()]) {
      this.settleWaiter(id, { ok: false, error: new QueueClosedError() });
    }
  }

  /** Settles the waiters of finished (or unknown) jobs among `ids`. */
  private async checkWaiters(ids: readonly string[]): Promise<void> {
    const { rows } = await this.pool.query<Pick<JobsTable, 'id' | 'status' | 'result' | 'error'>>(
      `select id, status, result, error from aps_jobs where id = any($1)`,
      [ids],
    );
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
}
