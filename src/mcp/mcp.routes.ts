/**
 * POST {API_PREFIX}/mcp: the MCP streamable HTTP transport, stateless (a server and transport per
 * request, so any instance answers any request). The guard has authenticated the request (L0);
 * the tools call the Knowledge routes in process with the same credentials. GET and DELETE (the
 * optional SSE stream and session end) answer 405, as the MCP specification allows.
 */
import { createRequire } from 'node:module';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { toErrorBody } from '../http/errors.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../http/schemas.js';
import { forwardedHeaders, injectTransport } from './inject-transport.js';
import { KnowledgeApi } from './knowledge-api.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/**
 * The MCP SDK (with zod, hono and their ~200 modules) is loaded at the first MCP request, not at
 * start-up: a server that is never asked over MCP never pays for it.
 */
let sdk:
  | Promise<
      [
        typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
        typeof import('./server.js'),
      ]
    >
  | undefined;
const loadSdk = () =>
  (sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./server.js'),
  ]));

export const mcpRoutes: FastifyPluginAsyncTypebox<{
  apiPrefix: string;
  addWaitMs?: number;
}> = async (app, { apiPrefix, addWaitMs }) => {
  app.post(
    '/mcp',
    {
      // Reads and writes go through the Knowledge routes, which enforce read-only mode each.
      config: { access: 'L0', mutates: false },
      schema: {
        summary: 'Model Context Protocol (streamable HTTP): the knowledge base as agent tools',
        description:
          'JSON-RPC messages of the Model Context Protocol, stateless (no `mcp-session-id`): tools `search_knowledge`, `list_documents`, `list_projects`, `get_document`, `read_document`, `add_text_document`; resources `knowledge://documents/{id}`. Send `Accept: application/json, text/event-stream`; answers are JSON. Tools call the Knowledge routes with this request’s credentials, so a tool error carries the route’s catalogue code (e.g. `READ_ONLY_MODE` for `add_text_document` in read-only mode). `projectId` scopes the resource list to one project.',
        tags: ['mcp'],
        querystring: Type.Object(
          { projectId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
          { additionalProperties: false },
        ),
        body: Type.Unknown({ description: 'A JSON-RPC request, notification or batch.' }),
        response: {
          200: Type.Unknown({ description: 'The JSON-RPC response(s), `application/json`.' }),
          202: Type.Null({ description: 'Accepted: the body held only notifications.' }),
          ...errorResponses(...AUTHENTICATED_ERRORS, 406, 415),
        },
      },
    },
    async (request, reply) => {
      const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadSdk();
      const api = new KnowledgeApi(
        injectTransport(app, `${apiPrefix}/knowledge`, forwardedHeaders(request)),
      );
      const server = createMcpServer(api, {
        version,
        projectId: request.query.projectId,
        canWrite: request.principal?.access !== 'read',
        ...(addWaitMs === undefined ? {} : { addWaitMs }),
      });
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      // The SDK writes the response: keep the headers hooks set (request id, CORS) on it.
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(name, value);
      }
      reply.hijack();
      reply.raw.once('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, reply.raw, request.body);
      } catch (error) {
        request.log.error({ err: error }, 'MCP request failed');
        if (!reply.raw.headersSent) {
          const body = toErrorBody(error);
          reply.raw.writeHead(body.statusCode, { 'content-type': 'application/json' });
          reply.raw.end(JSON.stringify(body));
        }
      }
    },
  );
};
