/**
 * GET /metrics (src/metrics/): off unless configured, the token on the main port, the loopback
 * listener of METRICS_PORT, and figures that move while documents are indexed and searched.
 * Runs on SQLite and, under test:postgres, on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../src/server.js';
import { bearer, createTestApp, LogCapture, tempDir, testConfig } from '../helpers.js';
import { KnowledgeClient } from '../knowledge/helpers.js';

const TOKEN = 't'.repeat(20) + '-metrics-token-0123456789';
const onPostgres = process.env.TEST_DATABASE_URL !== undefined;

/** The value of one sample (`name{labels}` exactly as written), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The sum of a family's samples whose labels include every `key="value"` of `labels`. */
function total(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const have = (match[2] ?? '').split(',');
    if (wanted.every((w) => have.includes(w))) sum += Number(match[3]);
  }
  return sum;
}

describe('GET /metrics, off', () => {
  it('is 404 like any unknown path when neither METRICS_TOKEN nor METRICS_PORT is set', async () => {
    const t = await createTestApp();
    try {
      expect(t.ctx.metrics).toBeNull();
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ statusCode: 404, code: 'ROUTE_NOT_FOUND' });
    } finally {
      await t.close();
    }
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let k: KnowledgeClient;
  beforeAll(async () => {
    t = await createTestApp({ env: { METRICS_TOKEN: TOKEN } });
    k = new KnowledgeClient(t);
    // A route meeting a database outage (PostgreSQL's "terminating connection", 57P01).
    t.app.get('/test/database-down', () => {
      throw Object.assign(new Error('terminating connection due to administrator command'), {
        code: '57P01',
      });
    });
  });
  afterAll(async () => {
    await t.close();
  });

  const scrape = async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  it('answers 401 from the catalogue without the token or with a wrong one, 200 with it', async () => {
    for (const headers of [
      {},
      bearer('wrong'),
      bearer(TOKEN + 'x'),
      { authorization: TOKEN },
      bearer(t.key), // an API key is no metrics token
      { 'x-api-key': TOKEN },
    ]) {
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        statusCode: 401,
        code: 'AUTH_UNAUTHORIZED',
        message: 'Missing or invalid credentials.',
      });
    }
    await scrape();
    // Outside API_PREFIX only.
    const prefixed = await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/metrics`,
      headers: bearer(TOKEN),
    });
    expect(prefixed.statusCode).toBe(404);
    // The token never reaches the logs.
    expect(t.logs.text).not.toContain(TOKEN);
  });

  it('counts requests by route pattern, never the raw URL, and leaves the scrape out', async () => {
    const before = await scrape();
    const route = `${t.prefix}/knowledge/documents/:id`;
    const labels = { method: 'GET', route, status_class: '4xx' };
    const counted = total(before, 'aps_http_requests_total', labels);
    for (let i = 0; i < 3; i++) {
      const res = await k.get(`/documents/00000000-0000-4000-8000-00000000000${String(i)}`);
      expect(res.statusCode).toBe(404);
    }
    await t.app.inject({ method: 'GET', url: '/no/such/path/secret-looking-123' });
    const after = await scrape();
    expect(total(after, 'aps_http_requests_total', labels)).toBe(counted + 3);
    expect(total(after, 'aps_http_request_duration_seconds_count', labels)).toBe(counted + 3);
    expect(
      total(after, 'aps_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }),
    ).toBe(counted + 3);
    expect(after).not.toContain('00000000-0000-4000');
    expect(after).not.toContain('secret-looking');
    expect(total(after, 'aps_http_requests_total', { route: 'unmatched' })).toBeGreaterThan(0);
    expect(after).not.toMatch(/route="\/metrics"/);
  });

  it('shows documents, chunks, jobs, stages and searches moving while documents index', async () => {
    const before = await scrape();
    for (const family of [
      'aps_nodejs_eventloop_lag_seconds',
      'aps_process_resident_memory_bytes',
      'aps_http_requests_in_flight',
      'aps_http_requests_shed_total',
      'aps_queue_jobs',
      'aps_queue_job_duration_seconds',
      'aps_documents',
      'aps_chunks',
      'aps_index_stage_duration_seconds',
      'aps_converter_workers',
      'aps_converter_worker_starts_total',
      'aps_converter_worker_kills_total',
      'aps_embedding_batch_duration_seconds',
      'aps_search_duration_seconds',
      'aps_database_errors_total',
      'aps_sse_clients',
      'aps_ready',
      'aps_http_requests_total',
      'aps_http_request_duration_seconds',
    ]) {
      expect(before, family).toMatch(new RegExp(`^# TYPE ${family} `, 'm'));
    }
    // Not ready until the search indexes load (start-up, which createTestApp leaves out).
    expect(sample(before, 'aps_ready')).toBe(0);
    await t.ctx.knowledge.start({ recover: true });
    // The pool's families exist where there is a pool.
    expect(/^# TYPE aps_db_pool_connections /m.test(before)).toBe(onPostgres);
    const indexedBefore = sample(before, 'aps_documents{status="indexed"}') ?? 0;
    const jobsBefore = total(before, 'aps_queue_job_duration_seconds_count', {
      lane: 'knowledgeIndex',
      outcome: 'completed',
    });

    const docs = await Promise.all(
      ['alpha', 'beta', 'gamma'].map((word) =>
        k.uploadOk(`${word}.md`, `# ${word}\n\nThe ${word} turtles swim in warm water.`, {
          index: 'true',
        }),
      ),
    );
    for (const doc of docs) {
      const done = await k.waitFor(doc.id, ['indexed', 'failed']);
      expect(done.status, done.errorMessage ?? '').toBe('indexed');
    }
    for (const mode of ['keyword', 'semantic', 'hybrid']) {
      expect(await k.hits({ query: 'turtles', mode })).not.toHaveLength(0);
    }

    const after = await scrape();
    expect(sample(after, 'aps_documents{status="indexed"}')).toBe(indexedBefore + 3);
    expect(sample(after, 'aps_chunks')).toBeGreaterThan(0);
    expect(
      total(after, 'aps_queue_job_duration_seconds_count', {
        lane: 'knowledgeIndex',
        outcome: 'completed',
      }),
    ).toBe(jobsBefore + 3);
    for (const stage of ['convert', 'chunk', 'embed', 'index']) {
      expect(
        total(after, 'aps_index_stage_duration_seconds_count', { stage }),
        stage,
      ).toBeGreaterThanOrEqual(3);
    }
    expect(
      total(after, 'aps_embedding_batch_duration_seconds_count', { kind: 'documents' }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      total(after, 'aps_embedding_batch_duration_seconds_count', { kind: 'query' }),
    ).toBeGreaterThanOrEqual(2);
    for (const mode of ['keyword', 'semantic', 'hybrid']) {
      expect(total(after, 'aps_search_duration_seconds_count', { mode }), mode).toBe(1);
    }
    expect(
      total(after, 'aps_http_requests_total', {
        method: 'POST',
        route: `${t.prefix}/knowledge/documents/upload`,
        status_class: '2xx',
      }),
    ).toBe(3);
    // PostgreSQL's counts are shared, refreshed every second or two.
    await expect
      .poll(
        async () => sample(await scrape(), 'aps_queue_jobs{lane="knowledgeIndex",state="queued"}'),
        { timeout: 10_000 },
      )
      .toBe(0);
    expect(sample(after, 'aps_ready')).toBe(1);
    expect(sample(after, 'aps_sse_clients')).toBe(0);
    expect(sample(after, 'aps_database_errors_total{kind="unavailable"}')).toBe(0);
  });

  it('counts database outages and the 5xx they answer', async () => {
    const before = await scrape();
    const errors = sample(before, 'aps_database_errors_total{kind="unavailable"}') ?? 0;
    const res = await t.app.inject({ method: 'GET', url: '/test/database-down' });
    expect(res.json()).toMatchObject({ statusCode: 503, code: 'DATABASE_UNAVAILABLE' });
    const after = await scrape();
    expect(sample(after, 'aps_database_errors_total{kind="unavailable"}')).toBe(errors + 1);
    expect(
      total(after, 'aps_http_requests_total', {
        route: '/test/database-down',
        status_class: '5xx',
      }),
    ).toBe(1);
  });
});

describe('METRICS_PORT', () => {
  it('serves /metrics without a token on its own loopback listener; the main port has none', async () => {
    // SQLite in either suite: the listener knows nothing of the database.
    const server = await startServer(
      testConfig(tempDir(), { PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn' }),
      { print: () => undefined, logStream: new LogCapture() },
    );
    try {
      expect(server.metricsAddress).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      await fetch(`${server.address}/health`);
      const res = await fetch(`${server.metricsAddress ?? ''}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(total(text, 'aps_http_requests_total', { route: '/health' })).toBe(1);
      expect(sample(text, 'aps_ready')).toBeDefined();

      const other = await fetch(`${server.metricsAddress ?? ''}/health`);
      expect(other.status).toBe(404);
      expect(await other.json()).toMatchObject({ statusCode: 404, code: 'ROUTE_NOT_FOUND' });
      const post = await fetch(`${server.metricsAddress ?? ''}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect((await fetch(`${server.address}/metrics`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
