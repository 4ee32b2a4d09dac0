/** Schemas of the ingest routes (upload, batch, text, URL): validation, types and OpenAPI. */
import { Type, type Static } from 'typebox';
import { DocumentSchema, MetadataSchema } from '../documents/documents.schemas.js';
import { MAX_CHARS } from '../indexing/indexing.schemas.js';

/** Characters of the upload's text fields at most. */
export const UPLOAD_FIELD_LIMITS = { projectId: 200, source: 100 } as const;

/**
 * The multipart form of an upload. For the OpenAPI document only: @fastify/multipart streams the
 * parts (upload.ts reads them, with these limits), so there is no parsed body to validate.
 */
export const UploadFormSchema = Type.Object({
  file: Type.String({
    format: 'binary',
    description:
      'The file (exactly one file part; any field name). Its content and name decide the format.',
  }),
  projectId: Type.Optional(
    Type.String({
      maxLength: UPLOAD_FIELD_LIMITS.projectId,
      description: 'Project to file the document under.',
    }),
  ),
  source: Type.Optional(
    Type.String({
      maxLength: UPLOAD_FIELD_LIMITS.source,
      default: 'upload',
      description: 'Where the document came from.',
    }),
  ),
});

const IngestFields = {
  projectId: Type.Optional(Type.String({ minLength: 1, maxLength: UPLOAD_FIELD_LIMITS.projectId })),
  source: Type.Optional(Type.String({ minLength: 1, maxLength: UPLOAD_FIELD_LIMITS.source })),
  metadata: Type.Optional(MetadataSchema),
  index: Type.Optional(
    Type.Boolean({
      description:
        'true: queue the document for indexing with the default settings (as `async: true` of the index route); the answer shows it `indexing`.',
    }),
  ),
};

export const TextBodySchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'The document name; `fileType` is `md` when it ends in `.md`, else `txt`.',
    }),
    text: Type.String({ description: 'The content, UTF-8; at most UPLOAD_MAX_BYTES bytes.' }),
    ...IngestFields,
  },
  { additionalProperties: false },
);
export type TextBody = Static<typeof TextBodySchema>;

export const UrlBodySchema = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 4000,
      description:
        'An http(s) URL the server fetches (at most 5 redirects; private, loopback and link-local addresses refused unless KNOWLEDGE_URL_ALLOW_PRIVATE=true). Its Content-Type decides the format.',
    }),
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Default: the last segment of the URL path (or its host).',
      }),
    ),
    ...IngestFields,
  },
  { additionalProperties: false },
);
export type UrlBody = Static<typeof UrlBodySchema>;

/** The index fields of the upload and batch forms (text, as form fields are). */
const FormIndexFields = {
  index: Type.Optional(
    Type.Enum(['true', 'false'], {
      description:
        '`true`: queue the document for indexing (as `async: true` of the index route); it is answered in status `indexing`.',
    }),
  ),
  commandId: Type.Optional(Type.String({ description: 'With `index`: converter command.' })),
  maxChars: Type.Optional(Type.Integer({ minimum: MAX_CHARS.minimum, maximum: MAX_CHARS.maximum })),
  overlapChars: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_CHARS.maximum - 1 })),
  metadata: Type.Optional(
    Type.String({ description: 'The document metadata as a JSON object (see the document).' }),
  ),
};

/** The multipart form of an upload with its optional fields (OpenAPI only). */
export const UploadFormWithIndexSchema = Type.Object({
  ...UploadFormSchema.properties,
  ...FormIndexFields,
});

/** The multipart form of a batch upload (OpenAPI only; parts are streamed). */
export const BatchFormSchema = Type.Object({
  file: Type.Array(Type.String({ format: 'binary' }), {
    description:
      'One or more file parts (any field name), at most KNOWLEDGE_BATCH_MAX_FILES; each becomes a document as if uploaded alone.',
  }),
  projectId: UploadFormSchema.properties.projectId,
  source: UploadFormSchema.properties.source,
  ...FormIndexFields,
});

export const BatchResultSchema = Type.Object({
  items: Type.Array(
    Type.Object({
      name: Type.String({ description: 'The file name as sent.' }),
      status: Type.Integer({
        description:
          'The HTTP status this file alone would have had: 201 created, 200 duplicate, 400, 413, …',
      }),
      document: Type.Optional(DocumentSchema),
      error: Type.Optional(
        Type.Object({ statusCode: Type.Integer(), code: Type.String(), message: Type.String() }),
      ),
    }),
    { description: 'One item per file part, in the order of the parts.' },
  ),
});
