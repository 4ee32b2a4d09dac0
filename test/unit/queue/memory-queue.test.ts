import { describe, expect, it } from 'vitest';
import { MemoryQueue } from '../../../src/queue/memory-queue.js';
import { QueueClosedError } from '../../../src/queue/queue.js';
import { runJob } from '../../helpers.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('MemoryQueue', () => {
  it('bounds concurrency per lane and runs jobs in FIFO order', async () => {
    const queue = new MemoryQueue({ a: 2, b: 1 });
    const gates = Array.from({ length: 4 }, deferred);
    const started: number[] = [];
    const jobs = gates.map((gate, i) =>
      runJob(queue, 'a', async () => {
        started.push(i);
        await gate.promise;
        return i;
      }),
    );
    const other = runJob(queue, 'b', () => Promise.resolve('b'));
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(queue.stats().byType.a).toMatchObject({ queued: 2, running: 2, concurrency: 2 });
    await expect(other).resolves.toBe('b');
    gates[1]!.resolve();
    await jobs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.resolve();
    await expect(Promise.all(jobs)).resolves.toEqual([0, 1, 2, 3]);
    expect(queue.stats()).toMatchObject({
      totalJobs: 5,
      queuedJobs: 0,
      runningJobs: 0,
      completedJobs: 5,
      failedJobs: 0,
    });
  });

  it('counts failures and passes the error on', async () => {
    const queue = new MemoryQueue({ a: 1 });
    await expect(runJob(queue, 'a', () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    expect(queue.stats().byType.a).toMatchObject({ failed: 1, completed: 0 });
    expect(queue.history('a')[0]).toMatchObject({ status: 'failed', error: 'boom' });
  });

  it('keeps a bounded history while counting everything', async () => {
    const queue = new MemoryQueue({ a: 3 }, 5);
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => runJob(queue, 'a', () => Promise.resolve(i))),
    );
    expect(queue.history('a')).toHaveLength(5);
    expect(queue.stats().completedJobs).toBe(50);
  });

  it('rejects unknown job types', async () => {
    await expect(runJob(new MemoryQueue({ a: 1 }), 'zzz', () => Promise.resolve())).rejects.toThrow(
      /Unknown job type/,
    );
  });

  it('on close drops queued jobs, waits for running ones, refuses new ones', async () => {
    const queue = new MemoryQueue({ a: 1 });
    const gate = deferred();
    let finished = false;
    const running = runJob(queue, 'a', async () => {
      await gate.promise;
      finished = true;
    });
    const queued = runJob(queue, 'a', () => Promise.resolve('never'));
    const closing = queue.close(5000);
    await expect(queued).rejects.toBeInstanceOf(QueueClosedError);
    await expect(runJob(queue, 'a', () => Promise.resolve())).rejects.toBeInstanceOf(
      QueueClosedError,
    );
    gate.resolve();
    await closing;
    await running;
    expect(finished).toBe(true);
  });

  it('aborts jobs that outlive the close timeout', async () => {
    const queue = new MemoryQueue({ a: 1 });
    let aborted = false;
    const job = runJob(
      queue,
      'a',
      ({ signal }) =>
        new Promise<void>((resolve) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
        }),
    );
    await queue.close(20);
    await job;
    expect(aborted).toBe(true);
  });
});
