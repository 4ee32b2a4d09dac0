/** Request logs: health polls stay out of `info`, other requests are logged. */
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
