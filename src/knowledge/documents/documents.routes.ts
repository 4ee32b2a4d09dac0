/** The document routes: list, projects, status, one document, its chunks, rename, delete. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { described } from '../../http/schemas.js';
import type { KnowledgeModule } from '../knowledge.module.js';
import { errors, projectsOf, READ, READ_DOCUMENT, tags, WRITE_DOCUMENT } from '../route-options.js';
import {
  ChunkSchema,
  DocumentPageSchema,
  DocumentSchema,
  IdParamsSchema,
  KnowledgeStatusSchema,
  ListQuerySchema,
  PatchDocumentSchema,
  ProjectsSchema,
} from './documents.schemas.js';

export const documentsRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  app.get(
    '/knowledge/documents',
    {
      config: READ,
      schema: {
        summary: 'List documents: filter, name search, order, cursor paging',
        tags,
        querystring: ListQuerySchema,
        response: { 200: DocumentPageSchema, ...errors() },
      },
    },
    async (request) => {
      const { stale, ...query } = request.query;
      const staleFor = stale === true ? { staleFor: knowledge.embedder.model } : {};
      return knowledge.documents.list({ ...query, ...staleFor, projects: projectsOf(request) });
    },
  );

  app.get(
    '/knowledge/projects',
    {
      config: READ,
      schema: {
        summary: 'The projects in use, with document and chunk counts',
        tags,
        response: { 200: ProjectsSchema, ...errors() },
      },
    },
    async (request) => ({ items: await knowledge.documents.projects(projectsOf(request)) }),
  );

  app.get(
    '/knowledge/status',
    {
      config: READ,
      schema: {
        summary:
          'Document counts, the active embedding model and how many documents need re-embedding',
        tags,
        response: {
          200: described('The counts and the model.', KnowledgeStatusSchema),
          ...errors(),
        },
      },
    },
    async () => {
      // Never waits for the embedder: the status is most needed while the provider is down.
      return {
        embeddingModel: knowledge.embedder.model,
        embeddingDimensions:
          knowledge.embedder.dimensions === 0 ? null : knowledge.embedder.dimensions,
        embeddingMemoryBytes: knowledge.embedder.residentBytes ?? null,
        servingModel: knowledge.models.state.serving,
        switch:
          knowledge.models.state.serving === knowledge.embedder.model
            ? null
            : { chunks: knowledge.models.state.chunks, covered: knowledge.models.state.covered },
        documents: await knowledge.documents.status(knowledge.embedder.model),
      };
    },
  );

  app.get(
    '/knowledge/documents/:id',
    {
      config: READ_DOCUMENT,
      schema: {
        summary: 'One document',
        tags,
        params: IdParamsSchema,
        response: { 200: described('The document.', DocumentSchema), ...errors(404) },
      },
    },
    (request) => knowledge.documents.get(request.params.id),
  );

  app.get(
    '/knowledge/documents/:id/chunks',
    {
      config: READ_DOCUMENT,
      schema: {
        summary: 'Chunks of a document in chunkIndex order',
        tags,
        params: IdParamsSchema,
        response: {
          200: Type.Object(
            { items: Type.Array(ChunkSchema) },
            { description: 'The chunks of the last successful index run.' },
          ),
          ...errors(404),
        },
      },
    },
    async (request) => ({ items: await knowledge.documents.chunks(request.params.id) }),
  );

  app.patch(
    '/knowledge/documents/:id',
    {
      config: { ...WRITE_DOCUMENT, audit: 'document.update' },
      schema: {
        summary: 'Rename a document and/or replace its metadata',
        description: '`metadata` replaces the whole object.',
        tags,
        params: IdParamsSchema,
        body: PatchDocumentSchema,
        response: { 200: described('The document.', DocumentSchema), ...errors(404, 503) },
      },
    },
    (request) => knowledge.documents.update(request.params.id, request.body),
  );

  app.delete(
    '/knowledge/documents/:id',
    {
      config: { ...WRITE_DOCUMENT, audit: 'document.delete' },
      schema: {
        summary: 'Delete a document with its chunks, vectors and files',
        tags,
        params: IdParamsSchema,
        response: {
          200: Type.Object({ ok: Type.Boolean() }, { description: 'Deleted.' }),
          ...errors(404, 503),
        },
      },
    },
    async (request) => {
      await knowledge.documents.delete(request.params.id);
      return { ok: true };
    },
  );
};
