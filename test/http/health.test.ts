import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import type { Migration } from '../../src/db/migrator.js';
import { createTestApp, runJob, type TestApp } from '../helpers.js';
import { TEST_DATABASE_URL } from '../postgres/pg.js';

let t: TestApp;
beforeEach(async () => {
  t = await createTestApp({
    env: { QUEUE_AGENT_RUN_CONCURRENCY: '3', QUEUE_TOOL_EXECUTE_CONCURRENCY: '5' },
  });
});
afterEach(async () => {
  await t.close();
});

const lane = { queued: 0, running: 0, completed: 0, failed: 0 };

describe('GET /health', () => {
  it('is public, unprefixed and has exactly the spec fields', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ok',
      mode: 'normal',
      queueDriver: TEST_DATABASE_URL === undefined ? 'memory' : 'postgres',
      queue: {
        agentRunConcurrency: 3,
        toolExecuteConcurrency: 5,
        totalJobs: 0,
        queuedJobs: 0,
        runningJobs: 0,
        completedJobs: 0,
        failedJobs: 0,
        byType: { agentRun: lane, toolExecute: lane, knowledgeIndex: lane },
      },
      migration: {
        status: 'ok',
        pendingCount: 0,
        appliedCount: MIGRATIONS.length,
        errorMessage: null,
      },
    });
    expect((await t.app.inject({ method: 'GET', url: `${t.prefix}/health` })).statusCode).toBe(404);
  });

  it('counts real jobs of the queue', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const running = runJob(t.ctx.queue, 'agentRun', () => gate);
    await runJob(t.ctx.queue, 'toolExecute', () => Promise.resolve());
    await runJob(t.ctx.queue, 'toolExecute', () => Promise.reject(new Error('x'))).catch(
      () => undefined,
    );
    // A shared (PostgreSQL) queue's counts are refreshed in the background: poll.
    const queue = async () =>
      (await t.app.inject({ method: 'GET', url: '/health' })).json<{
        queue: Record<string, unknown>;
      }>().queue;
    await expect.poll(queue, { interval: 50, timeout: 3000 }).toMatchObject({
      totalJobs: 3,
      runningJobs: 1,
      completedJobs: 1,
      failedJobs: 1,
      byType: {
        agentRun: { ...lane, running: 1 },
        toolExecute: { ...lane, completed: 1, failed: 1 },
      },
    });
    release();
    await running;
  });

  it('answers without the database and leaks no secret', async () => {
    await t.ctx.database.close();
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    for (const secret of [t.ctx.secrets.jwtSecret, t.ctx.secrets.apiKeySalt, t.key]) {
      expect(res.body).not.toContain(secret);
    }
  });
});

describe('GET /health/ready', () => {
  const ready = (app: TestApp) => app.app.inject({ method: 'GET', url: '/health/ready' });
  const driver = TEST_DATABASE_URL === undefined ? 'sqlite' : 'postgres';

  it('is public and unprefixed: 503 NOT_READY until the search indexes are loaded, then 200', async () => {
    const before = await ready(t);
    expect(before.statusCode).toBe(503);
    expect(before.json()).toEqual({
      statusCode: 503,
      code: 'NOT_READY',
      message: 'The search indexes are still loading; retry shortly.',
    });

    await t.ctx.knowledge.start({ recover: true });
    const res = await ready(t);
    expect(res.statusCode).toBe(200);
    const body = res.json<{ databaseLatencyMs: number; checkedAt: string }>();
    expect(body).toEqual({
      status: 'ready',
      databaseDriver: driver,
      databaseLatencyMs: expect.any(Number) as number,
      checkedAt: expect.any(String) as string,
    });
    expect(Date.now() - Date.parse(body.checkedAt)).toBeLessThan(60_000);
    expect(
      (await t.app.inject({ method: 'GET', url: `${t.prefix}/health/ready` })).statusCode,
    ).toBe(404);
    // Liveness is unchanged by readiness.
    expect((await t.app.inject({ method: 'GET', url: '/health' })).json()).toMatchObject({
      status: 'ok',
    });
  });

  it('is in the OpenAPI document with its 200 and 503 bodies', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: `${t.prefix}/openapi.json` })).json<{
      paths: Record<string, { get?: { responses: Record<string, unknown>; security?: unknown } }>;
    }>();
    const op = doc.paths['/health/ready']?.get;
    expect(op?.security).toEqual([]);
    expect(Object.keys(op?.responses ?? {})).toEqual(expect.arrayContaining(['200', '503']));
    expect(JSON.stringify(op?.responses['200'])).toContain('databaseLatencyMs');
  });

  it('answers 503 DATABASE_UNAVAILABLE once the database stops answering', async () => {
    const u = await createTestApp({ env: { READY_CHECK_CACHE_MS: '0' } });
    try {
      await u.ctx.knowledge.start({ recover: true });
      expect((await ready(u)).statusCode).toBe(200);
      await u.ctx.database.close();
      const res = await ready(u);
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ statusCode: 503, code: 'DATABASE_UNAVAILABLE' });
      // /health still answers from memory.
      expect((await u.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    } finally {
      await u.close();
    }
  });

  it('reuses a database check for READY_CHECK_CACHE_MS, and concurrent polls share one', async () => {
    const u = await createTestApp({ env: { READY_CHECK_CACHE_MS: '60000' } });
    try {
      await u.ctx.knowledge.start({ recover: true });
      // Counts the checks that reach the database (the real ping still runs).
      const database = u.ctx.database;
      const ping = database.ping.bind(database);
      let pings = 0;
      database.ping = (timeoutMs) => {
        pings += 1;
        return ping(timeoutMs);
      };
      const answers = await Promise.all(Array.from({ length: 20 }, () => ready(u)));
      expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200));
      expect(pings).toBe(1);
      expect((await ready(u)).statusCode).toBe(200);
      expect(pings).toBe(1);
    } finally {
      await u.close();
    }
  });

  it('answers 503 READ_ONLY_MODE after a failed migration', async () => {
    const first = await createTestApp();
    await first.close(true);
    const failing: Migration = {
      name: '9999_broken',
      up: () => Promise.reject(new Error('disk full while adding a column')),
    };
    const u = await createTestApp({ dir: first.dir, migrations: [...MIGRATIONS, failing] });
    try {
      await u.ctx.knowledge.start({ recover: false });
      const res = await ready(u);
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        statusCode: 503,
        code: 'READ_ONLY_MODE',
        message: 'Application is in read-only mode because database migration failed',
      });
    } finally {
      await u.close();
    }
  });
});
