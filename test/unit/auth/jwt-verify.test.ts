import { createHmac } from 'node:crypto';
import { jwtVerify, SignJWT, UnsecuredJWT, base64url } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import type { ApiKeyService } from '../../../src/auth/api-key.service.js';
import { TokenService, verifyHs256 } from '../../../src/auth/token.service.js';
import type { ApiKeyRow } from '../../../src/db/schema.js';

const SECRET = 's'.repeat(48);
const key = new TextEncoder().encode(SECRET);
const secret = Buffer.from(key);
const now = Math.floor(Date.now() / 1000);

function signed(
  claims: Record<string, unknown>,
  header: Record<string, unknown> = { alg: 'HS256' },
  with_ = key,
) {
  return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(with_);
}

/** A token signed with HMAC-SHA256 by hand: any header, any payload text. */
function hmacToken(header: Record<string, unknown>, body: string): string {
  const h = base64url.encode(JSON.stringify(header));
  const p = base64url.encode(body);
  return `${h}.${p}.${createHmac('sha256', secret).update(`${h}.${p}`).digest('base64url')}`;
}

const base = { sub: 'agent', iat: now, exp: now + 300, iss: 'agent-platform-server' };

/** What jose says of a token under the options the server used to verify with. */
async function jose(token: string): Promise<'ok' | 'expired' | 'invalid'> {
  try {
    await jwtVerify(token, key, {
      algorithms: ['HS256'],
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'expired' : 'invalid';
  }
}

function ours(token: string): 'ok' | 'expired' | 'invalid' {
  const result = verifyHs256(token, secret, Math.floor(Date.now() / 1000));
  return result === 'expired' ? 'expired' : result === null ? 'invalid' : 'ok';
}

describe('verifyHs256 (node:crypto) agrees with jose', () => {
  it('on good, expired, forged and malformed tokens', async () => {
    const good = await signed(base);
    const [h, p, s] = good.split('.') as [string, string, string];
    const hs512 = await signed(base, { alg: 'HS512' });
    type Verdict = 'ok' | 'expired' | 'invalid';
    // [name, token, our verdict, jose's verdict where it differs (we are stricter)]
    const cases: [string, string, Verdict, Verdict?][] = [
      ['good', good, 'ok'],
      ['expired', await signed({ ...base, iat: now - 120, exp: now - 60 }), 'expired'],
      ['expiring now', await signed({ ...base, exp: now - 1 }), 'expired'],
      ['not yet valid', await signed({ ...base, nbf: now + 600 }), 'invalid'],
      ['valid nbf', await signed({ ...base, nbf: now - 10 }), 'ok'],
      ['no exp', await signed({ sub: 'a', iat: now }), 'invalid'],
      ['no iat', await signed({ sub: 'a', exp: now + 60 }), 'invalid'],
      ['no sub', await signed({ iat: now, exp: now + 60 }), 'invalid'],
      ['exp as a string', await signed({ ...base, exp: String(now + 60) }), 'invalid'],
      ['HS512 with the secret', hs512, 'invalid'],
      ['alg none', new UnsecuredJWT(base).setIssuer('agent-platform-server').encode(), 'invalid'],
      ['another secret', await signed(base, { alg: 'HS256' }, new Uint8Array(48)), 'invalid'],
      [
        'flipped signature',
        `${h}.${p}.${s.slice(0, -2)}${s.endsWith('AA') ? 'BB' : 'AA'}`,
        'invalid',
      ],
      ['signature with padding', `${h}.${p}.${s}=`, 'invalid', 'ok'],
      ['signature with a stray character', `${h}.${p}.${s}.`, 'invalid'],
      ['no signature', `${h}.${p}.`, 'invalid'],
      [
        'tampered payload',
        `${h}.${base64url.encode(JSON.stringify({ ...base, sub: 'else' }))}.${s}`,
        'invalid',
      ],
      [
        'a critical extension',
        hmacToken({ alg: 'HS256', crit: ['x'], x: 1 }, JSON.stringify(base)),
        'invalid',
      ],
      ['two segments', `${h}.${p}`, 'invalid'],
      ['garbage', 'eyJ.eyJ.x', 'invalid'],
    ];
    for (const [name, token, expected, joseVerdict] of cases) {
      expect(await jose(token), `jose: ${name}`).toBe(joseVerdict ?? expected);
      expect(ours(token), name).toBe(expected);
    }
  });

  it('rejects a payload that is not a JSON object, even when correctly signed', async () => {
    expect(ours(hmacToken({ alg: 'HS256' }, JSON.stringify(base)))).toBe('ok');
    for (const body of ['[1,2]', '"text"', '42', 'not json']) {
      const token = hmacToken({ alg: 'HS256' }, body);
      expect(await jose(token), body).toBe('invalid');
      expect(ours(token), body).toBe('invalid');
    }
  });
});

describe('TokenService.verify with its cache of verified tokens', () => {
  it('finds a token verified before until it expires; its key is asked every time', async () => {
    const active = new Set(['key-1']);
    const asked: string[] = [];
    const apiKeys = {
      activeKey: (id: string) => {
        asked.push(id);
        return Promise.resolve(active.has(id) ? ({ id, level: 'L1' } as ApiKeyRow) : null);
      },
      generation: () => null, // nothing may be cached: verify() asks every time
      touchDue: () => false,
    } as unknown as ApiKeyService;
    const tokens = new TokenService(SECRET, 60, apiKeys);
    vi.useFakeTimers({ now: Date.now(), toFake: ['Date'] });
    try {
      const { token } = await tokens.refresh({
        apiKeyId: 'key-1',
        keyName: 'k',
        access: 'admin',
        projects: null,
        level: 'L1',
        subject: 'agent-1',
        method: 'jwt',
      });
      for (let i = 0; i < 3; i++) {
        expect(await tokens.verify(token)).toMatchObject({
          apiKeyId: 'key-1',
          level: 'L1',
          subject: 'agent-1',
          method: 'jwt',
        });
      }
      expect(asked).toEqual(['key-1', 'key-1', 'key-1']);
      // A tampered copy is not the cached token.
      const tampered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'QQ' : 'AA'}`;
      await expect(tokens.verify(tampered)).rejects.toMatchObject({
        code: 'AUTH_UNAUTHORIZED',
      });
      // The key revoked: refused although the token was cached.
      active.delete('key-1');
      await expect(tokens.verify(token)).rejects.toMatchObject({ code: 'AUTH_UNAUTHORIZED' });
      active.add('key-1');
      // Past its expiry the cached token is refused too.
      vi.setSystemTime(Date.now() + 61_000);
      await expect(tokens.verify(token)).rejects.toMatchObject({
        code: 'AUTH_UNAUTHORIZED',
        message: 'The token has expired.',
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it('verifyCached: one lookup while the revocation generation and the token hold; never after a revocation or expiry', async () => {
    let generation = 7;
    let touchDue = false;
    const apiKeys = {
      activeKey: (id: string) =>
        Promise.resolve({
          id,
          name: 'k',
          level: 'L2',
          access: 'admin',
          projects: null,
        } as ApiKeyRow),
      generation: () => generation,
      touchDue: () => touchDue,
    } as unknown as ApiKeyService;
    const tokens = new TokenService(SECRET, 60, apiKeys);
    vi.useFakeTimers({ now: Date.now(), toFake: ['Date'] });
    try {
      const principal = {
        apiKeyId: 'key-2',
        level: 'L2',
        keyName: 'k',
        access: 'admin' as const,
        projects: null,
        subject: 'agent-2',
        method: 'jwt' as const,
      };
      const { token } = await tokens.refresh({ ...principal, level: 'L2' });
      expect(tokens.verifyCached(token)).toBeUndefined(); // never verified yet
      await tokens.verify(token);
      expect(tokens.verifyCached(token)).toMatchObject(principal);
      // Another signature (one that surely differs: a token may end in "AA" itself).
      const tampered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'QQ' : 'AA'}`;
      expect(tokens.verifyCached(tampered)).toBeUndefined();
      touchDue = true; // last_used_at must be written: verify() does it
      expect(tokens.verifyCached(token)).toBeUndefined();
      touchDue = false;
      generation = 8; // a key was revoked or rotated somewhere
      expect(tokens.verifyCached(token)).toBeUndefined();
      await tokens.verify(token);
      expect(tokens.verifyCached(token)).toMatchObject(principal);
      vi.setSystemTime(Date.now() + 61_000);
      expect(tokens.verifyCached(token)).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });
});
