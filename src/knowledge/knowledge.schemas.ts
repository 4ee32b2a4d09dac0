/** Schemas of the knowledge routes: validation, TypeScript types and OpenAPI in one place. */
import { Type, type Static } from 'typebox';

/** Orders of a document list: a field, descending with a leading `-`. */
export const DOCUMENT_ORDERS = [
  '-createdAt',
  'createdAt',
  '-updatedAt',
  'updatedAt',
  'name',
  '-name',
] as const;
export type DocumentOrder = (typeof DOCUMENT_ORDERS)[number];

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) =>
  Type.Union([schema, Type.Null()]);

const DocumentStatusSchema = Type.Enum(['uploaded', 'indexing', 'indexed', 'failed']);

/** Bounds of a document's metadata (the serialised size is checked by the service). */
export const METADATA_LIMITS = { keys: 64, bytes: 16 * 1024, keyLength: 200 } as const;

export const MetadataSchema = Type.Record(
  Type.String({ minLength: 1, maxLength: METADATA_LIMITS.keyLength }),
  Type.Union([
    Type.String(),
    Type.Number(),
    Type.Boolean(),
    Type.Array(Type.String(), { maxItems: 1000 }),
  ]),
  {
    maxProperties: METADATA_LIMITS.keys,
    description:
      'Free-form metadata of the document: at most 64 keys; values a string, a number, a boolean or an array of strings; at most 16 kB as JSON. Retrieval hits carry it as `documentMetadata`.',
  },
);
export type DocumentMetadata = Static<typeof MetadataSchema>;
export const PROGRESS_STAGES = [
  'queued',
  'converting',
  'chunking',
  'embedding',
  'committing',
] as const;
export type ProgressStage = (typeof PROGRESS_STAGES)[number];

export const ProgressSchema = Type.Object(
  {
    stage: Type.Enum([...PROGRESS_STAGES]),
    done: Type.Integer({ minimum: 0 }),
    total: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'Pages while converting, chunks while embedding; null when unknown.',
    }),
  },
  { description: 'The indexing run in progress; null unless the status is `indexing`.' },
);
export type Progress = Static<typeof ProgressSchema>;

export const DocumentSchema = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'The uploaded file name, sanitised.' }),
  fileType: Type.String({
    description: 'Detected from the content and the name, e.g. `html`, `pdf`.',
  }),
  mimeType: Type.String(),
  source: Type.String(),
  projectId: Nullable(Type.String()),
  version: Type.Integer({ description: 'Starts at 1; grows by one at each successful index.' }),
  status: DocumentStatusSchema,
  checksum: Type.String({ description: 'sha256 of the file, hex.' }),
  sizeBytes: Type.Integer(),
  filePath: Type.String({ description: 'Stored source file, relative to the data directory.' }),
  markdownPath: Nullable(
    Type.String({ description: 'Converted markdown, relative to the data directory.' }),
  ),
  converterCommand: Nullable(Type.String()),
  converterMeta: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description:
      'What ran: command, converter version, pages, timings, chunking, embedding model, warnings.',
  }),
  errorMessage: Nullable(Type.String()),
  embeddingModel: Nullable(Type.String()),
  metadata: MetadataSchema,
  progress: Type.Union([ProgressSchema, Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type KnowledgeDocument = Static<typeof DocumentSchema>;

/** The last page of a chunk's text, beside `page`. */
const PageEnd = Type.Union([Type.Integer(), Type.Null()], {
  description:
    'Last page (slide) the text is on: equal to page when on one page, larger when it spans pages (a heading at the foot of a page goes with its text on the next); null for unpaged formats.',
});

export const ChunkSchema = Type.Object({
  id: Type.String(),
  documentId: Type.String(),
  chunkIndex: Type.Integer(),
  sectionPath: Type.String({ description: 'Heading trail joined with ` > `.' }),
  page: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Page (slide) number; null for unpaged formats.',
  }),
  pageEnd: PageEnd,
  content: Type.String(),
  tokenEstimate: Type.Integer(),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  createdAt: Type.String({ format: 'date-time' }),
});
export type KnowledgeChunk = Static<typeof ChunkSchema>;

const HitSchema = Type.Object({
  id: Type.String(),
  score: Type.Number({
    description: 'See the retrieval description: higher is better; ordered and filtered by it.',
  }),
  model: Type.String({ description: 'Embedding model of the chunk.' }),
  documentId: Type.String(),
  documentName: Type.String(),
  projectId: Nullable(Type.String()),
  source: Type.String(),
  chunkIndex: Type.Integer(),
  sectionPath: Type.String(),
  page: Type.Union([Type.Integer(), Type.Null()]),
  pageEnd: PageEnd,
  content: Type.String(),
  highlights: Type.Array(
    Type.Object({ start: Type.Integer({ minimum: 0 }), end: Type.Integer({ minimum: 0 }) }),
    {
      description:
        'Where the query words occur in `content` after stemming, as the keyword index matches them ' +
        '(a query "running" marks "runs"; dropped stop words are not marked; CJK and Thai words as the ' +
        'segmenter cuts them): UTF-16 code unit offsets, `end` exclusive, sorted, non-overlapping, ' +
        'adjacent ranges merged. In every mode; `[]` when none occurs (a semantic match).',
    },
  ),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  documentMetadata: Type.Record(Type.String(), Type.Unknown(), {
    description: "The metadata of the hit's document.",
  }),
});
export type RetrievalHit = Static<typeof HitSchema>;

/** Described here; parsed and validated by filter/filter.ts (400 naming the bad part). */
const FILTER_DESCRIPTION =
  'Only documents matching this filter (applied before ranking). Document fields by name: `name`, `fileType`, `source`, `createdAt`; any other name is a metadata key (`metadata.<key>` always is one, e.g. `metadata.name`). A value means equality (a metadata array of strings: contains it); operators `$eq`, `$ne`, `$in`, `$nin`, `$gt`, `$gte`, `$lt`, `$lte` (a number, or an ISO date such as `2024-05-01` or `2024-05-01T12:00:00Z`), `$exists`; `$and` / `$or` take arrays of filters. E.g. `{"lang": "en", "year": {"$gte": 2020}, "fileType": {"$in": ["pdf", "md"]}}`. See the README for the full reference.';

export const FilterSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: FILTER_DESCRIPTION,
});

export const ListQuerySchema = Type.Object(
  {
    projectId: Type.Optional(Type.String({ minLength: 1 })),
    status: Type.Optional(DocumentStatusSchema),
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    stale: Type.Optional(
      Type.Boolean({
        description:
          'true: only documents embedded with another model than the active one (re-index them, e.g. `aps reindex --stale`).',
      }),
    ),
    filter: Type.Optional(
      Type.String({
        maxLength: 16_384,
        description: `The filter of retrieval as JSON text (URL-encoded). ${FILTER_DESCRIPTION}`,
      }),
    ),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Only documents whose name contains this (any case).',
      }),
    ),
    order: Type.Enum([...DOCUMENT_ORDERS], {
      default: '-createdAt',
      description: 'Sort field; a leading `-` sorts descending. Ties by id.',
    }),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description:
          'The `nextCursor` of the previous page (same order): each document is listed once, also while documents are added.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DocumentPageSchema = Type.Object(
  {
    items: Type.Array(DocumentSchema),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as `cursor` for the next page; null when this page is the last.',
    }),
  },
  { description: 'A page of documents in the requested order.' },
);

export const ProjectsSchema = Type.Object(
  {
    items: Type.Array(
      Type.Object({
        projectId: Type.Union([Type.String(), Type.Null()], {
          description: 'null: the documents uploaded without a project (listed first).',
        }),
        documentCount: Type.Integer(),
        chunkCount: Type.Integer({ description: 'Current chunks of its documents.' }),
        updatedAt: Type.String({
          format: 'date-time',
          description: 'The newest `updatedAt` of its documents.',
        }),
      }),
    ),
  },
  { description: 'The projects in use, by id.' },
);

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

export const IdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const MAX_CHARS = { minimum: 200, maximum: 8000, default: 1400 } as const;

export const IndexBodySchema = Type.Object(
  {
    commandId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Default: `auto`.' }),
    ),
    maxChars: Type.Optional(
      Type.Integer({
        minimum: MAX_CHARS.minimum,
        maximum: MAX_CHARS.maximum,
        description: 'Maximum characters per chunk (200..8000, default 1400).',
      }),
    ),
    overlapChars: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_CHARS.maximum - 1,
        description:
          'Characters shared by neighbouring chunks, 0 to maxChars − 1 (default 15 % of maxChars). At most maxChars/2 is applied; `converterMeta.chunking` records the requested and the applied value, and `converterMeta.warnings` says when they differ.',
      }),
    ),
    async: Type.Optional(Type.Boolean({ description: 'Answer 202 at once; poll the document.' })),
  },
  { additionalProperties: false },
);
export type IndexBody = Static<typeof IndexBodySchema>;

export const IndexResultSchema = Type.Object({
  document: DocumentSchema,
  chunkCount: Type.Integer(),
  embeddingModel: Type.String(),
});

export const RetrieveBodySchema = Type.Object(
  {
    query: Type.String({ maxLength: 4000 }),
    topK: Type.Integer({ minimum: 1, maximum: 100, default: 6 }),
    minScore: Type.Optional(
      Type.Number({
        minimum: -1,
        maximum: 1,
        description:
          'Drop hits scoring below it (before topK). Without it, only hits scoring ≤ 0 (no evidence) are dropped. In hybrid mode 0.77 is the calibrated threshold for "answer or nothing": on real documents it kept 90 % of answerable questions and dropped 58 % of unanswerable ones.',
      }),
    ),
    projectId: Type.Optional(Type.String({ minLength: 1 })),
    documentId: Type.Optional(
      Type.Union(
        [
          Type.String({ minLength: 1 }),
          Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 100 }),
        ],
        { description: 'One document id, or an array of 1..100: only their chunks.' },
      ),
    ),
    filter: Type.Optional(FilterSchema),
    mode: Type.Enum(['hybrid', 'semantic', 'keyword'], { default: 'hybrid' }),
  },
  { additionalProperties: false },
);
export type RetrieveBody = Static<typeof RetrieveBodySchema>;

export const RetrieveResultSchema = Type.Object({
  query: Type.String(),
  topK: Type.Integer(),
  mode: Type.String(),
  items: Type.Array(HitSchema),
});

export const CommandsSchema = Type.Object({
  items: Type.Array(Type.Object({ id: Type.String(), description: Type.String() })),
});

export const ConverterStatusSchema = Type.Object({
  installed: Type.Boolean(),
  path: Type.Union([Type.String(), Type.Null()]),
});

export const KnowledgeStatusSchema = Type.Object({
  embeddingModel: Type.String({ description: 'The active embedding model.' }),
  embeddingDimensions: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Null until a remote provider has answered once.',
  }),
  documents: Type.Object({
    total: Type.Integer(),
    uploaded: Type.Integer(),
    indexing: Type.Integer(),
    indexed: Type.Integer(),
    failed: Type.Integer(),
    stale: Type.Integer({
      description:
        'Documents whose chunks were embedded with another model: semantic search skips them, keyword search still finds them.',
    }),
  }),
});

// --- Document metadata, one-step, batch, text and URL ingest

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

export const PatchDocumentSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Renames.' })),
    metadata: Type.Optional(MetadataSchema),
  },
  { additionalProperties: false },
);
export type PatchDocumentBody = Static<typeof PatchDocumentSchema>;

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
