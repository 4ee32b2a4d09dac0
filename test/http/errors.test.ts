import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/errors.js';
import { bearer, createTestApp, type TestApp } from '../helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await createTestApp({ env: { BODY_LIMIT_BYTES: '2048' } });
});
afterEach(async () => {
  await t.close();
});

const errorBody = (statusCode: number, code: string) => ({
  statusCode,
  code,
  message: expect.any(String) as string,
});

describe('error bodies', () => {
  it('unknown route → 404 ROUTE_NOT_FOUND, under the prefix and outside it', async () => {
    for (const url of ['/nope', `${t.prefix}/nope`, `${t.prefix}/knowledge/x`]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(errorBody(404, 'ROUTE_NOT_FOUND'));
    }
  });

  it('wrong method on a known route → 405 with Allow', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: `${t.prefix}/auth/token` });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.json()).toEqual(errorBody(405, 'METHOD_NOT_ALLOWED'));
  });

  it('validation errors name the field', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/api-keys/create`,
      headers: bearer(t.key),
      payload: { name: '', level: 'L0' },
    });
    expect(res.json()).toEqual({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: 'body.name must not be empty',
    });
    const extra = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/api-keys/create`,
      headers: bearer(t.key),
      payload: { name: 'a', level: 'L0', admin: true },
    });
    expect(extra.json()).toEqual({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: 'body.admin is not an allowed property',
    });
  });

  it('invalid JSON → 400 INVALID_JSON; body too large → 413; wrong media type → 415', async () => {
    const headers = { ...bearer(t.key), 'content-type': 'application/json' };
    const url = `${t.prefix}/auth/api-keys/create`;
    expect(
      (await t.app.inject({ method: 'POST', url, headers, payload: '{"name":' })).json(),
    ).toEqual(errorBody(400, 'INVALID_JSON'));
    const big = JSON.stringify({ name: 'x'.repeat(4096), level: 'L0' });
    expect((await t.app.inject({ method: 'POST', url, headers, payload: big })).json()).toEqual(
      errorBody(413, 'PAYLOAD_TOO_LARGE'),
    );
    const text = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...bearer(t.key), 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toEqual(errorBody(415, 'UNSUPPORTED_MEDIA_TYPE'));
  });

  it('an empty body sent as JSON counts as no body', async () => {
    const headers = { ...bearer(t.key), 'content-type': 'application/json' };
    const gone = await t.app.inject({
      method: 'DELETE',
      url: `${t.prefix}/knowledge/documents/00000000-0000-4000-8000-000000000000`,
      headers,
    });
    expect(gone.json()).toEqual(errorBody(404, 'KNOWLEDGE_DOCUMENT_NOT_FOUND'));
    const create = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/api-keys/create`,
      headers,
      payload: '',
    });
    expect(create.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_ERROR' });
    expect(create.json<{ message: string }>().message).toMatch(/^body /);
  });

  it('an unexpected exception → generic 500; the details go to the log only', async () => {
    const app = await createTestApp();
    try {
      app.app.get('/boom', { config: { access: 'public', mutates: false } }, () => {
        throw new Error('secret internal detail /var/lib/x');
      });
      const res = await app.app.inject({ method: 'GET', url: '/boom' });
      expect(res.json()).toEqual({
        statusCode: 500,
        code: 'INTERNAL_ERROR',
        message: 'Internal server error.',
      });
      expect(res.body).not.toContain('secret internal detail');
      expect(app.logs.text).toContain('secret internal detail');
    } finally {
      await app.close();
    }
  });

  it('every catalogue entry has a status in the documented set', () => {
    for (const { status } of Object.values(ERROR_CATALOGUE)) {
      expect([
        400, 401, 403, 404, 405, 408, 409, 413, 414, 415, 422, 429, 431, 500, 502, 503, 504,
      ]).toContain(status);
    }
  });

  it('echoes a safe request id and generates one otherwise', async () => {
    const mine = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': 'abc-123' },
    });
    expect(mine.headers['x-request-id']).toBe('abc-123');
    const evil = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': 'a\nb' },
    });
    expect(evil.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('OpenAPI', () => {
  it('serves version 1.0.0 with the bearer scheme, the error body and every API route', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: `${t.prefix}/openapi.json` })).json<{
      openapi: string;
      info: { version: string };
      components: {
        securitySchemes: Record<string, { scheme?: string }>;
        schemas: Record<string, unknown>;
      };
      paths: Record<string, unknown>;
    }>();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    });
    expect(doc.components.schemas.ErrorBody).toBeDefined();
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/health',
        '/health/ready',
        '/auth/token',
        '/auth/token/refresh',
        '/audit',
        '/auth/api-keys',
        '/auth/api-keys/create',
        '/auth/api-keys/revoke',
        '/auth/api-keys/rotate',
        '/knowledge/commands',
        '/knowledge/converter/status',
        '/knowledge/events',
        '/knowledge/documents',
        '/knowledge/documents/{id}',
        '/knowledge/documents/{id}/chunks',
        '/knowledge/documents/{id}/markdown',
        '/knowledge/documents/upload',
        '/knowledge/documents/batch',
        '/knowledge/documents/reindex',
        '/knowledge/documents/text',
        '/knowledge/documents/url',
        '/knowledge/documents/{id}/index',
        '/knowledge/retrieve',
        '/knowledge/status',
        '/mcp',
        '/knowledge/projects',
      ]
        .map((p) => (p.startsWith('/health') ? p : `${t.prefix}${p}`))
        .sort(),
    );
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/html/);
  });

  it('honours API_PREFIX on every prefixed route', async () => {
    const other = await createTestApp({ env: { API_PREFIX: '/v2' } });
    try {
      expect(
        (
          await other.app.inject({
            method: 'POST',
            url: '/v2/auth/token',
            payload: { apiKey: other.key },
          })
        ).statusCode,
      ).toBe(200);
      expect(
        (
          await other.app.inject({
            method: 'POST',
            url: '/api/v1/auth/token',
            payload: { apiKey: other.key },
          })
        ).statusCode,
      ).toBe(404);
      expect((await other.app.inject({ method: 'GET', url: '/v2/openapi.json' })).statusCode).toBe(
        200,
      );
    } finally {
      await other.close();
    }
  });
});
