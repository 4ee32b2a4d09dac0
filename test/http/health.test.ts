import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
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
