/** The indexing routes: index a document, the converter commands and the converter's status. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { described } from '../../http/schemas.js';
import { DocumentSchema, IdParamsSchema } from '../documents/documents.schemas.js';
import type { KnowledgeModule } from '../knowledge.module.js';
import { errors, READ, tags, WRITE } from '../route-options.js';
import {
  CommandsSchema,
  ConverterStatusSchema,
  IndexBodySchema,
  IndexResultSchema,
  ReindexBodySchema,
  ReindexResultSchema,
} from './indexing.schemas.js';

export const indexingRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  app.post(
    '/knowledge/documents/reindex',
    {
      config: { ...WRITE, everyProject: true, audit: 'documents.reindex' },
      schema: {
        summary: 'Re-index the stale documents (after a change of the embedding model)',
        description:
          'Queues a run of every document embedded with another model than the active one, with its last settings, reusing its stored markdown (no conversion), and answers 202 at once. While they run, the model they were embedded with keeps answering semantic searches; once every chunk has a vector of the active model, it answers (`GET …/knowledge/status`: `servingModel`, `switch`).',
        tags,
        body: ReindexBodySchema,
        response: {
          202: described('The runs were queued.', ReindexResultSchema),
          ...errors(503),
        },
      },
    },
    async (request, reply) => {
      const outcome = await knowledge.indexing.reindexStale(
        knowledge.embedder.model,
        request.body.projectId,
      );
      return reply.status(202).send(outcome);
    },
  );

  app.post(
    '/knowledge/documents/:id/index',
    {
      config: { ...WRITE, document: true, audit: 'document.index' },
      schema: {
        summary: 'Convert, chunk, embed and index a document',
        description:
          'Runs on the indexing queue and answers when done (201), or at once with `async: true` (202).',
        tags,
        params: IdParamsSchema,
        body: Type.Union([IndexBodySchema, Type.Null()]),
        response: {
          201: described(
            'Indexed: the document, its chunk count and embedding model.',
            IndexResultSchema,
          ),
          202: Type.Object(
            { document: DocumentSchema },
            { description: 'Queued (`async: true`): the document, status `indexing`.' },
          ),
          ...errors(404, 409, 422, 502, 503, 504),
        },
      },
    },
    async (request, reply) => {
      const outcome = await knowledge.indexing.index(request.params.id, request.body ?? {});
      return outcome.done
        ? reply.status(201).send(outcome.result)
        : reply.status(202).send({ document: outcome.document });
    },
  );

  app.get(
    '/knowledge/commands',
    {
      config: READ,
      schema: {
        summary: 'Converter commands',
        tags,
        response: { 200: described('The converter commands.', CommandsSchema), ...errors() },
      },
    },
    () => ({ items: knowledge.commands.map(({ id, description }) => ({ id, description })) }),
  );

  app.get(
    '/knowledge/converter/status',
    {
      config: READ,
      schema: {
        summary: 'Whether the converter binary resolves',
        tags,
        response: {
          200: described('Whether the converter is installed, and where.', ConverterStatusSchema),
          ...errors(),
        },
      },
    },
    () => knowledge.converterStatus(),
  );
};
