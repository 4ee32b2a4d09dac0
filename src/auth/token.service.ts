/** Short-lived JWTs minted from an API key: HS256 only, tied to a key that must stay unrevoked. */
import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import { AppError } from '../errors.js';
import { isAgentLevel } from './levels.js';
import type { ApiKeyService, Principal } from './api-key.service.js';

const ISSUER = 'agent-platform-server';
const ALGORITHM = 'HS256';

interface IssuedToken {
  token: string;
  tokenType: 'Bearer';
  apiKeyId: string;
  level: Principal['level'];
  expiresAt: string;
}

export class TokenService {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
    private readonly apiKeys: ApiKeyService,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  /** Verifies the API key and mints a JWT whose subject is the agent id, or the key id. */
  async issue(rawKey: string, agentId?: string): Promise<IssuedToken> {
    const principal = await this.apiKeys.verify(rawKey);
    if (principal === null) throw new AppError('AUTH_INVALID_API_KEY');
    return this.mint(principal.apiKeyId, principal.level, agentId ?? principal.apiKeyId);
  }

  /**
   * A fresh token for a caller already authenticated (by a JWT the guard verified, so its key is
   * still active): same key, subject and the key's current level, a new full lifetime. Lets a
   * client that does not keep the key (the console) stay signed in.
   */
  refresh(principal: Principal): Promise<IssuedToken> {
    return this.mint(principal.apiKeyId, principal.level, principal.subject);
  }

  private async mint(
    apiKeyId: string,
    level: Principal['level'],
    subject: string,
  ): Promise<IssuedToken> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.ttlSeconds;
    const token = await new SignJWT({ apiKeyId, level })
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

  /** Verifies signature, algorithm, expiry and issuer, then that the key is still active. */
  async verify(token: string): Promise<Principal> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: [ALGORITHM],
        issuer: ISSUER,
        requiredClaims: ['sub', 'exp', 'iat'],
      }));
    } catch (error) {
      const expired = error instanceof joseErrors.JWTExpired;
      throw new AppError(
        'AUTH_UNAUTHORIZED',
        expired ? 'The token has expired.' : 'The token is invalid.',
      );
    }
    const { apiKeyId, level, sub } = payload;
    if (typeof apiKeyId !== 'string' || !isAgentLevel(level) || typeof sub !== 'string') {
      throw new AppError('AUTH_UNAUTHORIZED', 'The token is invalid.');
    }
    const key = await this.apiKeys.activeKey(apiKeyId);
    if (key === null) throw new AppError('AUTH_UNAUTHORIZED', 'The token’s API key was revoked.');
    return { apiKeyId, level: key.level, subject: sub, method: 'jwt' };
  }
}
