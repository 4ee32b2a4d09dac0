/** The Knowledge routes (all L0). Thin: schema → service → response. */
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { toErrorBody } from '../http/errors.js';
import { AUTHENTICATED_ERRORS, described, errorResponses } from '../http/schemas.js';
import type { KnowledgeModule } from './knowledge.module.js';
import {
  BatchFormSchema,
  BatchResultSchema,
  ChunkSchema,
  CommandsSchema,
  ConverterStatusSchema,
  DocumentSchema,
  IdParamsSchema,
  IndexBodySchema,
  IndexResultSchema,
  KnowledgeStatusSchema,
  ListQuerySchema,
  DocumentPageSchema,
  ProjectsSchema,
  PatchDocumentSchema,
  RetrieveBodySchema,
  RetrieveResultSchema,
  TextBodySchema,
  UploadFormWithIndexSchema,
  UrlBodySchema,
} from './knowledge.schemas.js';
import { discardAll, readBatch, readUpload } from './ingest/upload.js';
import { eventsRoutes } from './events/events.routes.js';
import { markdownRoutes } from './markdown/markdown.routes.js';

const READ = { access: 'L0', mutates: false } as const;
const WRITE = { access: 'L0', mutates: true } as const;
const tags = ['knowledge'];
const errors = (...extra: number[]) => errorResponses(...AUTHENTICATED_ERRORS, ...extra);

export const knowledgeRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  await app.register(eventsRoutes, { knowledge });
  await app.register(markdownRoutes, { knowledge });

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
      return knowledge.documents.list({ ...query, ...staleFor });
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
    async () => ({ items: await knowledge.documents.projects() }),
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
        documents: await knowledge.documents.status(knowledge.embedder.model),
      };
    },
  );

  app.get(
    '/knowledge/documents/:id',
    {
      config: READ,
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
      config: READ,
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

  // Multipart only where uploads live: the plugin adds an async onRequest and onResponse hook (a
  // promise and a 'close' listener per request) to every route of the scope it is registered in.
  await app.register(async (uploads) => {
    await uploads.register(multipart, {
      limits: {
        fileSize: knowledge.uploadMaxBytes,
        files: 2,
        fields: 20,
        fieldSize: 64 * 1024,
        parts: 30,
      },
    });

    uploads.post(
      '/knowledge/documents/upload',
      {
        config: {
          ...WRITE,
          // The form is documented, not validated: the handler streams the parts itself.
          swaggerTransform: ({ schema, url }) => ({
            schema: { ...schema, body: UploadFormWithIndexSchema },
            url,
          }),
        },
        schema: {
          summary: 'Upload one file',
          description:
            'Streams the file to disk. 201 with the new document; 200 with the existing one when the same bytes were uploaded to the same project before. With `index=true` the document is queued for indexing (as `async: true` of the index route, with the optional `commandId`, `maxChars`, `overlapChars`) and answered in status `indexing`; a duplicate being indexed already is answered as it is. Invalid fields → 400 before anything is stored.',
          tags,
          consumes: ['multipart/form-data'],
          response: {
            200: described(
              'The same file was uploaded to this project before: that document.',
              DocumentSchema,
            ),
            201: described(
              'The new document, status `uploaded` (`indexing` with `index=true`).',
              DocumentSchema,
            ),
            ...errors(413, 415, 503),
          },
        },
      },
      async (request, reply) => {
        const { input, fields } = await readUpload(
          request,
          knowledge.storage,
          knowledge.uploadMaxBytes,
        );
        let options;
        try {
          options = knowledge.ingest.formOptions(fields);
        } catch (error) {
          await input.file.discard();
          throw error;
        }
        const { document, created } = await knowledge.ingest.add(
          { ...input, ...(options.metadata === undefined ? {} : { metadata: options.metadata }) },
          options.index,
        );
        return reply.status(created ? 201 : 200).send(document);
      },
    );

    uploads.post(
      '/knowledge/documents/batch',
      {
        config: {
          ...WRITE,
          swaggerTransform: ({ schema, url }) => ({
            schema: { ...schema, body: BatchFormSchema },
            url,
          }),
        },
        schema: {
          summary: 'Upload several files',
          description:
            'Each file part becomes a document as if uploaded alone, with the same optional fields (`projectId`, `source`, `metadata`, `index`, `commandId`, `maxChars`, `overlapChars`) applied to each. 200 with one item per file, in part order: `status` is what the file alone would have answered (201, 200 duplicate, 400, 413, …), with `document` or `error`. One bad file never fails the others, and nothing of a refused file is kept. Invalid fields → 400 for the whole batch, before anything is stored.',
          tags,
          consumes: ['multipart/form-data'],
          response: {
            200: described('One item per file part.', BatchResultSchema),
            ...errors(413, 415, 503),
          },
        },
      },
      async (request) => {
        const { parts, fields } = await readBatch(
          request,
          knowledge.storage,
          knowledge.uploadMaxBytes,
          knowledge.batchMaxFiles,
        );
        let options;
        try {
          options = knowledge.ingest.formOptions(fields);
        } catch (error) {
          await discardAll(parts);
          throw error;
        }
        const outcomes = await knowledge.ingest.addBatch(parts, options);
        return {
          items: outcomes.map(({ name, result, error }) => {
            if (result !== undefined) {
              return { name, status: result.created ? 201 : 200, document: result.document };
            }
            const body = toErrorBody(error);
            return { name, status: body.statusCode, error: body };
          }),
        };
      },
    );
  });

  app.post(
    '/knowledge/documents/text',
    {
      config: WRITE,
      // The text may be as large as an upload; JSON escaping may double it.
      bodyLimit: knowledge.uploadMaxBytes * 2 + 64 * 1024,
      schema: {
        summary: 'Create a document from text',
        description:
          '`fileType` is `md` when the name ends in `.md`, else `txt`; `source` defaults to `text`. De-duplicated by content as uploads are (200 with the existing document).',
        tags,
        body: TextBodySchema,
        response: {
          200: described('The same text was added to this project before.', DocumentSchema),
          201: described(
            'The new document, status `uploaded` (`indexing` with `index: true`).',
            DocumentSchema,
          ),
          ...errors(413, 503),
        },
      },
    },
    async (request, reply) => {
      const { document, created } = await knowledge.ingest.addText(request.body);
      return reply.status(created ? 201 : 200).send(document);
    },
  );

  app.post(
    '/knowledge/documents/url',
    {
      config: WRITE,
      schema: {
        summary: 'Create a document from a URL the server fetches',
        description:
          'http/https only; at most 5 redirects, each checked again; the whole fetch within KNOWLEDGE_URL_TIMEOUT_MS and UPLOAD_MAX_BYTES. Addresses outside the public unicast ranges (private, loopback, link-local, unique-local, shared, multicast…) are refused with 403 unless KNOWLEDGE_URL_ALLOW_PRIVATE=true, checked on the address actually connected to. The Content-Type decides a text format (html, markdown, text, csv, json…); others are recognised by their content. `source` defaults to the URL. De-duplicated by content as uploads are.',
        tags,
        body: UrlBodySchema,
        response: {
          200: described('The same content was added to this project before.', DocumentSchema),
          201: described(
            'The new document, status `uploaded` (`indexing` with `index: true`).',
            DocumentSchema,
          ),
          ...errors(403, 413, 502, 503),
        },
      },
    },
    async (request, reply) => {
      const { document, created } = await knowledge.ingest.addUrl(request.body);
      return reply.status(created ? 201 : 200).send(document);
    },
  );

  app.patch(
    '/knowledge/documents/:id',
    {
      config: WRITE,
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

  app.post(
    '/knowledge/documents/:id/index',
    {
      config: WRITE,
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

  app.delete(
    '/knowledge/documents/:id',
    {
      config: WRITE,
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

  app.post(
    '/knowledge/retrieve',
    {
      config: READ,
      schema: {
        summary: 'Search indexed chunks (hybrid by default)',
        description:
          'Scores: `semantic` = cosine similarity in [-1, 1]; `keyword` = 0.1 + 0.9 × calibrated BM25 s/(s+16), in [0.1, 1); `hybrid` (default): K + 0.9 × coverage × (1 − K*) × max(0, cosine), in [0, 1), where K is the keyword evidence of the passage — its BM25 as a share r of the largest BM25 this query could score, K = T × x/(1+x) with x = (r/0.2)^3 (0 without a query word; T < 1 only for queries of common words) — K* the best K of the query, and coverage (0..1) how much of the query the embedding model understood (an identifier it has no vector for counts as not understood); every score of the query is then multiplied by S in [0.85, 1]: 1 when the best keyword match leads the next one by a tenth of what the query could score, less when the matches are alike (the words of the query are merely common to the topic), 0.85 without a match. A passage holding what the query asks for ranks by keywords; where keyword evidence is weak, meaning ranks; S never changes the order. Items are ordered by score; `minScore` filters before `topK` (without it, hits scoring ≤ 0 are dropped). Calibrated on real documents: hybrid `minScore` 0.77 kept 90 % of answerable questions and dropped 58 % of questions without an answer (README, minScore calibration).',
        tags,
        body: RetrieveBodySchema,
        response: { 200: described('The hits, best first.', RetrieveResultSchema), ...errors() },
      },
    },
    (request) => knowledge.retrieval.retrieve(request.body),
  );
};
