/** Request validation: JSON bodies are not coerced, messages are plain and name the field. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

async function send(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) {
  return t.app.inject({
    method,
    url: `${t.prefix}${path}`,
    headers: {
      ...bearer(t.key),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

describe('JSON bodies are validated as sent', () => {
  it('a number or an array where a string belongs → 400 naming the field', async () => {
    for (const [body, field] of [
      [{ query: 123 }, 'body.query'],
      [{ query: 'owls', documentId: [1] }, 'body.documentId'],
      [{ query: 'owls', documentId: ['x'] }, 'body.documentId'],
      [{ query: 'owls', topK: '5' }, 'body.topK'],
      [{ query: true }, 'body.query'],
    ] as const) {
      const res = await send('POST', '/knowledge/retrieve', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json(), JSON.stringify(body)).toMatchObject({
        statusCode: 400,
        code: 'VALIDATION_ERROR',
        message: expect.stringContaining(field) as string,
      });
    }
    for (const body of [{ maxChars: '1000' }, { async: 'true' }, { commandId: 7 }]) {
      const res = await send('POST', '/knowledge/documents/missing/index', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    const key = await send('POST', '/auth/api-keys/create', { name: 5, level: 'L0' });
    expect(key.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_ERROR' });
  });

  it('defaults are still filled in', async () => {
    const res = await send('POST', '/knowledge/retrieve', { query: 'owls' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ topK: 6, mode: 'hybrid' });
  });

  it('query strings and path parameters are still read as their types', async () => {
    const res = await send('GET', '/knowledge/documents?limit=5&stale=false');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ items: [] });
    expect((await send('GET', '/knowledge/documents?limit=abc')).json()).toMatchObject({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: expect.stringContaining('querystring.limit') as string,
    });
  });
});
