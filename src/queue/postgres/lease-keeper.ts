/**
 * Keeps this instance's leases alive from a worker thread (lease-keeper-thread.ts) with its own
 * connection. The main thread's heartbeat (leases.ts) still renews them and notices lost jobs;
 * this second renewal only matters while the main thread is busy: a long synchronous pass (a
 * large document's) can no longer let a lease expire and another instance run the job again.
 *
 * A main thread that does not tell the thread about its jobs for `maxStallMs` (max(60 s,
 * 10 × the lease)) is taken for hung: the thread stops renewing and the jobs are reaped as those
 * of a dead instance. Longer than any pass a healthy instance makes, short enough that a hung
 * one gives its jobs up within a minute or two.
 */
import type pg from 'pg';
import { spawnWorkerModule } from '../../worker-threads.js';

export interface KeptJob {
  id: string;
  attempt: number;
}

export class LeaseKeeper {
  private readonly worker;

  constructor(options: { pool: pg.Pool; owner: string; leaseMs: number; everyMs: number }) {
    ({ worker: this.worker } = spawnWorkerModule(import.meta.url, 'lease-keeper-thread'));
    // Never what keeps the process running; a thread that fails leaves the main heartbeat.
    this.worker.unref();
    this.worker.on('error', () => undefined);
    const { connectionString, host, port, user, password, database, ssl } = options.pool.options;
    this.worker.postMessage({
      type: 'start',
      // (A password given as a function cannot cross to the thread: the URL's is kept.)
      connection: {
        connectionString,
        host,
        port,
        user,
        password: typeof password === 'string' ? password : undefined,
        database,
        ssl,
      },
      owner: options.owner,
      leaseMs: options.leaseMs,
      everyMs: options.everyMs,
      maxStallMs: Math.max(60_000, 10 * options.leaseMs),
    });
  }

  /** The jobs running here now (and a sign that the main thread is alive). */
  keep(jobs: readonly KeptJob[]): void {
    this.worker.postMessage({
      type: 'jobs',
      jobs: jobs.map((j) => ({ id: j.id, attempt: j.attempt })),
    });
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}
