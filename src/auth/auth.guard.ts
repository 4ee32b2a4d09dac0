/**
 * The guard of the API scope: every route must declare `access` and `mutates` (start-up fails
 * otherwise, so no route can forget them); each request is checked for read-only mode, then
 * authenticated and its level checked. The authenticated principal is `request.principal`.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AgentLevel } from '../db/schema.js';
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
  app.decorateRequest('principal', null);
  // Each route gets its own check, first among its onRequest hooks (before a route's rate limit,
  // as a scope hook ran): its declarations are read once here, not from `request.routeOptions`
  // (an object built at every read) on every request, and a public route that cannot change
  // state has no check at all.
  app.addHook('onRoute', (route) => {
    const config = route.config ?? {};
    const { access, mutates } = config;
    if (access === undefined || mutates === undefined) {
      throw new Error(
        `Route ${String(route.method)} ${route.url} must declare config.access and config.mutates`,
      );
    }
    if (access === 'public' && !mutates) return;
    const check = routeGuard(deps, access, mutates);
    const hooks = route.onRequest;
    route.onRequest =
      hooks === undefined ? [check] : [check, ...(Array.isArray(hooks) ? hooks : [hooks])];
  });
}

/** The onRequest check of one route. */
function routeGuard(
  deps: GuardDeps,
  access: 'public' | AgentLevel,
  mutates: boolean,
): onRequestHookHandler {
  // A callback hook: a known credential (the usual case) is admitted without a promise.
  return (request, _reply, done) => {
    if (mutates && deps.isReadOnly()) {
      done(new AppError('READ_ONLY_MODE'));
      return;
    }
    if (access === 'public') {
      done();
      return;
    }
    const credentials = credentialsOf(request);
    // Only the first credential may answer from the cache: it is the one authenticate() tries first.
    const first = credentials[0];
    const known = typeof first === 'string' ? cachedPrincipal(deps, first) : undefined;
    if (known !== undefined) {
      done(admit(request, known, access));
      return;
    }
    authenticate(deps, credentials).then(
      (principal) => {
        done(admit(request, principal, access));
      },
      (error: unknown) => {
        done(error as Error);
      },
    );
  };
}

/** The principal of a credential verified before and still valid, found without a promise. */
function cachedPrincipal(deps: GuardDeps, credential: string): Principal | undefined {
  return looksLikeJwt(credential)
    ? deps.tokens.verifyCached(credential)
    : deps.apiKeys.verifyCached(credential);
}

/** Sets the request's principal if its level suffices; else the 403 to answer. */
function admit(
  request: FastifyRequest,
  principal: Principal,
  required: AgentLevel,
): undefined | AppError {
  if (!levelSatisfies(principal.level, required)) {
    return new AppError(
      'AUTH_FORBIDDEN',
      `This route needs level ${required}; your key is ${principal.level}.`,
    );
  }
  request.principal = principal;
  return undefined;
}
