/**
 * Resources: every indexed document as `knowledge://documents/{id}` (its converted markdown),
 * listed newest first — only those of one project when the server is scoped to it.
 */
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { MARKDOWN_MAX_CHARS } from '../knowledge/markdown/markdown.schemas.js';
import { ApiError, type KnowledgeApi } from './knowledge-api.js';

/** The URI of a document's resource. */
export function documentUri(id: string): string {
  return `knowledge://documents/${encodeURIComponent(id)}`;
}

/** A route's error as a protocol error (resources have no error result, unlike tools). */
function asMcpError(error: unknown): unknown {
  return error instanceof ApiError
    ? new McpError(ErrorCode.InvalidParams, error.describe(), { code: error.code })
    : error;
}

export function registerResources(
  server: McpServer,
  api: KnowledgeApi,
  scope: { projectId?: string | undefined },
): void {
  const template = new ResourceTemplate('knowledge://documents/{id}', {
    list: async () => {
      try {
        const list = await api.listDocuments({
          status: 'indexed',
          projectId: scope.projectId,
          limit: 1000,
        });
        return {
          resources: list.items.map((d) => ({
            uri: documentUri(d.id),
            name: d.name,
            // The template's title would otherwise label every document alike.
            title: d.name,
            mimeType: 'text/markdown',
            description: `${d.fileType} document${d.projectId === null ? '' : ` of project ${d.projectId}`}, updated ${d.updatedAt}`,
            _meta: { projectId: d.projectId },
          })),
        };
      } catch (error) {
        throw asMcpError(error);
      }
    },
  });
  server.registerResource(
    'knowledge-document',
    template,
    {
      title: 'Knowledge document',
      description: 'The converted markdown of an indexed document (page markers included).',
      mimeType: 'text/markdown',
    },
    async (uri, variables) => {
      const raw = variables.id;
      const id = decodeURIComponent(Array.isArray(raw) ? (raw[0] ?? '') : (raw ?? ''));
      try {
        const result = await api.readMarkdown(id, { maxChars: MARKDOWN_MAX_CHARS.maximum });
        return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: result.markdown }] };
      } catch (error) {
        throw asMcpError(error);
      }
    },
  );
}
