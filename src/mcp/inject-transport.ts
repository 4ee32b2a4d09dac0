/**
 * The in-server transport of the MCP tools: each call is a request to the app's own route
 * (`app.inject`, no socket) carrying the MCP request's credentials, so the guard, validation,
 * read-only mode and errors are exactly those of the route.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiTransport } from './knowledge-api.js';

/** The headers of `request` that authenticate it (and its id, so logs tie the calls together). */
export function forwardedHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = { 'x-request-id': request.id };
  for (const name of ['authorization', 'x-api-key'] as const) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

export function injectTransport(
  app: FastifyInstance,
  knowledgePrefix: string,
  headers: Record<string, string>,
): ApiTransport {
  return async ({ method, path, query, body }) => {
    const res = await app.inject({
      method,
      url: `${knowledgePrefix}${path}`,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      ...(query === undefined
        ? {}
        : {
            query: Object.fromEntries(
              Object.entries(query).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])),
            ),
          }),
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: res.statusCode,
      body: res.body === '' ? null : (JSON.parse(res.body) as unknown),
    };
  };
}
