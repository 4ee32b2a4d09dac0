/**
 * Builds the Fastify application from an already-started context (config, database, services).
 * Routes under the API prefix sit in one scope whose guard enforces auth, levels and read-only mode.
 */
import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import rateLimit from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerGuard } from './auth/auth.guard.js';
import { registerAuditTrail } from './audit/audit-trail.js';
import { auditRoutes } from './audit/audit.routes.js';
import { authRoutes } from './auth/auth.routes.js';
import type { AppContext } from './context.js';
import { AppError } from './errors.js';
import { healthRoutes } from './health/health.routes.js';
import { knowledgeRoutes } from './knowledge/knowledge.routes.js';
import { mcpRoutes } from './mcp/mcp.routes.js';
import { registerMetricsPlugin } from './metrics/metrics.plugin.js';
import { handleClientError, handleFrameworkError } from './http/client-errors.js';
import { consoleRoot, consoleRoutes } from './http/console.js';
import { guardConnections, serverOptions } from './http/connections.js';
import { formatValidationErrors, registerErrorHandling } from './http/errors.js';
import { registerLoadShedding } from './http/load-shedding.js';
import { registerOpenApi, registerOpenApiRoute } from './http/openapi.js';
import { lazyChildLogger, RequestLog } from './http/request-log.js';
import { LazySchemas } from './http/lazy-schemas.js';
import { validationOptions } from './http/validation.js';
import './http/route-config.js';

const lazySchemas = new WeakMap<FastifyInstance, LazySchemas>();

/** Compiles the route schemas an app has not compiled yet (tests; `listen` does it too). */
export function compileRouteSchemas(app: FastifyInstance): Promise<void> {
  return lazySchemas.get(app)?.compileAll() ?? Promise.resolve();
}

/** TRUST_PROXY for Fastify: a hop count as the function Fastify makes of one (its types lack it). */
function fastifyTrust(
  trust: AppContext['config']['http']['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const schemas = new LazySchemas();
  const app = Fastify({
    loggerInstance: ctx.log,
    // Also counts each finished request in the metrics, when they are on.
    logController: new RequestLog(ctx.log, ctx.config.logRequests, ctx.metrics?.requests ?? null),
    childLoggerFactory: lazyChildLogger,
    bodyLimit: ctx.config.bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && /^[A-Za-z0-9._-]{1,128}$/.test(incoming)
        ? incoming
        : randomUUID();
    },
    // Our own hook answers 503 with the error body while closing (Fastify's lacks `code`).
    return503OnClosing: false,
    schemaErrorFormatter: formatValidationErrors,
    http: serverOptions(ctx.config.http),
    keepAliveTimeout: ctx.config.http.keepAliveTimeoutMs,
    // TRUST_PROXY: request.ip (logs, rate limits, audit) from X-Forwarded-For via trusted proxies.
    trustProxy: fastifyTrust(ctx.config.http.trustProxy),
    clientErrorHandler: handleClientError,
    frameworkErrors: handleFrameworkError,
    ...validationOptions(schemas),
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Route schemas compile at first use; the rest once the socket is open (http/lazy-schemas.ts).
  app.addHook('onListen', (done) => {
    schemas.compileAll().then(
      () => {
        app.log.debug('route schemas compiled');
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'a route schema does not compile');
      },
    );
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    schemas.clear();
    done();
  });

  let closing = false;
  app.addHook('preClose', () => {
    closing = true;
  });
  // Responses finished while closing end their keep-alive connection, so close() can complete.
  // (Hooks on every request take callbacks: no promise per hook.)
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done(closing ? new AppError('SERVICE_UNAVAILABLE') : undefined);
  });

  registerErrorHandling(app);
  guardConnections(app, ctx.config.http);
  // JSON only (multipart is added where uploads live): other bodies get 415, not a confusing 400.
  app.removeContentTypeParser('text/plain');
  // Many HTTP clients send `content-type: application/json` on every request, DELETE included: an
  // empty body then means "no body" (the route's schema decides if one was needed), not bad JSON.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text === '') done(null, undefined);
    else void parseJson(request, text, done);
  });
  if (ctx.config.corsOrigins.length > 0) {
    const any = ctx.config.corsOrigins.includes('*');
    // Browsers preflight everything but simple GET/POST: name every method and header the API
    // uses (the plugin's default methods are GET,HEAD,POST, which blocks DELETE from a console).
    await app.register(cors, {
      origin: any ? true : ctx.config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['authorization', 'x-api-key', 'content-type', 'x-request-id'],
      exposedHeaders: ['retry-after', 'x-request-id'],
      maxAge: 600,
    });
  }
  // After CORS, so a browser can read the 503 and its Retry-After.
  registerLoadShedding(app, {
    maxInFlight: ctx.config.maxRequestsInFlight,
    prefix: ctx.config.apiPrefix,
  });
  // Database outages, load shedding and, with METRICS_TOKEN, GET /metrics (before the routes).
  if (ctx.metrics !== null) {
    registerMetricsPlugin(app, ctx.metrics, { token: ctx.config.metrics.token });
  }
  await app.register(rateLimit, {
    global: false,
    errorResponseBuilder: (_request, context) =>
      new AppError(
        'RATE_LIMITED',
        `Too many requests; retry in ${Math.ceil(context.ttl / 1000)} s.`,
      ),
  });
  await registerOpenApi(app);

  await app.register(healthRoutes, ctx);
  // The web console's static assets (no auth: it signs in with a key and calls the API with a JWT).
  await app.register(consoleRoutes, { apiPrefix: ctx.config.apiPrefix, root: consoleRoot() });
  await app.register(
    async (api) => {
      registerGuard(api, {
        apiKeys: ctx.apiKeys,
        tokens: ctx.tokens,
        isReadOnly: () => ctx.readOnly,
        audit: ctx.audit,
        documentProject: (id) => ctx.knowledge.documents.projectOf(id),
      });
      registerAuditTrail(api, ctx.audit);
      registerOpenApiRoute(api);
      await api.register(auditRoutes, { audit: ctx.audit });
      await api.register(authRoutes, {
        apiKeys: ctx.apiKeys,
        tokens: ctx.tokens,
        tokenRateLimitPerMinute: ctx.config.authTokenRateLimitPerMinute,
      });
      await api.register(knowledgeRoutes, { knowledge: ctx.knowledge });
      await api.register(mcpRoutes, { apiPrefix: ctx.config.apiPrefix });
    },
    { prefix: ctx.config.apiPrefix },
  );
  lazySchemas.set(app, schemas);
  return app;
}
