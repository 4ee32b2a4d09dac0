/** Schemas of the indexing routes: validation, TypeScript types and OpenAPI in one place. */
import { Type, type Static } from 'typebox';
import { DocumentSchema } from '../documents/documents.schemas.js';

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

export const CommandsSchema = Type.Object({
  items: Type.Array(Type.Object({ id: Type.String(), description: Type.String() })),
});

export const ConverterStatusSchema = Type.Object({
  installed: Type.Boolean(),
  path: Type.Union([Type.String(), Type.Null()]),
});

export const ReindexBodySchema = Type.Object(
  {
    stale: Type.Literal(true, {
      description: 'Re-index the documents embedded with another model than the active one.',
    }),
    projectId: Type.Optional(Type.String({ minLength: 1, description: 'Only this project’s.' })),
  },
  { additionalProperties: false },
);
export type ReindexBody = Static<typeof ReindexBodySchema>;

export const ReindexResultSchema = Type.Object({
  queued: Type.Integer({ description: 'Runs queued (documents being indexed already are left).' }),
});
