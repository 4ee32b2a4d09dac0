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

/**
 * The credentials of a request, in the order they are tried: `x-api-key` first (as the reference
 * server does: its console sends a real key there beside a placeholder Bearer), then
 * `Authorization: Bearer <key or JWT>`. A malformed Authorization header counts as a bad credential.
 */
function credentialsOf(request: FastifyRequest): (string | null)[] {
  const credentials: (string | null)[] = [];
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey !== '') credentials.push(apiKey);
  const header = request.headers.authorization;
  if (typeof header === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    credentials.push(match?.[1] ?? null);
  }
  return credentials;
}

async function authenticateOne(deps: GuardDeps, credential: string | null): Promise<Principal> {
  if (credential === null) throw new AppError('AUTH_UNAUTHORIZED');
  if (looksLikeJwt(credential)) return deps.tokens.verify(credential);
  const principal = await deps.apiKeys.verify(credential);
  if (principal === null) throw new AppError('AUTH_UNAUTHORIZED');
  return principal;
}

/** The first credential that verifies; when none does, the first one's error. */
async function authenticate(deps: GuardDeps, credentials: (string | null)[]): Promise<Principal> {
  if (credentials.length === 0) throw new AppError('AUTH_UNAUTHORIZED');
  let firstError: unknown;
  for (const credential of credentials) {
    try {
      return await authenticateOne(deps, credential);
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode !== 401) throw error;
      firstError ??= error;
    }
  }
  throw firstError;
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
    const principal = await authenticate(deps, credentialsOf(request));
    if (!levelSatisfies(principal.level, required)) {
      throw new AppError(
        'AUTH_FORBIDDEN',
        `This route needs level ${required}; your key is ${principal.level}.`,
      );
    }
    request.principal = principal;
  });
}
