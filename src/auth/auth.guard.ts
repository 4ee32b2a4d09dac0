/**
 * The guard of the API scope: every route must declare `access` and `mutates` (start-up fails
 * otherwise, so no route can forget them); each request is checked for read-only mode, then
 * authenticated, its level checked and its key's scope (auth/scope.ts): the access the route
 * needs, and, for a key restricted to projects, the project a request names (403) or the
 * document it names (404, as if absent). The authenticated principal is `request.principal`;
 * lists, retrieval and events narrow themselves to `principal.projects` in their queries.
 */
import type {
  FastifyInstance,
  FastifyRequest,
  onRequestHookHandler,
  preValidationHookHandler,
  RouteOptions,
} from 'fastify';
import { requestActor } from '../audit/actor.js';
import type { AuditService } from '../audit/audit.service.js';
import type { AgentLevel } from '../db/schema.js';
import { AppError } from '../errors.js';
import '../http/route-config.js';
import { looksLikeJwt } from './api-key.js';
import type { ApiKeyService, Principal } from './api-key.service.js';
import { levelSatisfies } from './levels.js';
import { accessSatisfies, reaches, routeNeeds, type KeyAccess } from './scope.js';
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
  /** Where refusals are recorded. */
  audit?: AuditService;
  /** A document's project (null: none), or undefined when there is no such document. */
  documentProject?: (id: string) => Promise<string | null | undefined>;
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

/** What a guarded route declared, as the guard enforces it (tests build their matrix from it). */
export interface GuardedRoute {
  method: string;
  url: string;
  level: 'public' | AgentLevel;
  mutates: boolean;
  needs: KeyAccess;
  document: boolean;
  everyProject: boolean;
  namesProject: boolean;
  /** A long-lived response (the event stream). */
  stream: boolean;
}

const guarded = new WeakMap<object, GuardedRoute[]>();

/** The routes the guard installed itself on, in an app (keyed by its HTTP server). */
export function guardedRoutes(app: FastifyInstance): readonly GuardedRoute[] {
  return guarded.get(app.server) ?? [];
}

/** Installs the guard on the API scope. */
export function registerGuard(app: FastifyInstance, deps: GuardDeps): void {
  app.decorateRequest('principal', null);
  const routes: GuardedRoute[] = guarded.get(app.server) ?? [];
  guarded.set(app.server, routes);
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
    const needs = routeNeeds(config);
    const names = namesProject(route);
    for (const method of [route.method].flat()) {
      routes.push({
        method,
        url: route.url,
        level: access,
        mutates,
        needs,
        document: config.document === true,
        everyProject: config.everyProject === true,
        namesProject: names,
        stream: config.stream === true,
      });
    }
    if (access === 'public' && !mutates) return;
    const check = routeGuard(deps, access, mutates, needs, routeName(route));
    const hooks = route.onRequest;
    route.onRequest =
      hooks === undefined ? [check] : [check, ...(Array.isArray(hooks) ? hooks : [hooks])];
    if (access === 'public') return;
    const projectCheck = projectGuard(deps, route, names);
    if (projectCheck !== undefined) {
      const handlers = route.preValidation;
      route.preValidation =
        handlers === undefined
          ? [projectCheck]
          : [projectCheck, ...(Array.isArray(handlers) ? handlers : [handlers])];
    }
  });
}

/** `GET /api/v1/knowledge/documents/:id`: how audit entries of refusals name a route. */
const routeName = (route: RouteOptions) =>
  `${Array.isArray(route.method) ? route.method.join(',') : route.method} ${route.url}`;

/** Whether a route's query or body schema has a `projectId` (a project the request names). */
function namesProject(route: RouteOptions): boolean {
  const schema = route.schema as
    { querystring?: { properties?: object }; body?: { properties?: object } } | undefined;
  return [schema?.querystring, schema?.body].some(
    (part) => part?.properties !== undefined && 'projectId' in part.properties,
  );
}

const projectIdOf = (part: unknown): string | undefined => {
  const value = (part as { projectId?: unknown } | null | undefined)?.projectId;
  return typeof value === 'string' ? value : undefined;
};

/**
 * For a key restricted to projects, the project checks of a route, once its body is parsed and
 * before it is validated (so a refusal does not depend on the rest of the body); undefined when
 * the route needs none (`named`: its query or body has a `projectId`). A project named outside
 * the key's: 403 (recorded). A document outside them: 404, as if absent.
 */
function projectGuard(
  deps: GuardDeps,
  route: RouteOptions,
  named: boolean,
): preValidationHookHandler | undefined {
  const config = route.config ?? {};
  const document = config.document === true;
  const every = config.everyProject === true;
  if (!document && !every && !named) return undefined;
  const name = routeName(route);
  return (request, _reply, done) => {
    const projects = request.principal?.projects ?? null;
    if (projects === null) {
      done();
      return;
    }
    const project = projectIdOf(request.query) ?? projectIdOf(request.body);
    if (every && project === undefined) {
      const message =
        'This acts on every project (where a route takes projectId, name one of yours); your key is restricted to projects.';
      done(refuse(deps, request, name, 'AUTH_PROJECT_FORBIDDEN', message));
      return;
    }
    if (named && project !== undefined && !projects.includes(project)) {
      const message = `Your key may not reach project "${project}".`;
      done(refuse(deps, request, name, 'AUTH_PROJECT_FORBIDDEN', message));
      return;
    }
    const id = (request.params as { id?: unknown } | undefined)?.id;
    if (!document || typeof id !== 'string' || deps.documentProject === undefined) {
      done();
      return;
    }
    deps.documentProject(id).then(
      (owner) => {
        done(
          owner === undefined || !reaches(projects, owner)
            ? new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND')
            : undefined,
        );
      },
      (error: unknown) => {
        done(error as Error);
      },
    );
  };
}

/** A refusal of the key's scope: recorded in the audit trail, then answered 403. */
function refuse(
  deps: GuardDeps,
  request: FastifyRequest,
  route: string,
  code: 'AUTH_ACCESS_FORBIDDEN' | 'AUTH_PROJECT_FORBIDDEN',
  message: string,
): AppError {
  deps.audit?.record({
    actor: requestActor(request),
    action: 'access.refused',
    target: route,
    details: { code, access: request.principal?.access, projects: request.principal?.projects },
  });
  return new AppError(code, message);
}

/** The onRequest check of one route. */
function routeGuard(
  deps: GuardDeps,
  access: 'public' | AgentLevel,
  mutates: boolean,
  needs: KeyAccess,
  route: string,
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
      done(admit(deps, request, known, access, needs, route));
      return;
    }
    authenticate(deps, credentials).then(
      (principal) => {
        done(admit(deps, request, principal, access, needs, route));
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

/** Sets the request's principal if its level and access suffice; else the 403 to answer. */
function admit(
  deps: GuardDeps,
  request: FastifyRequest,
  principal: Principal,
  required: AgentLevel,
  needs: KeyAccess,
  route: string,
): undefined | AppError {
  if (!levelSatisfies(principal.level, required)) {
    return new AppError(
      'AUTH_FORBIDDEN',
      `This route needs level ${required}; your key is ${principal.level}.`,
    );
  }
  request.principal = principal;
  if (!accessSatisfies(principal.access, needs)) {
    return refuse(
      deps,
      request,
      route,
      'AUTH_ACCESS_FORBIDDEN',
      `This route needs ${needs} access; your key has ${principal.access} access.`,
    );
  }
  return undefined;
}
