import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers.js';

const list = (header: unknown) => String(header).split(/,\s*/);

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const ORIGIN = 'http://console.example:5173';

describe('CORS for a browser console on another origin', () => {
  it('preflight allows every method and header the API uses', async () => {
    t = await createTestApp({ env: { CORS_ORIGINS: ORIGIN } });
    for (const method of ['DELETE', 'PUT', 'PATCH', 'POST', 'GET']) {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url: `${t.prefix}/knowledge/documents/abc`,
        headers: {
          origin: ORIGIN,
          'access-control-request-method': method,
          'access-control-request-headers': 'x-api-key,authorization,content-type,x-request-id',
        },
      });
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      const methods = list(res.headers['access-control-allow-methods']);
      expect(methods).toEqual(
        expect.arrayContaining(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']),
      );
      const headers = list(res.headers['access-control-allow-headers']).map((h) => h.toLowerCase());
      for (const h of ['authorization', 'x-api-key', 'content-type', 'x-request-id'])
        expect(headers).toContain(h);
    }
  });

  it('a cross-origin DELETE with x-api-key works and exposes retry-after and x-request-id', async () => {
    t = await createTestApp({ env: { CORS_ORIGINS: ORIGIN } });
    const res = await t.app.inject({
      method: 'DELETE',
      url: `${t.prefix}/knowledge/documents/00000000-0000-4000-8000-000000000000`,
      headers: { origin: ORIGIN, 'x-api-key': t.key },
    });
    expect(res.statusCode).toBe(404);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    const exposed = list(res.headers['access-control-expose-headers']);
    expect(exposed).toEqual(expect.arrayContaining(['retry-after', 'x-request-id']));
  });

  it('an origin not listed gets no CORS headers; no CORS_ORIGINS, no CORS at all', async () => {
    t = await createTestApp({ env: { CORS_ORIGINS: ORIGIN } });
    const other = await t.app.inject({
      method: 'OPTIONS',
      url: `${t.prefix}/knowledge/documents`,
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'DELETE' },
    });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    await t.close();
    t = await createTestApp();
    const none = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { origin: ORIGIN },
    });
    expect(none.headers['access-control-allow-origin']).toBeUndefined();
  });
});
