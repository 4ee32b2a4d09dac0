/** The OpenAPI 3 document, generated from the route schemas, and the docs UI at /docs. */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { ERROR_CATALOGUE } from '../errors.js';
import { ErrorBodySchema } from './schemas.js';

const errorTable = Object.entries(ERROR_CATALOGUE)
  .map(([code, { status, message }]) => `| ${status} | \`${code}\` | ${message} |`)
  .join('\n');

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Agent Platform Server API',
        version: '1.0.0',
        description:
          'Every error response has the body `{statusCode, code, message}`.\n\n| status | code | meaning |\n|---|---|---|\n' +
          errorTable,
      },
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'A raw API key or a JWT from POST /auth/token.',
          },
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        },
        schemas: { ErrorBody: ErrorBodySchema },
      },
      security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    },
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
