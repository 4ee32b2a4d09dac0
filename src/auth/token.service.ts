/**
 * Short-lived JWTs minted from an API key: HS256 only, tied to a key that must stay unrevoked.
 * Minted with jose; verified on every request with node:crypto's HMAC (verifyHs256: a few
 * microseconds, where jose's verification cost 118–150 µs per call).
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { SignJWT } from 'jose';
import { AppError } from '../errors.js';
import { isAgentLevel } from './levels.js';
import type { ApiKeyRow } from '../db/schema.js';
import { principalOf, type ApiKeyService, type Principal } from './api-key.service.js';

const ISSUER = 'agent-platform-server';
const ALGORITHM = 'HS256';

interface IssuedToken {
  token: string;
  tokenType: 'Bearer';
  apiKeyId: string;
  level: Principal['level'];
  expiresAt: string;
}

/** The claims of a verified token that verification goes on to use. */
interface VerifiedClaims {
  apiKeyId: string;
  sub: string;
  exp: number;
  /** When the key was exchanged (`auth_time`; `iat` for tokens made before it was set). */
  authTime: number;
  /**
   * Once its key was found active: the key's row, the revocation generation read before that
   * lookup, and the principal. Valid while the generation is unchanged (a revocation or rotation
   * bumps it), so a revoked key stops its tokens at once.
   */
  active?: { row: ApiKeyRow; generation: number; principal: Principal };
}

/** Verified tokens kept in memory at most (then the cache starts over). */
const CACHE_MAX = 10_000;

export class TokenService {
  private readonly key: Uint8Array;
  private readonly secret: Buffer;
  /** Verified tokens by their SHA-256 (the token itself is never kept), until they expire. */
  private readonly verified = new Map<string, VerifiedClaims>();

  /** JWT_MAX_SESSION: a session of refreshed tokens ends this long after its key exchange. */
  private readonly maxSessionSeconds: number;

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
    private readonly apiKeys: ApiKeyService,
    options: { maxSessionSeconds?: number } = {},
  ) {
    this.maxSessionSeconds = options.maxSessionSeconds ?? Number.POSITIVE_INFINITY;
    this.key = new TextEncoder().encode(secret);
    this.secret = Buffer.from(this.key);
  }

  /** Verifies the API key and mints a JWT whose subject is the agent id, or the key id. */
  async issue(rawKey: string, agentId?: string): Promise<IssuedToken> {
    const principal = await this.apiKeys.verify(rawKey);
    if (principal === null) throw new AppError('AUTH_INVALID_API_KEY');
    const now = Math.floor(Date.now() / 1000);
    return this.mint(principal.apiKeyId, principal.level, agentId ?? principal.apiKeyId, now);
  }

  /**
   * A fresh token for a caller already authenticated (by a JWT the guard verified, so its key is
   * still active): same key, subject and the key's current level, a new full lifetime. Lets a
   * client that does not keep the key (the console) stay signed in, up to JWT_MAX_SESSION after
   * the key exchange (`auth_time`, kept across refreshes): then 401, and the key is needed again.
   */
  refresh(principal: Principal): Promise<IssuedToken> {
    const now = Math.floor(Date.now() / 1000);
    const authTime = principal.authTime ?? now;
    if (now >= authTime + this.maxSessionSeconds) {
      throw new AppError(
        'AUTH_UNAUTHORIZED',
        'The session has reached its maximum age (JWT_MAX_SESSION); exchange the API key again.',
      );
    }
    return this.mint(principal.apiKeyId, principal.level, principal.subject, authTime);
  }

  private async mint(
    apiKeyId: string,
    level: Principal['level'],
    subject: string,
    authTime: number,
  ): Promise<IssuedToken> {
    const now = Math.floor(Date.now() / 1000);
    // Never beyond the session's end.
    const exp = Math.min(now + this.ttlSeconds, authTime + this.maxSessionSeconds);
    const token = await new SignJWT({ apiKeyId, level, auth_time: authTime })
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(subject)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(this.key);
    return {
      token,
      tokenType: 'Bearer',
      apiKeyId,
      level,
      expiresAt: new Date(exp * 1000).toISOString(),
    };
  }

  /**
   * The principal of a token verified before, found synchronously by its SHA-256 (one lookup, as
   * for a raw key): while it has not expired, the revocation generation is the one its key was
   * found active under, and no `last_used_at` write is due; undefined otherwise (then `verify()`).
   */
  verifyCached(token: string): Principal | undefined {
    const claims = this.verified.get(hash('sha256', token, 'base64url'));
    const active = claims?.active;
    if (active === undefined || claims === undefined) return undefined;
    if (claims.exp * 1000 <= Date.now() || active.generation !== this.apiKeys.generation()) {
      return undefined;
    }
    return this.apiKeys.touchDue(active.row) ? undefined : active.principal;
  }

  /**
   * Verifies signature, algorithm, expiry and issuer, then that the key is still active. A token
   * verified before is found by its SHA-256 until it expires (its claims cannot change); whether
   * its key is still active is asked every time (the revocation generation, api-key.service.ts).
   */
  async verify(token: string): Promise<Principal> {
    const now = Math.floor(Date.now() / 1000);
    const digest = hash('sha256', token, 'base64url');
    let claims = this.verified.get(digest);
    if (claims === undefined || claims.exp <= now) {
      claims = this.check(token, now);
      if (this.verified.size >= CACHE_MAX) this.verified.clear();
      this.verified.set(digest, claims);
    }
    const generation = this.apiKeys.generation();
    const key = await this.apiKeys.activeKey(claims.apiKeyId);
    if (key === null) throw new AppError('AUTH_UNAUTHORIZED', 'The token’s API key was revoked.');
    const principal = principalOf(key, claims.sub, 'jwt', claims.authTime);
    claims.active = generation === null ? undefined : { row: key, generation, principal };
    return principal;
  }

  /** The claims of a valid token, or the 401 saying why not. */
  private check(token: string, now: number): VerifiedClaims {
    const payload = verifyHs256(token, this.secret, now);
    if (payload === 'expired') throw new AppError('AUTH_UNAUTHORIZED', 'The token has expired.');
    if (payload === null || payload.iss !== ISSUER) {
      throw new AppError('AUTH_UNAUTHORIZED', 'The token is invalid.');
    }
    const { apiKeyId, level, sub, exp, iat, auth_time: authTime } = payload;
    if (
      typeof apiKeyId !== 'string' ||
      !isAgentLevel(level) ||
      typeof sub !== 'string' ||
      typeof exp !== 'number' ||
      (authTime !== undefined && typeof authTime !== 'number')
    ) {
      throw new AppError('AUTH_UNAUTHORIZED', 'The token is invalid.');
    }
    return { apiKeyId, sub, exp, authTime: authTime ?? (iat as number) };
  }
}

/** The canonical base64url of a segment: no padding, nothing else (as jose decodes). */
const SEGMENT = /^[A-Za-z0-9_-]*$/;

/** A segment decoded as a JSON object, or null. */
function jsonObject(segment: string): Record<string, unknown> | null {
  if (!SEGMENT.test(segment)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/**
 * A compact JWS signed with HS256 under `secret`, checked as jose's jwtVerify checks it with
 * `algorithms: ['HS256']` and the claims this service requires: the header names HS256 (no other
 * algorithm, no `crit` extension), the signature is the HMAC-SHA256 of `header.payload` (compared
 * in constant time, canonical encoding only), the payload is a JSON object with numeric `exp` and
 * `iat`, a string `sub`, and `nbf` (if any) reached. Returns the payload, 'expired' (exp ≤ now),
 * or null when anything else is wrong.
 */
export function verifyHs256(
  token: string,
  secret: Buffer,
  now: number,
): Record<string, unknown> | 'expired' | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header, body, signature] = parts as [string, string, string];
  const protectedHeader = jsonObject(header);
  if (protectedHeader?.alg !== ALGORITHM || 'crit' in protectedHeader) return null;
  if ('b64' in protectedHeader && protectedHeader.b64 !== true) return null;
  const expected = createHmac('sha256', secret).update(`${header}.${body}`).digest('base64url');
  const given = Buffer.from(signature);
  const wanted = Buffer.from(expected);
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return null;
  const payload = jsonObject(body);
  if (payload === null) return null;
  const { exp, iat, nbf, sub } = payload;
  if (typeof exp !== 'number' || typeof iat !== 'number' || typeof sub !== 'string') return null;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now)) return null;
  if (exp <= now) return 'expired';
  return payload;
}
