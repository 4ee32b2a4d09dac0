/**
 * The guard of the API scope: every route must declare `access` and `mutates` (start-up fails
 * otherwise, so no route can forget them); each request is checked for read-only mode, then
 * authenticated and its level checked. The authenticated principal is `request.principal`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import '../http/route-config.js';
import { looksLikeJwt } from './api-key.js';
import type { ApiKeyService, Principal } from './api-key.service.js';
import { levelSatisfies } from './levels.js';
import type { TokenService } from './token.service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the guard on authenticated routes. */
    principal: Principal | null;
  }
}

interface GuardDeps {
  apiKeys: ApiKeyService;
  tokens: TokenService;
  isReadOnly: () => boolean;
}

/** The credential of a request: `Authorization: Bearer <key or JWT>`, else `x-api-key`. */
function credentialOf(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1] ?? null;
  }
  const apiKey = request.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey !== '' ? apiKey : null;
}

async function authenticate(deps: GuardDeps, credential: string | null): Promise<Principal> {
  if (credential === null) throw new AppError('AUTH_UNAUTHORIZED');
  if (looksLikeJwt(credential)) return deps.tokens.verify(credential);
  const principal = await deps.apiKeys.verify(credential);
  if (principal === null) throw new AppError('AUTH_UNAUTHORIZED');
  return principal;
}

/** The audit actor for a request. */
export function actorOf(principal: Principal | null): string {
  return principal === null ? 'anonymous' : `api_key:${principal.apiKeyId}`;
}

/** Installs the guard on the API scope. */
export function registerGuard(app: FastifyInstance, deps: GuardDeps): void {
  app.addHook('onRoute', (route) => {
    const config = route.config ?? {};
    if (config.access === undefined || config.mutates === undefined) {
      throw new Error(
        `Route ${String(route.method)} ${route.url} must declare config.access and config.mutates`,
      );
    }
  });
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    const { access, mutates } = request.routeOptions.config;
    if (mutates === true && deps.isReadOnly()) throw new AppError('READ_ONLY_MODE');
    if (access === 'public') return;
    const required = access ?? 'L0'; // fail closed
    const principal = await authenticate(deps, credentialOf(request));
    if (!levelSatisfies(principal.level, required)) {
      throw new AppError(
        'AUTH_FORBIDDEN',
        `This route needs level ${required}; your key is ${principal.level}.`,
      );
    }
    request.principal = principal;
  });
}
