import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import type { Migration } from '../../src/db/migrator.js';
import { bearer, createTestApp, type TestApp } from '../helpers.js';

const failing: Migration = {
  name: '9999_broken',
  up: () => Promise.reject(new Error('disk full while adding a column')),
};

async function expectReadOnly(t: TestApp, key: string, errorPattern: RegExp) {
  const health = (await t.app.inject({ method: 'GET', url: '/health' })).json<{
    status: string;
    mode: string;
    migration: { status: string; errorMessage: string };
  }>();
  expect(health).toMatchObject({
    status: 'degraded',
    mode: 'read_only',
    migration: { status: 'degraded' },
  });
  expect(health.migration.errorMessage).toMatch(errorPattern);

  // Blocked: every route that changes state, before auth.
  for (const [path, payload] of [
    ['/auth/api-keys/create', { name: 'x', level: 'L0' }],
    ['/auth/api-keys/revoke', { id: 'x' }],
    ['/auth/api-keys/rotate', { id: 'x' }],
  ] as const) {
    for (const headers of [bearer(key), {}]) {
      const res = await t.app.inject({
        method: 'POST',
        url: `${t.prefix}${path}`,
        headers,
        payload,
      });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        statusCode: 503,
        code: 'READ_ONLY_MODE',
        message: 'Application is in read-only mode because database migration failed',
      });
    }
  }
  // Allowed: what changes nothing, including a POST.
  const token = await t.app.inject({
    method: 'POST',
    url: `${t.prefix}/auth/token`,
    payload: { apiKey: key },
  });
  expect(token.statusCode).toBe(200);
  const jwt = token.json<{ token: string }>().token;
  expect(
    (await t.app.inject({ method: 'GET', url: `${t.prefix}/auth/api-keys`, headers: bearer(jwt) }))
      .statusCode,
  ).toBe(200);
  expect((await t.app.inject({ method: 'GET', url: `${t.prefix}/openapi.json` })).statusCode).toBe(
    200,
  );
}

describe('read-only mode after a failing migration', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const first = await createTestApp();
    key = first.key;
    await first.close(true);
    t = await createTestApp({ dir: first.dir, migrations: [...MIGRATIONS, failing] });
  });
  afterAll(() => t.close());

  it('blocks mutations with 503 READ_ONLY_MODE and keeps reads, tokens and health working', async () => {
    expect(t.ctx.readOnly).toBe(true);
    await expectReadOnly(t, key, /Migration 9999_broken failed: disk full/);
    const health = (await t.app.inject({ method: 'GET', url: '/health' })).json<{
      migration: Record<string, unknown>;
    }>();
    expect(health.migration).toMatchObject({ pendingCount: 1, appliedCount: MIGRATIONS.length });
  });
});

describe('read-only mode when a newer version migrated the database', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const first = await createTestApp();
    key = first.key;
    await first.ctx.database.db
      .insertInto('aps_migrations')
      .values({ name: '9000_from_the_future', applied_at: new Date().toISOString() })
      .execute();
    await first.close(true);
    t = await createTestApp({ dir: first.dir });
  });
  afterAll(() => t.close());

  it('starts read-only and says why', async () => {
    await expectReadOnly(t, key, /migrated by a newer version .*9000_from_the_future/);
  });

  it('does not record key use while read-only', async () => {
    await t.app.inject({ method: 'GET', url: `${t.prefix}/auth/api-keys`, headers: bearer(key) });
    const keys = await t.ctx.apiKeys.list();
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.lastUsedAt === null)).toBe(true);
  });
});
