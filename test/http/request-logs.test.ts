/**
 * Request logs: health polls and quick successful reads stay out of `info` (LOG_REQUESTS=notable,
 * the default); requests that change state or fail are logged; LOG_REQUESTS=all logs every one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const requestLines = (t: TestApp, url: string) =>
  t.logs.lines
    .map((l) => JSON.parse(l) as { level: number; req?: { url?: string }; reqId?: string })
    .filter((l) => l.req?.url === url);

describe('request logs', () => {
  it('a /health poll writes no info line; another request still does', async () => {
    t = await createTestApp();
    const health = await t.app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    const other = await t.app.inject({ method: 'GET', url: `${t.prefix}/knowledge/documents` });
    expect(other.statusCode).toBe(401);
    expect(requestLines(t, '/health')).toEqual([]);
    expect(t.logs.text).not.toContain(`"reqId":"${health.headers['x-request-id'] as string}"`);
    const logged = requestLines(t, `${t.prefix}/knowledge/documents`);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged[0]!.level).toBe(30);
  });

  it('at LOG_LEVEL=debug the health polls are logged', async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'debug' } });
    await t.app.inject({ method: 'GET', url: '/health' });
    expect(requestLines(t, '/health').length).toBeGreaterThan(0);
  });
});

describe('a request line', () => {
  it('is one info line at the end: method, url, address, status, time, request id; no credentials', async () => {
    t = await createTestApp({ env: { LOG_REQUESTS: 'all' } });
    const url = `${t.prefix}/knowledge/commands`;
    const res = await t.app.inject({
      method: 'GET',
      url,
      headers: { authorization: `Bearer ${t.key}`, 'x-request-id': 'req-line-1' },
    });
    expect(res.statusCode).toBe(200);
    const lines = t.logs.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.reqId === 'req-line-1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { method: 'GET', url, remoteAddress: '127.0.0.1' },
      res: { statusCode: 200 },
    });
    expect(lines[0]!.responseTime).toEqual(expect.any(Number));
    expect(t.logs.text).not.toContain(t.key);
  });

  it('at LOG_LEVEL=warn and silent no request line is written', async () => {
    for (const level of ['warn', 'silent']) {
      t = await createTestApp({ env: { LOG_LEVEL: level, LOG_REQUESTS: 'all' } });
      const res = await t.app.inject({
        method: 'GET',
        url: `${t.prefix}/knowledge/commands`,
        headers: { authorization: `Bearer ${t.key}` },
      });
      expect(res.statusCode).toBe(200);
      expect(t.logs.text).not.toContain('request completed');
      await t.close();
      t = undefined;
    }
  });

  it('a line written through request.log (the error handler’s) carries the request id', async () => {
    t = await createTestApp();
    const res = await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/knowledge/commands`,
      headers: { authorization: 'Bearer aps_not-a-key', 'x-request-id': 'req-line-3' },
    });
    expect(res.statusCode).toBe(401);
    const lines = t.logs.lines
      .map((l) => JSON.parse(l) as { reqId?: string; msg: string; code?: string })
      .filter((l) => l.reqId === 'req-line-3');
    expect(lines.map((l) => l.code ?? l.msg)).toEqual(['AUTH_UNAUTHORIZED', 'request completed']);
    expect(t.logs.text).not.toContain('aps_not-a-key');
  });

  it('by default, a quick successful read is written at debug only; a request that changes state at info', async () => {
    t = await createTestApp();
    const headers = { authorization: `Bearer ${t.key}` };
    const read = await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/knowledge/commands`,
      headers: { ...headers, 'x-request-id': 'req-read' },
    });
    expect(read.statusCode).toBe(200);
    const change = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/token`,
      headers: { 'x-request-id': 'req-change' },
      payload: { apiKey: t.key },
    });
    expect(change.statusCode).toBe(200);
    const byId = (id: string) =>
      t!.logs.lines
        .map((l) => JSON.parse(l) as { reqId?: string; level: number; msg: string })
        .filter((l) => l.reqId === id);
    expect(byId('req-read')).toEqual([]);
    expect(byId('req-change')).toMatchObject([{ level: 30, msg: 'request completed' }]);
    expect(t.logs.text).not.toContain(t.key);
    await t.close();

    t = await createTestApp({ env: { LOG_LEVEL: 'debug' } });
    await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/knowledge/commands`,
      headers: { authorization: `Bearer ${t.key}`, 'x-request-id': 'req-read' },
    });
    expect(byId('req-read').at(-1)).toMatchObject({ level: 20, msg: 'request completed' });
  });

  it('at debug, the incoming line comes first', async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'debug' } });
    await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/knowledge/commands`,
      headers: { authorization: `Bearer ${t.key}`, 'x-request-id': 'req-line-2' },
    });
    const messages = t.logs.lines
      .map((l) => JSON.parse(l) as { reqId?: string; msg: string })
      .filter((l) => l.reqId === 'req-line-2')
      .map((l) => l.msg);
    expect(messages[0]).toBe('incoming request');
    expect(messages.at(-1)).toBe('request completed');
  });
});
