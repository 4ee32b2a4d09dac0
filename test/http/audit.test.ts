/**
 * The audit trail (issue 42): GET /audit shows key lifecycle, document changes and refusals with
 * time, key id and name, action, target and request id; filters and cursor paging; retention.
 * And the maximum session age of refreshed JWTs (JWT_MAX_SESSION).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers.js';
import { KnowledgeClient } from '../knowledge/helpers.js';

interface Entry {
  at: string;
  action: string;
  keyId: string | null;
  keyName: string | null;
  target: string;
  requestId: string | null;
  detail: Record<string, unknown> | null;
}

let t: TestApp | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await t?.close();
  t = undefined;
});

async function audit(app: TestApp, query = '', key = app.key) {
  await app.ctx.audit.written();
  const res = await app.app.inject({
    method: 'GET',
    url: `${app.prefix}/audit${query}`,
    headers: bearer(key),
  });
  return res;
}

describe('GET /audit', () => {
  it('records who did what to which document, in which request, newest first', async () => {
    t = await createTestApp();
    const k = new KnowledgeClient(t);
    const created = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: { ...bearer(t.key), 'x-request-id': 'req-create-1' },
      payload: { name: 'a.md', text: '# A\n\nAlpha text.', projectId: 'p1' },
    });
    const id = created.json<{ id: string }>().id;
    await k.indexOk(id);
    await t.app.inject({
      method: 'PATCH',
      url: k.url(`/documents/${id}`),
      headers: bearer(t.key),
      payload: { metadata: { team: 'ops' } },
    });
    // A duplicate (200, not created) is not a creation.
    await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: bearer(t.key),
      payload: { name: 'a.md', text: '# A\n\nAlpha text.', projectId: 'p1' },
    });
    const reader = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/api-keys/create`,
      headers: bearer(t.key),
      payload: { name: 'reader', level: 'L0', access: 'read' },
    });
    const readerKey = reader.json<{ id: string; apiKey: string }>();
    const refused = await t.app.inject({
      method: 'DELETE',
      url: k.url(`/documents/${id}`),
      headers: { ...bearer(readerKey.apiKey), 'x-request-id': 'req-refused-1' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'AUTH_ACCESS_FORBIDDEN' });
    expect((await k.delete(id)).statusCode).toBe(200);

    const res = await audit(t);
    expect(res.statusCode, res.body).toBe(200);
    const items = res.json<{ items: Entry[] }>().items;
    const actions = items.map((e) => e.action);
    expect(actions).toEqual([
      'document.delete',
      'access.refused',
      'api_key.create',
      'document.update',
      'document.index',
      'document.create',
      'api_key.create', // the test's own key
    ]);
    const admin = (await t.ctx.apiKeys.list()).find((key) => key.name === 'test-admin')!;
    const create = items.find((e) => e.action === 'document.create')!;
    expect(create).toMatchObject({
      keyId: admin.id,
      keyName: 'test-admin',
      target: id,
      requestId: 'req-create-1',
      detail: { name: 'a.md', projectId: 'p1' },
    });
    expect(items.find((e) => e.action === 'document.update')!.detail).toEqual({
      fields: ['metadata'],
      metadataKeys: ['team'],
      address: '127.0.0.1',
    });
    expect(items.find((e) => e.action === 'access.refused')).toMatchObject({
      keyId: readerKey.id,
      keyName: 'reader',
      target: `DELETE ${t.prefix}/knowledge/documents/:id`,
      requestId: 'req-refused-1',
      detail: { code: 'AUTH_ACCESS_FORBIDDEN', access: 'read' },
    });
    const times = items.map((e) => e.at);
    expect([...times].sort().reverse()).toEqual(times);

    // Filters: action, key, target, time range.
    const only = async (query: string) =>
      (await audit(t!, query)).json<{ items: Entry[] }>().items.map((e) => e.action);
    expect(await only('?action=document.index')).toEqual(['document.index']);
    expect(await only(`?keyId=${readerKey.id}`)).toEqual(['access.refused']);
    expect(await only(`?target=${id}`)).toEqual([
      'document.delete',
      'document.update',
      'document.index',
      'document.create',
    ]);
    expect(await only(`?from=${encodeURIComponent(create.at)}&action=document.create`)).toEqual([
      'document.create',
    ]);
    expect(await only(`?to=${encodeURIComponent(create.at)}&action=document.create`)).toEqual([]);

    // Cursor paging: every entry once, in order.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: Entry[]; nextCursor: string | null } = (
        await audit(t, `?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`)
      ).json<{
        items: Entry[];
        nextCursor: string | null;
      }>();
      expect(page.items.length).toBeLessThanOrEqual(2);
      paged.push(...page.items.map((e) => e.action));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(paged).toEqual(actions);
    expect((await audit(t, '?cursor=nonsense')).statusCode).toBe(400);

    // Admin access only: the reader is refused (and that refusal is recorded too).
    const denied = await audit(t, '', readerKey.apiKey);
    expect(denied.statusCode).toBe(403);
  });

  it('prunes entries older than the retention', async () => {
    t = await createTestApp({ env: { AUDIT_RETENTION_DAYS: '30' } });
    await t.ctx.audit.written();
    const before = (await audit(t)).json<{ items: Entry[] }>().items.length;
    expect(before).toBeGreaterThan(0);
    expect(await t.ctx.audit.prune(30, Date.now() + 29 * 86_400_000)).toBe(0);
    expect(await t.ctx.audit.prune(30, Date.now() + 31 * 86_400_000)).toBe(before);
    expect((await audit(t)).json<{ items: Entry[] }>().items).toEqual([]);
  });
});

describe('JWT_MAX_SESSION', () => {
  it('keeps auth_time across refreshes and refuses a refresh past it', async () => {
    t = await createTestApp({ env: { JWT_TTL: '10m', JWT_MAX_SESSION: '1h' } });
    vi.useFakeTimers({ now: Date.now(), toFake: ['Date'] });
    const issue = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/token`,
      payload: { apiKey: t.key },
    });
    let token = issue.json<{ token: string }>().token;
    const claims = (jwt: string) =>
      JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, number>;
    const authTime = claims(token).auth_time!;
    for (let i = 0; i < 7; i++) {
      vi.setSystemTime(Date.now() + 9 * 60_000);
      const refresh = await t.app.inject({
        method: 'POST',
        url: `${t.prefix}/auth/token/refresh`,
        headers: bearer(token),
      });
      if (i < 6) {
        expect(refresh.statusCode, refresh.body).toBe(200);
        token = refresh.json<{ token: string }>().token;
        expect(claims(token).auth_time).toBe(authTime);
        // Never past the session's end.
        expect(claims(token).exp).toBeLessThanOrEqual(authTime + 3600);
      } else {
        // 63 minutes after the key exchange: the token itself expired at the session's end.
        expect(refresh.statusCode).toBe(401);
      }
    }
  });
});
