/** Schemas of the document routes: validation, TypeScript types and OpenAPI in one place. */
import { Type, type Static } from 'typebox';
import { FILTER_DESCRIPTION } from '../filter/filter.schemas.js';

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

/** A string schema, or null. */
export const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) =>
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

/** The last page of a chunk's text, beside `page` (chunks and retrieval hits). */
export const PageEnd = Type.Union([Type.Integer(), Type.Null()], {
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

export const IdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const KnowledgeStatusSchema = Type.Object({
  embeddingModel: Type.String({ description: 'The active embedding model.' }),
  servingModel: Type.String({
    description:
      'The model whose vectors answer semantic searches: the active one, or while a switch is under way the one every chunk still has vectors of (re-index the stale documents: `POST …/knowledge/documents/reindex`).',
  }),
  switch: Type.Union(
    [
      Type.Object({
        chunks: Type.Integer({ description: 'Current chunks of searchable documents.' }),
        covered: Type.Integer({ description: 'Of them, those with a vector of the active model.' }),
      }),
      Type.Null(),
    ],
    {
      description: 'The progress of a change of the embedding model; null when none is under way.',
    },
  ),
  embeddingDimensions: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Null until a remote provider has answered once.',
  }),
  embeddingMemoryBytes: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'What an in-process model (`transformers`) added to the server’s resident memory when it loaded (one copy per process); null for other providers and until it has loaded.',
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

export const PatchDocumentSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Renames.' })),
    metadata: Type.Optional(MetadataSchema),
  },
  { additionalProperties: false },
);
export type PatchDocumentBody = Static<typeof PatchDocumentSchema>;
