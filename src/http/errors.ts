/**
 * Turns anything thrown into the error body. Expected errors keep their code; Fastify's own errors
 * are mapped to catalogue codes; anything else is a logged, generic 500 that reveals nothing.
 */
import type { FastifyError, FastifyInstance, FastifySchemaValidationError } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { AppError, ERROR_CATALOGUE, type ErrorBody, type ErrorCode } from '../errors.js';
import { redactText } from './redact.js';

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
        { code: body.code, cause: redactText((error as Error).message) },
        'database unavailable',
      );
    } else if (body.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else
      request.log.info({ code: body.code, statusCode: body.statusCode }, redactText(body.message));
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

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
};

/** `must be …` for the types a value may have; `null` only when it is the sole choice. */
function typeMessage(types: readonly string[]): string {
  const unique = [...new Set(types)];
  const shown = unique.length > 1 ? unique.filter((t) => t !== 'null') : unique;
  return `must be ${shown.map((t) => TYPE_NAMES[t] ?? t).join(' or ')}`;
}

/** The message of a failed union whose branches said nothing more precise. */
const NO_FORM = 'is not one of the allowed forms';

const plural = (n: unknown, one: string) => `${String(n)} ${one}${n === 1 ? '' : 's'}`;

/** Ajv's message for one failed keyword, in plain words (never a regex or a schema keyword). */
function plainMessage(error: FastifySchemaValidationError): string {
  const { params } = error;
  switch (error.keyword) {
    case 'minLength':
      return params.limit === 1
        ? 'must not be empty'
        : `must be at least ${plural(params.limit, 'character')}`;
    case 'maxLength':
      return `must be at most ${plural(params.limit, 'character')}`;
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum': {
      const words: Record<string, string> = {
        '>=': 'at least',
        '>': 'greater than',
        '<=': 'at most',
        '<': 'less than',
      };
      return `must be ${words[String(params.comparison)] ?? String(params.comparison)} ${String(params.limit)}`;
    }
    case 'minItems':
      return `must have at least ${plural(params.limit, 'item')}`;
    case 'maxItems':
      return `must have at most ${plural(params.limit, 'item')}`;
    case 'uniqueItems':
      return 'must not contain duplicates';
    case 'multipleOf':
      return `must be a multiple of ${String(params.multipleOf)}`;
    case 'format':
      return `must be a valid ${String(params.format)}`;
    case 'pattern':
      return 'is not in the expected format';
    default:
      return 'is invalid';
  }
}

/**
 * Validation messages that name the offending field, e.g. `body.level must be one of: L0, L1, L2`.
 * Used as Fastify's `schemaErrorFormatter`. Ajv reports every failed branch of a union: the
 * message keeps the most specific ones (a wrong property inside the object rather than "must be
 * null" for the object), merges alternatives (`must be a string or an integer`) and never shows a
 * schema keyword.
 */
export function formatValidationErrors(
  errors: FastifySchemaValidationError[],
  dataVar: string,
): Error {
  const messages = new Map<string, string>();
  const types = new Map<string, string[]>();
  const allowed = new Map<string, string[]>();
  const add = (field: string, message: string) => {
    if (!messages.has(field)) messages.set(field, message);
  };
  for (const error of errors) {
    const field = dataVar + error.instancePath.replace(/\//g, '.');
    const params = error.params;
    switch (error.keyword) {
      case 'const':
        // A union of literals reports one `const` failure per member, then `anyOf`: merge them.
        allowed.set(field, [...(allowed.get(field) ?? []), String(params.allowedValue)]);
        break;
      case 'enum':
        add(field, `must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}`);
        break;
      case 'type':
        types.set(field, [...(types.get(field) ?? []), ...String(params.type).split(',')]);
        break;
      case 'required':
        add(`${field}.${String(params.missingProperty)}`, 'is required');
        break;
      case 'additionalProperties':
        add(`${field}.${String(params.additionalProperty)}`, 'is not an allowed property');
        break;
      case 'anyOf':
      case 'oneOf':
        // The branches' own errors say more; this only stands in when they said nothing.
        add(field, NO_FORM);
        break;
      default:
        add(field, plainMessage(error));
    }
  }
  for (const [field, values] of allowed)
    messages.set(field, `must be one of: ${values.join(', ')}`);
  // A wrong type is the least precise message: any other failure of the field says more.
  const shapeOnly = new Set<string>();
  for (const [field, list] of types) {
    const current = messages.get(field);
    if (allowed.has(field) || (current !== undefined && current !== NO_FORM)) continue;
    messages.set(field, typeMessage(list));
    shapeOnly.add(field);
  }
  // A value whose parts failed had the right shape: report the parts, not the union around them.
  const general = (field: string) => shapeOnly.has(field) || messages.get(field) === NO_FORM;
  const all = [...messages.keys()];
  const fields = all.filter(
    (field) => !(general(field) && all.some((other) => other.startsWith(`${field}.`))),
  );
  return new Error(fields.map((field) => `${field} ${messages.get(field) ?? ''}`).join('; '));
}
