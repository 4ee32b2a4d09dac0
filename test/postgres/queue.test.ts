/**
 * The shared PostgreSQL job queue: two PostgresQueue instances (two pools) on one database, and
 * one in a child process that is SIGKILLed while it runs a job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type PostgresDatabase } from '../../src/db/database.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { migrate } from '../../src/db/migrator.js';
import { AppError } from '../../src/errors.js';
import { JobLeaseLostError } from '../../src/queue/postgres/errors.js';
import { PostgresQueue } from '../../src/queue/postgres/queue.js';
import type { JobContext } from '../../src/queue/queue.js';
import { freshDatabase, TEST_DATABASE_URL, type FreshDatabase } from './pg.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');
const LEASE_MS = 1500;
const TYPES = { work: 2, other: 1 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await sleep(20);
  }
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe.skipIf(!TEST_DATABASE_URL)('PostgresQueue (shared between instances)', () => {
  let fresh: FreshDatabase;
  const databases: PostgresDatabase[] = [];
  const queues: PostgresQueue[] = [];
  let admin: PostgresDatabase;

  async function pool() {
    const database = await openDatabase({
      driver: 'postgres',
      url: fresh.url,
      poolMax: 10,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 5000,
    });
    if (database.driver !== 'postgres') throw new Error('expected postgres');
    databases.push(database);
    return database.pool;
  }

  async function instance(
    concurrency: Record<string, number> = TYPES,
    options: Partial<ConstructorParameters<typeof PostgresQueue>[2]> = {},
  ) {
    const queue = new PostgresQueue(await pool(), concurrency, {
      leaseMs: LEASE_MS,
      historyLimit: 100,
      pollMs: 250,
      ...options,
    });
    queues.push(queue);
    return queue;
  }

  async function row(id: string) {
    const { rows } = await admin.pool.query<{
      status: string;
      attempt: number;
      owner: string | null;
      result: unknown;
      error: unknown;
    }>('select status, attempt, owner, result, error from aps_jobs where id = $1', [id]);
    return rows[0];
  }

  beforeAll(async () => {
    fresh = await freshDatabase();
    const database = await openDatabase({
      driver: 'postgres',
      url: fresh.url,
      poolMax: 4,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 5000,
    });
    if (database.driver !== 'postgres') throw new Error('expected postgres');
    admin = database;
    const state = await migrate(admin, MIGRATIONS);
    expect(state.errorMessage).toBeNull();
    expect(state.status).toBe('ok');
  });

  afterEach(async () => {
    await Promise.all(queues.splice(0).map((q) => q.close(500)));
    await Promise.all(databases.splice(0).map((d) => d.close()));
    await admin.pool.query('truncate aps_jobs, aps_job_counts');
  });

  afterAll(async () => {
    await admin.close();
    await fresh.drop();
  });

  it('runs a job enqueued on A on B (the only one with a handler); A waits for the result', async () => {
    const a = await instance();
    const b = await instance();
    const ran: string[] = [];
    b.handle('work', (payload, job) => {
      ran.push(job.id);
      return Promise.resolve({ echo: payload, attempt: job.attempt });
    });
    const id = await a.enqueue('work', { n: 1, text: 'ü' });
    await expect(a.wait(id)).resolves.toEqual({ echo: { n: 1, text: 'ü' }, attempt: 1 });
    expect(ran).toEqual([id]);
    expect(await row(id)).toMatchObject({ status: 'completed', attempt: 1, owner: null });
    // A job that finished before wait() was called, and an explicit id.
    const own = '0b8f7f8e-2b7a-4c59-9a53-0d6c1b2e4f11';
    expect(await a.enqueue('work', 'x', { id: own })).toBe(own);
    await until(async () => (await row(own))?.status === 'completed');
    await expect(a.wait(own)).resolves.toEqual({ echo: 'x', attempt: 1 });
    await expect(b.wait(own)).resolves.toEqual({ echo: 'x', attempt: 1 });
    await expect(a.enqueue('work', 'again', { id: own })).rejects.toThrow(/exists already/);
    await expect(a.wait('no-such-job')).rejects.toThrow(/Unknown job/);
    await expect(a.enqueue('nope', {})).rejects.toThrow(/Unknown job type/);
  });

  it('bounds the jobs running at once per instance, and runs each job once', async () => {
    const a = await instance({ work: 2, other: 1 });
    const b = await instance({ work: 3, other: 1 });
    const now = { a: 0, b: 0 };
    const peak = { a: 0, b: 0, total: 0 };
    const runs = new Map<string, number>();
    const handler = (who: 'a' | 'b') => async (_: unknown, job: JobContext) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      now[who] += 1;
      peak[who] = Math.max(peak[who], now[who]);
      peak.total = Math.max(peak.total, now.a + now.b);
      await sleep(60);
      now[who] -= 1;
      return who;
    };
    a.handle('work', handler('a'));
    b.handle('work', handler('b'));
    const ids = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? a : b).enqueue('work', i)),
    );
    const results = await Promise.all(ids.map((id) => a.wait(id)));
    expect(peak.a).toBeLessThanOrEqual(2);
    expect(peak.b).toBeLessThanOrEqual(3);
    expect(peak.total).toBe(5);
    expect(results).toContain('a');
    expect(results).toContain('b');
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(30);
  });

  it('returns handler errors to waiters with their code and message, without retrying', async () => {
    const a = await instance();
    const b = await instance();
    let calls = 0;
    b.handle('work', (payload) => {
      calls += 1;
      if (payload === 'app') throw new AppError('KNOWLEDGE_CONVERTER_FAILED', 'Indexing failed: x');
      if (payload === 'nul') throw new Error('bad \u0000 byte');
      return Promise.reject(new TypeError('plain failure'));
    });
    const appId = await a.enqueue('work', 'app');
    const error = await a.wait(appId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      code: 'KNOWLEDGE_CONVERTER_FAILED',
      message: 'Indexing failed: x',
      statusCode: 502,
    });
    const plainId = await a.enqueue('work', 'plain');
    const plain = await a.wait(plainId).catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(Error);
    expect(plain).not.toBeInstanceOf(AppError);
    expect((plain as Error).message).toBe('plain failure');
    // What PostgreSQL's jsonb cannot hold fails the job with an error it can.
    const nul = await a.enqueue('work', 'nul');
    const nulError = await a.wait(nul).catch((e: unknown) => e);
    expect((nulError as Error).message).toMatch(/The job's error cannot be stored/);
    await sleep(LEASE_MS + 500);
    expect(calls).toBe(3);
    expect(await row(appId)).toMatchObject({
      status: 'failed',
      attempt: 1,
      error: { code: 'KNOWLEDGE_CONVERTER_FAILED', message: 'Indexing failed: x' },
    });
  });

  it('re-runs the job of an instance that was SIGKILLed, elsewhere, after the lease', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aps-queue-'));
    const script = join(dir, 'worker.mts');
    const pgPath = createRequire(import.meta.url).resolve('pg');
    await writeFile(
      script,
      `import pg from ${JSON.stringify(pgPath)};
       import { PostgresQueue } from ${JSON.stringify(join(ROOT, 'src/queue/postgres/queue.ts'))};
       const pool = new pg.Pool({ connectionString: process.argv[2] });
       const queue = new PostgresQueue(pool, { work: 1 }, { leaseMs: ${LEASE_MS}, historyLimit: 100, pollMs: 250 });
       queue.handle('work', (_payload, job) => {
         console.log(JSON.stringify({ started: job.id, attempt: job.attempt }));
         return new Promise(() => undefined);
       });
       console.log(JSON.stringify({ ready: true }));
      `,
    );
    let child: ChildProcess | undefined;
    try {
      // Node itself with tsx's loader: the job runs in the very process that gets the SIGKILL.
      child = spawn(process.execPath, ['--import', 'tsx', script, fresh.url], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines: Record<string, unknown>[] = [];
      createInterface({ input: child.stdout! }).on('line', (line) => {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      });
      await until(() => lines.some((l) => l.ready === true), 15_000);

      const b = await instance();
      const id = await b.enqueue('work', 'survive');
      const waited = b.wait(id);
      await until(() => lines.find((l) => l.started === id));
      expect(lines.find((l) => l.started === id)).toEqual({ started: id, attempt: 1 });
      expect(await b.isLive(id)).toBe(true);

      const runs: { attempt: number; at: number }[] = [];
      b.handle('work', (payload, job) => {
        runs.push({ attempt: job.attempt, at: Date.now() });
        return Promise.resolve(`done by B: ${String(payload)}`);
      });
      await sleep(LEASE_MS); // its heartbeats keep it there meanwhile
      expect(runs).toEqual([]);
      expect(await row(id)).toMatchObject({ status: 'running', attempt: 1 });

      const killedAt = Date.now();
      const exited = new Promise((r) => {
        child?.once('exit', (_code, signal) => {
          r(signal);
        });
      });
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      await expect(waited).resolves.toBe('done by B: survive');
      expect(runs.map((r) => r.attempt)).toEqual([2]);
      const takeover = runs[0]!.at - killedAt;
      expect(takeover).toBeLessThan(LEASE_MS + 1500);
      console.log(
        `[queue] SIGKILLed instance's job re-run after ${takeover} ms (lease ${LEASE_MS} ms)`,
      );
      expect(await row(id)).toMatchObject({ status: 'completed', attempt: 2 });
    } finally {
      child?.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps the job of a handler that holds the event loop for several leases', async () => {
    // Another process watches the job as a reaping instance would: is its lease ever expired?
    const watcher = spawn(
      process.execPath,
      [
        '-e',
        `const pg = require('pg');
const client = new pg.Client({ connectionString: process.argv[1] });
client.connect().then(() => {
  console.log('ready');
  setInterval(async () => {
    const { rows } = await client.query(
      "select count(*)::int as n from aps_jobs where status = 'running' and lease_until < now()");
    console.log(rows[0].n);
  }, 50);
});`,
        fresh.url,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const seen: string[] = [];
    createInterface({ input: watcher.stdout }).on('line', (line) => seen.push(line));
    try {
      await until(() => seen.includes('ready'), 15_000);
      const a = await instance();
      await sleep(2000); // an instance up for a moment: its lease keeper has started
      a.handle('work', () => {
        // A synchronous pass of 3.5 leases: no timer of this thread runs meanwhile.
        const end = Date.now() + 3.5 * LEASE_MS;
        while (Date.now() < end) {
          // busy
        }
        return Promise.resolve('held');
      });
      const id = await a.enqueue('work', 'x');
      await expect(a.wait(id)).resolves.toBe('held');
      const polls = seen.filter((l) => l !== 'ready');
      expect(polls.length).toBeGreaterThan(20); // it watched throughout
      expect(polls.filter((n) => n !== '0')).toEqual([]);
      expect(await row(id)).toMatchObject({ status: 'completed', attempt: 1 });
    } finally {
      watcher.kill();
    }
  });

  it('fails a job whose instances died maxAttempts times', async () => {
    const a = await instance({ work: 1, other: 1 }, { maxAttempts: 3 });
    // What three SIGKILLed runs leave: running, third attempt, an owner that renews no more.
    await admin.pool.query(
      `insert into aps_jobs (id, type, status, payload, attempt, owner, lease_until, started_at)
       values ('dead', 'work', 'running', '{}', 3, 'gone:1:x', now() - interval '1 second', now())`,
    );
    const error = await a.wait('dead').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: 'INTERNAL_ERROR' });
    expect((error as Error).message).toMatch(/abandoned 3 times/);
    expect(await a.isLive('dead')).toBe(false);
  });

  it('does not let a run whose lease was taken over overwrite the new owner', async () => {
    const a = await instance({ work: 1, other: 1 });
    const b = await instance({ work: 1, other: 1 });
    const release = gate();
    let aSignal: AbortSignal | undefined;
    a.handle('work', async (_payload, job) => {
      aSignal = job.signal;
      await release.opened; // ignores its signal on purpose
      return 'from A';
    });
    const id = await a.enqueue('work', null);
    await until(() => aSignal);
    // A stalls past its lease and the reaper requeues the job (exactly the reaper's update).
    await admin.pool.query(
      `update aps_jobs set status = 'queued', owner = null, lease_until = null where id = $1`,
      [id],
    );
    b.handle('work', (_payload, job) => Promise.resolve(`from B (attempt ${job.attempt})`));
    await expect(b.wait(id)).resolves.toBe('from B (attempt 2)');
    await until(() => aSignal?.aborted);
    expect(aSignal?.reason).toBeInstanceOf(JobLeaseLostError);
    release.open();
    await sleep(300);
    expect(await row(id)).toMatchObject({
      status: 'completed',
      attempt: 2,
      result: 'from B (attempt 2)',
    });
  });

  it('close() waits for running handlers, then aborts and releases them at once', async () => {
    const a = await instance({ work: 2, other: 1 });
    const b = await instance({ work: 2, other: 1 });
    const finishing = gate();
    a.handle('work', (payload, job) => {
      if (payload === 'quick') return finishing.opened.then(() => 'quick done');
      return new Promise((_, reject) => {
        job.signal.addEventListener('abort', () => {
          reject(new AppError('SERVICE_UNAVAILABLE', 'shutting down'));
        });
      });
    });
    const quick = await a.enqueue('work', 'quick');
    const slow = await a.enqueue('work', 'slow');
    await until(async () => (await row(slow))?.status === 'running');
    await until(async () => (await row(quick))?.status === 'running');
    const bRuns: { payload: unknown; attempt: number; at: number }[] = [];
    b.handle('work', (payload, job) => {
      bRuns.push({ payload, attempt: job.attempt, at: Date.now() });
      return Promise.resolve('slow done by B');
    });
    setTimeout(finishing.open, 100);
    const closing = a.close(400);
    await expect(a.enqueue('work', 'late')).rejects.toThrow(/closed/);
    const closeStarted = Date.now();
    await closing;
    const closedAt = Date.now();
    expect(closedAt - closeStarted).toBeLessThan(1500);
    expect(await row(quick)).toMatchObject({ status: 'completed', result: 'quick done' });
    await expect(b.wait(slow)).resolves.toBe('slow done by B');
    expect(bRuns).toHaveLength(1);
    expect(bRuns[0]).toMatchObject({ payload: 'slow', attempt: 1 });
    // Handed over at once, not after the lease.
    expect(bRuns[0]!.at - closedAt).toBeLessThan(500);
    await expect(a.wait(slow)).rejects.toThrow(/closed/);
  });

  it('stats() reports the shared counts; isLive sees jobs of every instance', async () => {
    const a = await instance(
      { work: 2, other: 1 },
      { historyLimit: 2, pruneMs: 200, statsMs: 200 },
    );
    const b = await instance({ work: 1, other: 1 });
    const open = gate();
    b.handle('work', async () => {
      await open.opened;
      return 'ok';
    });
    const ids = await Promise.all([1, 2, 3].map((n) => a.enqueue('work', n)));
    await until(() => {
      const s = a.stats();
      return s.byType.work?.running === 1 && s.byType.work.queued === 2;
    });
    const s = a.stats();
    expect(s).toMatchObject({
      driver: 'postgres',
      queuedJobs: 2,
      runningJobs: 1,
      totalJobs: 3,
      byType: { work: { queued: 2, running: 1, completed: 0, failed: 0, concurrency: 2 } },
    });
    expect(s.byType.other).toEqual({
      queued: 0,
      running: 0,
      completed: 0,
      failed: 0,
      concurrency: 1,
    });
    expect(await Promise.all(ids.map((id) => a.isLive(id)))).toEqual([true, true, true]);
    open.open();
    await Promise.all(ids.map((id) => a.wait(id)));
    expect(await Promise.all(ids.map((id) => a.isLive(id)))).toEqual([false, false, false]);
    expect(await a.isLive('unknown')).toBe(false);
    await until(() => a.stats().completedJobs === 3);
    // Pruned to the last 2 finished jobs; the count keeps the pruned one.
    await until(async () => {
      const { rows } = await admin.pool.query('select id from aps_jobs');
      return rows.length === 2;
    });
    await until(() => {
      const t = a.stats();
      return t.completedJobs === 3 && t.totalJobs === 3 ? t : undefined;
    });
    await until(() => b.stats().byType.work?.completed === 3);
    expect(b.stats().byType.work).toMatchObject({ queued: 0, running: 0, concurrency: 1 });
  });

  it('reconnects its LISTEN connection when it drops, and polls meanwhile', async () => {
    const a = await instance({ work: 1, other: 1 }, { pollMs: 1000 });
    const b = await instance({ work: 1, other: 1 }, { pollMs: 1000 });
    b.handle('work', (payload) => Promise.resolve(payload));
    const listeners = async () => {
      const { rows } = await admin.pool.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
         where datname = current_database() and application_name like '%(queue)'`,
      );
      return rows[0]!.n;
    };
    await until(async () => (await listeners()) === 2);
    await admin.pool.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
       where datname = current_database() and application_name like '%(queue)'`,
    );
    // Without NOTIFY the poll still finds the job and the result.
    await expect(a.wait(await a.enqueue('work', 'during'))).resolves.toBe('during');
    await until(async () => (await listeners()) === 2);
    // Back on NOTIFY: well under the 1 s poll.
    const t0 = Date.now();
    await expect(a.wait(await a.enqueue('work', 'after'))).resolves.toBe('after');
    expect(Date.now() - t0).toBeLessThan(500);
  });

  it('measures enqueue-on-A to start-on-B latency and throughput of trivial jobs', async () => {
    const a = await instance({ work: 8, other: 1 }, { historyLimit: 10_000 });
    const b = await instance({ work: 8, other: 1 }, { historyLimit: 10_000 });
    let started: number | undefined;
    b.handle('work', () => {
      started = performance.now();
      return Promise.resolve(null);
    });
    const latencies: number[] = [];
    for (let i = 0; i < 50; i += 1) {
      started = undefined;
      const t0 = performance.now();
      const id = await a.enqueue('work', i);
      const t1 = await until(() => started, 5000);
      latencies.push(t1 - t0);
      await a.wait(id);
    }
    latencies.sort((x, y) => x - y);
    const p50 = latencies[25]!;
    const p95 = latencies[47]!;
    expect(p50).toBeLessThan(100);

    a.handle('work', () => Promise.resolve(null));
    const n = 2000;
    const t0 = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < n; i += 100) {
      ids.push(
        ...(await Promise.all(
          Array.from({ length: 100 }, (_, j) => (j % 2 === 0 ? a : b).enqueue('work', i + j)),
        )),
      );
    }
    const enqueued = performance.now();
    await Promise.all(ids.map((id) => a.wait(id)));
    const done = performance.now();
    const { rows } = await admin.pool.query<{ n: number }>(
      `select count(*)::int as n from aps_jobs where status = 'completed' and attempt = 1`,
    );
    expect(rows[0]!.n).toBeGreaterThanOrEqual(n);
    console.log(
      `[queue] enqueue on A -> start on B: p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms; ` +
        `${n} trivial jobs (2 instances x 8): ${Math.round((n / (done - t0)) * 1000)} jobs/s ` +
        `(enqueue ${Math.round(enqueued - t0)} ms, all done ${Math.round(done - t0)} ms)`,
    );
  }, 60_000);
});
