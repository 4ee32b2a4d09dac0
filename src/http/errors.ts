/**
 * Turns anything thrown into the error body. Expected errors keep their code; Fastify's own errors
 * are mapped to catalogue codes; anything else is a logged, generic 500 that reveals nothing.
 */
import type { FastifyError, FastifyInstance, FastifySchemaValidationError } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { AppError, ERROR_CATALOGUE, type ErrorBody, type ErrorCode } from '../errors.js';

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_JSON',
};

const BY_STATUS: Partial<Record<number, ErrorCode>> = {
  400: 'BAD_REQUEST',
  404: 'ROUTE_NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

export function toErrorBody(error: unknown): ErrorBody {
  if (error instanceof AppError) return error.toBody();
  const e = error as Partial<FastifyError> & { validation?: unknown };
  if (e.validation !== undefined) {
    return { statusCode: 400, code: 'VALIDATION_ERROR', message: e.message ?? 'Invalid request' };
  }
  const code =
    (e.code !== undefined ? FASTIFY_CODES[e.code] : undefined) ??
    (e.statusCode !== undefined ? BY_STATUS[e.statusCode] : undefined);
  if (code !== undefined && e.statusCode !== undefined && e.statusCode < 500) {
    const status = ERROR_CATALOGUE[code].status;
    return { statusCode: status, code, message: e.message ?? ERROR_CATALOGUE[code].message };
  }
  if (isDatabaseUnavailable(e)) {
    return new AppError('DATABASE_UNAVAILABLE').toBody();
  }
  return {
    statusCode: 500,
    code: 'INTERNAL_ERROR',
    message: ERROR_CATALOGUE.INTERNAL_ERROR.message,
  };
}

/** Paths of registered routes, to answer 405 (with `Allow`) instead of 404 on a wrong method. */
function routeMatcher(app: FastifyInstance) {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const source = route.url
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[A-Za-z0-9_]+/g, '[^/]+');
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    routes.push({ pattern: new RegExp(`^${source}$`), methods: methods.map(String) });
  });
  return (path: string): string[] =>
    [...new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods))].sort();
}

export function registerErrorHandling(app: FastifyInstance): void {
  const allowedMethods = routeMatcher(app);

  app.setErrorHandler((error, request, reply) => {
    const body = toErrorBody(error);
    // An outage fails every request alike: one line each, without a stack trace.
    if (body.code === 'DATABASE_UNAVAILABLE') {
      request.log.warn(
        { code: body.code, cause: (error as Error).message },
        'database unavailable',
      );
    } else if (body.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ code: body.code, statusCode: body.statusCode }, body.message);
    return reply.status(body.statusCode).send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = allowedMethods(path);
    const body: ErrorBody =
      allowed.length > 0
        ? {
            statusCode: 405,
            code: 'METHOD_NOT_ALLOWED',
            message: `Method ${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
          }
        : {
            statusCode: 404,
            code: 'ROUTE_NOT_FOUND',
            message: `Route ${request.method} ${path} not found`,
          };
    if (allowed.length > 0) void reply.header('allow', allowed.join(', '));
    return reply.status(body.statusCode).send(body);
  });
}

/**
 * Validation messages that name the offending field, e.g. `body.level must be one of: L0, L1, L2`.
 * Used as Fastify's `schemaErrorFormatter`.
 */
export function formatValidationErrors(
  errors: FastifySchemaValidationError[],
  dataVar: string,
): Error {
  const messages = new Map<string, string>();
  const allowed = new Map<string, string[]>();
  for (const error of errors) {
    let field = dataVar + error.instancePath.replace(/\//g, '.');
    const params = error.params;
    let message = error.message ?? 'is invalid';
    if (error.keyword === 'const') {
      // A union of literals reports one `const` failure per member, then `anyOf`: merge them.
      allowed.set(field, [...(allowed.get(field) ?? []), String(params.allowedValue)]);
      continue;
    } else if (error.keyword === 'anyOf' && allowed.has(field)) {
      message = `must be one of: ${allowed.get(field)?.join(', ') ?? ''}`;
    } else if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
      message = `must be one of: ${params.allowedValues.map(String).join(', ')}`;
    } else if (error.keyword === 'required' && typeof params.missingProperty === 'string') {
      field = `${field}.${params.missingProperty}`;
      message = 'is required';
    } else if (
      error.keyword === 'additionalProperties' &&
      typeof params.additionalProperty === 'string'
    ) {
      field = `${field}.${params.additionalProperty}`;
      message = 'is not an allowed property';
    }
    if (!messages.has(field)) messages.set(field, `${field} ${message}`);
  }
  return new Error([...messages.values()].join('; '));
}
