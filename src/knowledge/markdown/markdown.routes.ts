/** GET …/knowledge/documents/:id/markdown: the converted markdown of a document, or a range. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { described } from '../../http/schemas.js';
import { IdParamsSchema } from '../documents/documents.schemas.js';
import type { KnowledgeModule } from '../knowledge.module.js';
import { errors, READ_DOCUMENT, tags } from '../route-options.js';
import { MarkdownQuerySchema, MarkdownResultSchema } from './markdown.schemas.js';

export const markdownRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  app.get(
    '/knowledge/documents/:id/markdown',
    {
      config: READ_DOCUMENT,
      schema: {
        summary: 'The converted markdown of a document: whole, a page range or a chunk range',
        description:
          'The markdown the last successful index stored. `fromPage`/`toPage` (1-based, inclusive) select pages by the converter’s page markers (text before the first marker is page 1; unpaged formats → 400); `fromChunk`/`toChunk` (a hit’s `chunkIndex`, inclusive) select the exact text of those chunks, overlap counted once. Not both. A range reaching past the end stops at the last page or chunk. The answer is cut at a line end to `maxChars` (`truncated: true`). A document never indexed → 409 `KNOWLEDGE_DOCUMENT_NOT_INDEXED`.',
        tags,
        params: IdParamsSchema,
        querystring: MarkdownQuerySchema,
        response: {
          200: described('The markdown of the range.', MarkdownResultSchema),
          ...errors(404, 409),
        },
      },
    },
    (request) => knowledge.markdown.read(request.params.id, request.query),
  );
};
