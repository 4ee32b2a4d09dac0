/** The ingest routes: upload (one step), batch, text and URL. */
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { toErrorBody } from '../../http/errors.js';
import { described } from '../../http/schemas.js';
import { DocumentSchema } from '../documents/documents.schemas.js';
import type { KnowledgeModule } from '../knowledge.module.js';
import { errors, projectsOf, tags, WRITE } from '../route-options.js';
import {
  BatchFormSchema,
  BatchResultSchema,
  TextBodySchema,
  UploadFormWithIndexSchema,
  UrlBodySchema,
} from './ingest.schemas.js';
import { discardAll, readBatch, readUpload } from './upload.js';

export const ingestRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
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
          audit: 'document.create',
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
          {
            ...input,
            ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
            projects: projectsOf(request),
          },
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
          audit: 'document.create',
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
        const outcomes = await knowledge.ingest.addBatch(parts, options, projectsOf(request));
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
      config: { ...WRITE, audit: 'document.create' },
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
      const { document, created } = await knowledge.ingest.addText(
        request.body,
        projectsOf(request),
      );
      return reply.status(created ? 201 : 200).send(document);
    },
  );

  app.post(
    '/knowledge/documents/url',
    {
      config: { ...WRITE, audit: 'document.create' },
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
      const { document, created } = await knowledge.ingest.addUrl(
        request.body,
        projectsOf(request),
      );
      return reply.status(created ? 201 : 200).send(document);
    },
  );
};
