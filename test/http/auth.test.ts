import { CLI } from '../../src/audit/actor.js';
import { SignJWT, UnsecuredJWT, base64url } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiKeyRepository } from '../../src/auth/api-key.repository.js';
import { ApiKeyService } from '../../src/auth/api-key.service.js';
import { openDatabase } from '../../src/db/database.js';
import { bearer, createTestApp, type TestApp } from '../helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await createTestApp({ env: { AUTH_TOKEN_RATE_LIMIT: '1000' } });
});
afterEach(async () => {
  await t.close();
});

const url = (path: string) => `${t.prefix}${path}`;

async function token(apiKey: string, agentId?: string) {
  return t.app.inject({
    method: 'POST',
    url: url('/auth/token'),
    payload: { apiKey, ...(agentId ? { agentId } : {}) },
  });
}

async function createKey(level: 'L0' | 'L1' | 'L2', name = `k-${level}`) {
  const res = await t.app.inject({
    method: 'POST',
    url: url('/auth/api-keys/create'),
    headers: bearer(t.key),
    payload: { name, level },
  });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string; apiKey: string; level: string }>();
}

/** `POST /auth/api-keys/revoke|rotate {id}` as the bootstrap L0 key. */
const keyAction = (action: 'revoke' | 'rotate', id: string) =>
  t.app.inject({
    method: 'POST',
    url: url(`/auth/api-keys/${action}`),
    headers: bearer(t.key),
    payload: { id },
  });

const listKeys = (headers: Record<string, string>) =>
  t.app.inject({ method: 'GET', url: url('/auth/api-keys'), headers });

function secret(): Uint8Array {
  return new TextEncoder().encode(t.ctx.secrets.jwtSecret);
}

describe('credentials', () => {
  it('accepts a raw key as Bearer and as x-api-key', async () => {
    expect((await listKeys(bearer(t.key))).statusCode).toBe(200);
    expect((await listKeys({ 'x-api-key': t.key })).statusCode).toBe(200);
  });

  it('missing, malformed or unknown credentials → 401 AUTH_UNAUTHORIZED', async () => {
    for (const headers of [
      {},
      { authorization: 'Basic abc' },
      bearer('aps_nope'),
      { 'x-api-key': 'aps_nope' },
      bearer(''),
    ]) {
      const res = await listKeys(headers);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        statusCode: 401,
        code: 'AUTH_UNAUTHORIZED',
        message: expect.any(String),
      });
    }
  });

  it('checks x-api-key first: a valid key beside a bad or expired Bearer is accepted', async () => {
    const expired = await new SignJWT({ apiKeyId: 'x', level: 'L0' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('x')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(secret());
    for (const placeholder of ['aps_placeholder', expired, 'not-even-a-token']) {
      const res = await listKeys({ 'x-api-key': t.key, ...bearer(placeholder) });
      expect(res.statusCode).toBe(200);
    }
    // …and a valid Bearer beside a bad x-api-key still works.
    expect((await listKeys({ 'x-api-key': 'aps_nope', ...bearer(t.key) })).statusCode).toBe(200);
    // Two bad credentials stay 401.
    const twoBad: Record<string, string>[] = [
      { 'x-api-key': 'aps_nope', ...bearer('aps_nope2') },
      { 'x-api-key': 'aps_nope', ...bearer(expired) },
      { 'x-api-key': 'aps_nope', authorization: 'Basic abc' },
    ];
    for (const headers of twoBad) {
      const res = await listKeys(headers);
      expect(res.statusCode).toBe(401);
      expect(res.json<{ code: string }>().code).toMatch(/^AUTH_/);
    }
  });

  it('records last use of a key', async () => {
    await listKeys(bearer(t.key));
    const [record] = (await listKeys(bearer(t.key))).json<{
      items: { lastUsedAt: string | null }[];
    }>().items;
    expect(record?.lastUsedAt).not.toBeNull();
  });
});

describe('POST /auth/token', () => {
  it('mints a JWT carrying key id and level, subject = agent id or key id', async () => {
    const res = await token(t.key, 'agent-42');
    expect(res.statusCode).toBe(200);
    const body = res.json<{
      token: string;
      tokenType: string;
      apiKeyId: string;
      level: string;
      expiresAt: string;
    }>();
    expect(body).toMatchObject({ tokenType: 'Bearer', level: 'L0' });
    const [header, payload] = body.token
      .split('.')
      .slice(0, 2)
      .map(
        (p) => JSON.parse(new TextDecoder().decode(base64url.decode(p))) as Record<string, unknown>,
      );
    expect(header).toMatchObject({ alg: 'HS256' });
    expect(payload).toMatchObject({ sub: 'agent-42', apiKeyId: body.apiKeyId, level: 'L0' });
    expect((payload!.exp as number) - (payload!.iat as number)).toBe(15 * 60);
    expect((await listKeys(bearer(body.token))).statusCode).toBe(200);
    const noAgent = (await token(t.key)).json<{ token: string; apiKeyId: string }>();
    const claims = JSON.parse(
      new TextDecoder().decode(base64url.decode(noAgent.token.split('.')[1]!)),
    ) as { sub: string };
    expect(claims.sub).toBe(noAgent.apiKeyId);
  });

  it('an invalid key → 401 AUTH_INVALID_API_KEY; a missing one → 400 naming the field', async () => {
    const res = await token('aps_wrong');
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'AUTH_INVALID_API_KEY' });
    const missing = await t.app.inject({ method: 'POST', url: url('/auth/token'), payload: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toEqual({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: 'body.apiKey is required',
    });
  });

  it('a revoked key gets no token, and its existing JWTs stop working', async () => {
    const other = await createKey('L0');
    const jwt = (await token(other.apiKey)).json<{ token: string }>().token;
    expect((await listKeys(bearer(jwt))).statusCode).toBe(200);
    const revoke = await keyAction('revoke', other.id);
    expect(revoke.statusCode).toBe(200);
    expect((await token(other.apiKey)).json()).toMatchObject({
      statusCode: 401,
      code: 'AUTH_INVALID_API_KEY',
    });
    expect((await listKeys(bearer(jwt))).json()).toMatchObject({
      statusCode: 401,
      code: 'AUTH_UNAUTHORIZED',
    });
    expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(401);
  });

  it('a revoked key and its tokens stop at once, though their verification was cached', async () => {
    const other = await createKey('L0');
    const jwt = (await token(other.apiKey)).json<{ token: string }>().token;
    // Verified several times: served from the cache by now.
    for (let i = 0; i < 3; i++) {
      expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(200);
      expect((await listKeys(bearer(jwt))).statusCode).toBe(200);
    }
    const rotated = await keyAction('rotate', other.id);
    expect(rotated.statusCode).toBe(201);
    expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(401);
    expect((await listKeys(bearer(jwt))).statusCode).toBe(401);
    // The successor works at once too.
    const successor = rotated.json<{ apiKey: string }>().apiKey;
    expect((await listKeys(bearer(successor))).statusCode).toBe(200);
  });

  it('a known key or JWT is admitted from the cache (no full verification) until a revocation', async () => {
    const other = await createKey('L0');
    const jwt = (await token(other.apiKey)).json<{ token: string }>().token;
    // PostgreSQL reads the generation again after the previous test's rotation; until it is
    // known nothing is cached (by design), so the test warms the cache once it is.
    await vi.waitFor(() => {
      expect(t.ctx.apiKeys.generation()).not.toBeNull();
    });
    expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(200);
    expect((await listKeys(bearer(jwt))).statusCode).toBe(200);
    const keyVerify = vi.spyOn(t.ctx.apiKeys, 'verify');
    const jwtVerify = vi.spyOn(t.ctx.tokens, 'verify');
    try {
      for (let i = 0; i < 3; i++) {
        expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(200);
        expect((await listKeys({ 'x-api-key': other.apiKey })).statusCode).toBe(200);
        expect((await listKeys(bearer(jwt))).statusCode).toBe(200);
      }
      expect(keyVerify).not.toHaveBeenCalled();
      expect(jwtVerify).not.toHaveBeenCalled();
      expect((await keyAction('revoke', other.id)).statusCode).toBe(200);
      expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(401);
      expect((await listKeys(bearer(jwt))).statusCode).toBe(401);
      expect(keyVerify).toHaveBeenCalledWith(other.apiKey);
      expect(jwtVerify).toHaveBeenCalledWith(jwt);
    } finally {
      keyVerify.mockRestore();
      jwtVerify.mockRestore();
    }
  });

  it('a key revoked by another process or instance stops here too (revocation generation)', async () => {
    const other = await createKey('L0');
    const jwt = (await token(other.apiKey)).json<{ token: string }>().token;
    for (let i = 0; i < 3; i++) {
      expect((await listKeys(bearer(other.apiKey))).statusCode).toBe(200);
      expect((await listKeys(bearer(jwt))).statusCode).toBe(200);
    }
    // As `aps keys revoke` or another instance does: its own connection, its own service.
    const database = await openDatabase(t.ctx.config.database);
    try {
      const elsewhere = new ApiKeyService(
        new ApiKeyRepository(database.db),
        t.ctx.secrets.apiKeySalt,
      );
      await elsewhere.revoke(other.id, CLI);
    } finally {
      await database.close();
    }
    // SQLite: the next turn of the event loop sees it (data_version, read once per turn).
    // PostgreSQL: as soon as the NOTIFY arrives on this instance's LISTEN connection (milliseconds).
    const deadline = Date.now() + (t.ctx.database.driver === 'sqlite' ? 50 : 2000);
    let status: { key: number; jwt: number };
    do {
      status = {
        key: (await listKeys(bearer(other.apiKey))).statusCode,
        jwt: (await listKeys(bearer(jwt))).statusCode,
      };
      if (status.key === 401 && status.jwt === 401) break;
      await new Promise((r) => setTimeout(r, 10));
    } while (Date.now() < deadline);
    expect(status).toEqual({ key: 401, jwt: 401 });
    // Refreshing the cached token is refused too.
    const refreshed = await t.app.inject({
      method: 'POST',
      url: url('/auth/token/refresh'),
      headers: bearer(jwt),
    });
    expect(refreshed.statusCode).toBe(401);
    expect((await listKeys(bearer(t.key))).statusCode).toBe(200);
  });

  it('refresh: a JWT gets a new one (same key, subject and level); revoked or missing → 401', async () => {
    const other = await createKey('L2');
    const first = (await token(other.apiKey, 'agent-7')).json<{ token: string }>().token;
    const refresh = (headers: Record<string, string>) =>
      t.app.inject({ method: 'POST', url: url('/auth/token/refresh'), headers });
    const claimsOf = (jwt: string) =>
      JSON.parse(new TextDecoder().decode(base64url.decode(jwt.split('.')[1]!))) as Record<
        string,
        unknown
      >;
    const res = await refresh(bearer(first));
    expect(res.statusCode).toBe(200);
    const body = res.json<{ token: string; apiKeyId: string; level: string; expiresAt: string }>();
    expect(body).toMatchObject({ tokenType: 'Bearer', apiKeyId: other.id, level: 'L2' });
    expect(claimsOf(body.token)).toMatchObject({ sub: 'agent-7', apiKeyId: other.id, level: 'L2' });
    expect(Date.parse(body.expiresAt)).toBeGreaterThan(Date.now() + 14 * 60 * 1000);
    // The new token keeps the key's level (L0 routes stay closed to it) and can be refreshed in
    // turn; an L0 key's refreshed token opens L0 routes.
    expect((await listKeys(bearer(body.token))).statusCode).toBe(403);
    expect((await refresh(bearer(body.token))).statusCode).toBe(200);
    const admin = (await token(t.key)).json<{ token: string }>().token;
    const renewed = (await refresh(bearer(admin))).json<{ token: string }>().token;
    expect((await listKeys(bearer(renewed))).statusCode).toBe(200);
    // No credentials, or a token whose key was revoked: no new token.
    expect((await refresh({})).json()).toMatchObject({
      statusCode: 401,
      code: 'AUTH_UNAUTHORIZED',
    });
    const revoke = await keyAction('revoke', other.id);
    expect(revoke.statusCode).toBe(200);
    expect((await refresh(bearer(body.token))).json()).toMatchObject({
      statusCode: 401,
      code: 'AUTH_UNAUTHORIZED',
    });
  });

  it('is rate-limited per client address with the error body', async () => {
    const limited = await createTestApp({ env: { AUTH_TOKEN_RATE_LIMIT: '3' } });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 5; i++) {
        codes.push(
          (
            await limited.app.inject({
              method: 'POST',
              url: `${limited.prefix}/auth/token`,
              payload: { apiKey: limited.key },
            })
          ).statusCode,
        );
      }
      expect(codes).toEqual([200, 200, 200, 429, 429]);
      const res = await limited.app.inject({
        method: 'POST',
        url: `${limited.prefix}/auth/token`,
        payload: { apiKey: limited.key },
      });
      expect(res.json()).toEqual({
        statusCode: 429,
        code: 'RATE_LIMITED',
        message: expect.stringMatching(/retry in \d+ s/),
      });
      const otherClient = await limited.app.inject({
        method: 'POST',
        url: `${limited.prefix}/auth/token`,
        remoteAddress: '10.0.0.9',
        payload: { apiKey: limited.key },
      });
      expect(otherClient.statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('checks credentials before a route’s own rate limit: refused callers use none of it', async () => {
    const limited = await createTestApp({ env: { AUTH_TOKEN_RATE_LIMIT: '2' } });
    try {
      const refresh = (authorization: string) =>
        limited.app.inject({
          method: 'POST',
          url: `${limited.prefix}/auth/token/refresh`,
          headers: { authorization },
        });
      const refused: number[] = [];
      for (let i = 0; i < 4; i++) refused.push((await refresh('Bearer aps_wrong')).statusCode);
      expect(refused).toEqual([401, 401, 401, 401]);
      const minted = await limited.app.inject({
        method: 'POST',
        url: `${limited.prefix}/auth/token`,
        payload: { apiKey: limited.key },
      });
      const jwt = minted.json<{ token: string }>().token;
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await refresh(`Bearer ${jwt}`)).statusCode);
      expect(codes).toEqual([200, 200, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('JWT attacks', () => {
  async function claims() {
    return (await token(t.key)).json<{ apiKeyId: string }>();
  }

  it('rejects alg "none"', async () => {
    const { apiKeyId } = await claims();
    const unsecured = new UnsecuredJWT({ apiKeyId, level: 'L0' })
      .setIssuer('agent-platform-server')
      .setSubject(apiKeyId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .encode();
    expect((await listKeys(bearer(unsecured))).statusCode).toBe(401);
  });

  it('rejects other algorithms signed with the secret (HS512) and RS256 tokens', async () => {
    const { apiKeyId } = await claims();
    const hs512 = await new SignJWT({ apiKeyId, level: 'L0' })
      .setProtectedHeader({ alg: 'HS512' })
      .setIssuer('agent-platform-server')
      .setSubject(apiKeyId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(secret());
    expect((await listKeys(bearer(hs512))).statusCode).toBe(401);
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rs256 = await new SignJWT({ apiKeyId, level: 'L0' })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer('agent-platform-server')
      .setSubject(apiKeyId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expect((await listKeys(bearer(rs256))).statusCode).toBe(401);
  });

  it('rejects a bad signature and a tampered payload', async () => {
    const good = (await token(t.key)).json<{ token: string }>().token;
    const [h, p, s] = good.split('.');
    const flipped = s!.slice(0, -2) + (s!.endsWith('AA') ? 'BB' : 'AA');
    expect((await listKeys(bearer(`${h}.${p}.${flipped}`))).statusCode).toBe(401);
    const payload = JSON.parse(new TextDecoder().decode(base64url.decode(p!))) as Record<
      string,
      unknown
    >;
    const tampered = base64url.encode(JSON.stringify({ ...payload, sub: 'someone-else' }));
    expect((await listKeys(bearer(`${h}.${tampered}.${s}`))).statusCode).toBe(401);
    const forged = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('x'.repeat(48)));
    expect((await listKeys(bearer(forged))).statusCode).toBe(401);
  });

  it('rejects an expired token', async () => {
    const { apiKeyId } = await claims();
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ apiKeyId, level: 'L0' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('agent-platform-server')
      .setSubject(apiKeyId)
      .setIssuedAt(now - 120)
      .setExpirationTime(now - 60)
      .sign(secret());
    const res = await listKeys(bearer(expired));
    expect(res.json()).toEqual({
      statusCode: 401,
      code: 'AUTH_UNAUTHORIZED',
      message: 'The token has expired.',
    });
  });

  it('takes the level from the key, not from the token claims', async () => {
    const worker = await createKey('L2');
    const now = Math.floor(Date.now() / 1000);
    const escalated = await new SignJWT({ apiKeyId: worker.id, level: 'L0' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('agent-platform-server')
      .setSubject(worker.id)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(secret());
    expect((await listKeys(bearer(escalated))).statusCode).toBe(403);
  });
});

describe('levels', () => {
  it('L0 routes admit only L0: L1 and L2 get 403 AUTH_FORBIDDEN, by key and by JWT', async () => {
    for (const level of ['L1', 'L2'] as const) {
      const key = await createKey(level);
      const res = await listKeys(bearer(key.apiKey));
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ code: 'AUTH_FORBIDDEN' });
      const jwt = (await token(key.apiKey)).json<{ token: string; level: string }>();
      expect(jwt.level).toBe(level);
      expect((await listKeys(bearer(jwt.token))).statusCode).toBe(403);
    }
  });
});

describe('API key lifecycle', () => {
  it('create → list → rotate → revoke, each audited, never exposing secrets', async () => {
    const created = await createKey('L1', 'worker');
    expect(created.apiKey).toMatch(/^aps_/);
    const list = (await listKeys(bearer(t.key))).json<{ items: Record<string, unknown>[] }>();
    expect(list.items.map((k) => k.name).sort()).toEqual(['test-admin', 'worker']);
    const text = JSON.stringify(list);
    expect(text).not.toContain(created.apiKey);
    expect(text).not.toMatch(/key_hash|keyHash|apiKey/);

    const rotated = await keyAction('rotate', created.id);
    expect(rotated.statusCode).toBe(201);
    const fresh = rotated.json<{
      id: string;
      apiKey: string;
      level: string;
      name: string;
      rotatedFrom: string;
    }>();
    expect(fresh).toMatchObject({ level: 'L1', name: 'worker', rotatedFrom: created.id });
    expect((await token(created.apiKey)).statusCode).toBe(401);
    expect((await token(fresh.apiKey)).statusCode).toBe(200);
    const again = await keyAction('rotate', created.id);
    expect(again.json()).toMatchObject({ statusCode: 409, code: 'AUTH_API_KEY_REVOKED' });

    const revoked = await keyAction('revoke', fresh.id);
    expect(revoked.json()).toMatchObject({ id: fresh.id, revokedAt: expect.any(String) });

    const audit = await t.ctx.database.db
      .selectFrom('audit_log')
      .selectAll()
      .orderBy('at')
      .execute();
    const adminId = (await t.ctx.apiKeys.list()).find((k) => k.name === 'test-admin')!.id;
    expect(audit.map((a) => [a.action, a.target])).toEqual([
      ['api_key.create', adminId],
      ['api_key.create', created.id],
      ['api_key.rotate', created.id],
      ['api_key.revoke', fresh.id],
    ]);
    expect(audit.slice(1).every((a) => a.actor === `api_key:${adminId}`)).toBe(true);
  });

  it('unknown ids → 404 AUTH_API_KEY_NOT_FOUND; bad bodies → 400', async () => {
    for (const action of ['revoke', 'rotate']) {
      const res = await t.app.inject({
        method: 'POST',
        url: url(`/auth/api-keys/${action}`),
        headers: bearer(t.key),
        payload: { id: 'nope' },
      });
      expect(res.json()).toMatchObject({ statusCode: 404, code: 'AUTH_API_KEY_NOT_FOUND' });
    }
    const bad = await t.app.inject({
      method: 'POST',
      url: url('/auth/api-keys/create'),
      headers: bearer(t.key),
      payload: { name: 'x', level: 'L9' },
    });
    expect(bad.json()).toEqual({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: 'body.level must be one of: L0, L1, L2',
    });
  });

  it('refuses to revoke the last active L0 key', async () => {
    const [admin] = await t.ctx.apiKeys.list();
    const res = await keyAction('revoke', admin!.id);
    expect(res.json()).toMatchObject({ statusCode: 409, code: 'CONFLICT' });
  });
});

describe('bootstrap key', () => {
  it('is ensured at start-up and stays revoked after a restart', async () => {
    const { ensureInitialKeys } = await import('../../src/server.js');
    const bootstrap = 'bootstrap-key-0123456789-abcdefghijkl';
    const a = await createTestApp({ env: { BOOTSTRAP_API_KEY: bootstrap } });
    await ensureInitialKeys(a.ctx, a.app.log);
    expect(
      (
        await a.app.inject({
          method: 'POST',
          url: `${a.prefix}/auth/token`,
          payload: { apiKey: bootstrap },
        })
      ).statusCode,
    ).toBe(200);
    const id = (await a.ctx.apiKeys.list()).find((k) => k.origin === 'bootstrap')!.id;
    await a.app.inject({
      method: 'POST',
      url: `${a.prefix}/auth/api-keys/revoke`,
      headers: bearer(a.key),
      payload: { id },
    });
    await a.close(true);

    const b = await createTestApp({ dir: a.dir, env: { BOOTSTRAP_API_KEY: bootstrap } });
    try {
      await ensureInitialKeys(b.ctx, b.app.log);
      expect(
        (
          await b.app.inject({
            method: 'POST',
            url: `${b.prefix}/auth/token`,
            payload: { apiKey: bootstrap },
          })
        ).statusCode,
      ).toBe(401);
      expect((await b.ctx.apiKeys.list()).filter((k) => k.origin === 'bootstrap')).toHaveLength(1);
      const actions = await b.ctx.database.db.selectFrom('audit_log').select('action').execute();
      expect(actions.map((r) => r.action)).toContain('api_key.bootstrap');
    } finally {
      await b.close();
    }
  });
});
