/**
 * The in-memory job queue: FIFO lanes per job type with bounded concurrency. Finished jobs are
 * counted, and only the last `historyLimit` of each lane are kept, so memory stays bounded.
 */
import { randomUUID } from 'node:crypto';
import {
  QueueClosedError,
  summarize,
  type JobContext,
  type JobHandler,
  type JobQueue,
  type QueueStats,
} from './queue.js';

interface FinishedJob {
  id: string;
  type: string;
  status: 'completed' | 'failed';
  enqueuedAt: number;
  startedAt: number;
  finishedAt: number;
  error?: string;
}

const OUTCOME_TTL_MS = 60_000;

interface PendingJob {
  id: string;
  enqueuedAt: number;
  start: () => void;
  cancel: (error: Error) => void;
}

class Lane {
  readonly waiting: PendingJob[] = [];
  running = 0;
  completed = 0;
  failed = 0;
  readonly history: FinishedJob[] = [];

  constructor(readonly concurrency: number) {}
}

export class MemoryQueue implements JobQueue {
  readonly driver = 'memory';
  private readonly lanes = new Map<string, Lane>();
  private readonly handlers = new Map<string, JobHandler>();
  /** Outcomes of jobs, from enqueue until waited for or OUTCOME_TTL_MS after they settle. */
  private readonly outcomes = new Map<string, Promise<unknown>>();
  private readonly live = new Set<string>();
  private readonly controller = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(
    concurrency: Record<string, number>,
    private readonly historyLimit = 1000,
  ) {
    for (const [type, n] of Object.entries(concurrency)) this.lanes.set(type, new Lane(n));
  }

  handle(type: string, handler: JobHandler): void {
    if (!this.lanes.has(type)) throw new Error(`Unknown job type: ${type}`);
    this.handlers.set(type, handler);
  }

  enqueue(type: string, payload: unknown, options: { id?: string } = {}): Promise<string> {
    const handler = this.handlers.get(type);
    if (handler === undefined) return Promise.reject(new Error(`Unknown job type: ${type}`));
    if (this.closed) return Promise.reject(new QueueClosedError());
    const id = options.id ?? randomUUID();
    this.live.add(id);
    const outcome = this.run(type, id, (job) => handler(payload, job)).finally(() => {
      this.live.delete(id);
      // Kept a while for a late `wait`, then dropped: nobody may ever wait (async requests).
      setTimeout(() => this.outcomes.delete(id), OUTCOME_TTL_MS).unref();
    });
    // Nobody may wait for it (an async index request): the outcome is on the job's subject.
    outcome.catch(() => undefined);
    this.outcomes.set(id, outcome);
    return Promise.resolve(id);
  }

  wait(jobId: string): Promise<unknown> {
    const outcome = this.outcomes.get(jobId);
    if (outcome === undefined) return Promise.reject(new Error(`Unknown job: ${jobId}`));
    return outcome.finally(() => this.outcomes.delete(jobId));
  }

  isLive(jobId: string): Promise<boolean> {
    return Promise.resolve(this.live.has(jobId));
  }

  private run<T>(type: string, id: string, handler: (job: JobContext) => Promise<T>): Promise<T> {
    const lane = this.lanes.get(type);
    if (lane === undefined) return Promise.reject(new Error(`Unknown job type: ${type}`));

    return new Promise<T>((resolve, reject) => {
      const job: PendingJob = {
        id,
        enqueuedAt: Date.now(),
        cancel: reject,
        start: () => {
          lane.running += 1;
          const startedAt = Date.now();
          const finish = (status: FinishedJob['status'], error?: string) => {
            lane.running -= 1;
            lane[status] += 1;
            lane.history.push({
              id: job.id,
              type,
              status,
              enqueuedAt: job.enqueuedAt,
              startedAt,
              finishedAt: Date.now(),
              ...(error === undefined ? {} : { error }),
            });
            if (lane.history.length > this.historyLimit) lane.history.shift();
            this.pump(lane);
          };
          const promise = Promise.resolve()
            .then(() => handler({ id: job.id, attempt: 1, signal: this.controller.signal }))
            .then(
              (value) => {
                finish('completed');
                resolve(value);
              },
              (error: unknown) => {
                finish('failed', error instanceof Error ? error.message : String(error));
                reject(error instanceof Error ? error : new Error(String(error)));
              },
            );
          this.inFlight.add(promise);
          void promise.finally(() => this.inFlight.delete(promise));
        },
      };
      lane.waiting.push(job);
      this.pump(lane);
    });
  }

  private pump(lane: Lane): void {
    while (!this.closed && lane.running < lane.concurrency && lane.waiting.length > 0) {
      lane.waiting.shift()?.start();
    }
  }

  /** Finished jobs still held for inspection, oldest first. */
  history(type: string): readonly FinishedJob[] {
    return this.lanes.get(type)?.history ?? [];
  }

  stats(): QueueStats {
    const byType: QueueStats['byType'] = {};
    for (const [type, lane] of this.lanes) {
      byType[type] = {
        queued: lane.waiting.length,
        running: lane.running,
        completed: lane.completed,
        failed: lane.failed,
        concurrency: lane.concurrency,
      };
    }
    return summarize(this.driver, byType);
  }

  async close(timeoutMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const lane of this.lanes.values()) {
      for (const job of lane.waiting.splice(0)) job.cancel(new QueueClosedError());
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.controller.abort(new QueueClosedError());
        resolve();
      }, timeoutMs);
      timer.unref();
    });
    const settled = Promise.allSettled([...this.inFlight]).then(() => undefined);
    await Promise.race([settled, timeout]);
    clearTimeout(timer);
    // Aborted jobs get a moment to clean up (they may still write) before the caller closes the
    // resources they use.
    if (this.controller.signal.aborted) {
      await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    }
  }
}
