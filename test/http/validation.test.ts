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
      [{ query: 'owls', documentId: [''] }, 'body.documentId'],
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
    expect(res.json()).toEqual({ items: [], nextCursor: null });
    expect((await send('GET', '/knowledge/documents?limit=abc')).json()).toMatchObject({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: expect.stringContaining('querystring.limit') as string,
    });
  });
});

/** Words of JSON Schema and Ajv that must never reach a client. */
const SCHEMA_TALK =
  /must be null|must match|anyOf|oneOf|allOf|NOT have|schema|#\/|must be object|must be integer|must be string/;

describe('validation messages are plain', () => {
  it('say what is wrong with the field, in words', async () => {
    const index = '/knowledge/documents/missing/index';
    for (const [method, path, body, message] of [
      ['POST', index, { a: 1 }, 'body.a is not an allowed property'],
      ['POST', index, { maxChars: 'x' }, 'body.maxChars must be an integer'],
      ['POST', index, { maxChars: 10 }, 'body.maxChars must be at least 200'],
      ['POST', index, { maxChars: 9000 }, 'body.maxChars must be at most 8000'],
      ['POST', index, 5, 'body must be a JSON object'],
      ['POST', index, [1], 'body must be a JSON object'],
      ['POST', '/knowledge/retrieve', null, 'body must be a JSON object'],
      ['POST', '/knowledge/retrieve', { query: 'x', topK: 1.5 }, 'body.topK must be an integer'],
      [
        'POST',
        '/knowledge/retrieve',
        { query: 'x'.repeat(4001) },
        'body.query must be at most 4000 characters',
      ],
      [
        'POST',
        '/knowledge/retrieve',
        { query: 'x', mode: 'z' },
        'body.mode must be one of: hybrid, semantic, keyword',
      ],
      ['POST', '/knowledge/retrieve', { topK: 3 }, 'body.query is required'],
      ['POST', '/auth/api-keys/create', { name: '', level: 'L0' }, 'body.name must not be empty'],
      [
        'POST',
        '/auth/api-keys/create',
        { name: 'a', level: 'L9' },
        'body.level must be one of: L0, L1, L2',
      ],
      ['POST', '/auth/api-keys/revoke', { id: true }, 'body.id must be a string'],
    ] as const) {
      const res = await send(method, path, body);
      expect(res.json(), JSON.stringify(body)).toEqual({
        statusCode: 400,
        code: 'VALIDATION_ERROR',
        message,
      });
    }
  });

  it('never leak schema internals, whatever body any route receives', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<string, Record<string, { requestBody?: unknown }>>;
    }>();
    const bodies: unknown[] = [
      null,
      5,
      'text',
      true,
      [1],
      [],
      {},
      { a: 1 },
      { query: 1 },
      { id: [1] },
    ];
    let sent = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        if (path.endsWith('/upload')) continue; // multipart: 415 for JSON
        if (path.endsWith('/events')) continue; // a stream: open until the client leaves
        const url = path.replace('{id}', 'missing');
        // The token route is rate-limited: a few bodies only.
        const some = path.endsWith('/auth/token') ? bodies.slice(0, 5) : bodies;
        for (const body of operation.requestBody === undefined ? [{ a: 1 }, null, [1]] : some) {
          const res = await t.app.inject({
            method: method.toUpperCase() as 'GET',
            url,
            headers: { ...bearer(t.key), 'content-type': 'application/json' },
            payload: JSON.stringify(body),
          });
          sent += 1;
          const where = `${method} ${path} ${JSON.stringify(body)}`;
          // Readiness answers 503 NOT_READY until the search indexes are loaded (not started here).
          if (path !== '/health/ready') expect(res.statusCode, where).toBeLessThan(500);
          if (res.statusCode === 400) {
            expect(res.json<{ message: string }>().message, where).not.toMatch(SCHEMA_TALK);
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(40);
  });
});
