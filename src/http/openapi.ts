/**
 * The OpenAPI 3 document, generated from the route schemas, and the docs UI at /docs. The first
 * screen of /docs is the operations: the table of error codes lives with the `ErrorBody` schema,
 * which the UI shows after them.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { ErrorBodyDocument } from './schemas.js';

const DESCRIPTION = [
  'Auth (API keys, short-lived JWTs) and the knowledge base: upload a file, index it (convert → chunk → embed), retrieve passages.',
  'Send a raw API key as `x-api-key` or `Authorization: Bearer`, or a JWT from `POST /auth/token` as a Bearer token.',
  'Every error response has the body `{statusCode, code, message}`; the codes are listed with the `ErrorBody` schema at the end of this page.',
].join('\n\n');

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A property with a default is filled in when absent (Ajv `useDefaults`), so a client need not
 * send it: drop it from `required`, in this schema and every schema nested in it.
 */
function optionalDefaults(schema: unknown): void {
  if (Array.isArray(schema)) {
    schema.forEach(optionalDefaults);
    return;
  }
  if (!isObject(schema)) return;
  const properties = schema.properties;
  if (isObject(properties) && Array.isArray(schema.required)) {
    const required = schema.required.filter(
      (name) =>
        typeof name !== 'string' || !isObject(properties[name]) || !('default' in properties[name]),
    );
    if (required.length > 0) schema.required = required;
    else delete schema.required;
  }
  Object.values(schema).forEach(optionalDefaults);
}

/** Corrections to the generated document that @fastify/swagger cannot derive from the schemas. */
function finishDocument(generated: Json): Json {
  const document = structuredClone(generated);
  const paths = isObject(document.paths) ? document.paths : {};
  for (const operation of Object.values(paths).flatMap((p) =>
    isObject(p) ? Object.values(p) : [],
  )) {
    if (!isObject(operation)) continue;
    for (const parameter of Array.isArray(operation.parameters) ? operation.parameters : []) {
      if (isObject(parameter) && isObject(parameter.schema) && 'default' in parameter.schema) {
        parameter.required = false;
      }
    }
    const body = operation.requestBody;
    if (isObject(body)) {
      optionalDefaults(body.content);
      // A body that may be null (or left out) is optional: @fastify/swagger marks every body required.
      const schemas = Object.values(isObject(body.content) ? body.content : {}).map((m) =>
        isObject(m) ? m.schema : undefined,
      );
      if (schemas.length > 0 && schemas.every((s) => isObject(s) && s.nullable === true)) {
        body.required = false;
      }
    }
  }
  return document;
}

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Agent Platform Server API',
        version: '1.0.0',
        description: DESCRIPTION,
      },
      tags: [
        { name: 'auth', description: 'API keys and tokens.' },
        {
          name: 'knowledge',
          description: 'Documents: upload, index, list, delete; retrieval over their chunks.',
        },
        { name: 'core', description: 'Health of the instance (public, unprefixed).' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'A raw API key or a JWT from POST /auth/token.',
          },
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        },
        schemas: { ErrorBody: ErrorBodyDocument },
      },
      security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    },
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? finishDocument(documentObject.openapiObject as Json)
        : documentObject.swaggerObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
}

/** `{prefix}/openapi.json`: public like /docs, as a docs UI cannot send credentials. */
export function registerOpenApiRoute(api: FastifyInstance): void {
  api.get(
    '/openapi.json',
    { config: { access: 'public', mutates: false }, schema: { hide: true } },
    () => api.swagger(),
  );
}
