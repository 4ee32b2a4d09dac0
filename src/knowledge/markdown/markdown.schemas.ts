/** Schemas of the markdown route (a page or chunk range of a document's converted markdown). */
import { Type, type Static } from 'typebox';

/** Characters one answer of the markdown route carries at most. */
export const MARKDOWN_MAX_CHARS = { default: 100_000, maximum: 1_000_000 } as const;

export const MarkdownQuerySchema = Type.Object(
  {
    fromPage: Type.Optional(
      Type.Integer({ minimum: 1, description: 'First page (1-based) of a paged document.' }),
    ),
    toPage: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'Last page, inclusive (default: fromPage; beyond the end: the last page).',
      }),
    ),
    fromChunk: Type.Optional(
      Type.Integer({ minimum: 0, description: 'First chunk (`chunkIndex` of a hit).' }),
    ),
    toChunk: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'Last chunk, inclusive (default: fromChunk; beyond the end: the last chunk).',
      }),
    ),
    maxChars: Type.Integer({
      minimum: 1,
      maximum: MARKDOWN_MAX_CHARS.maximum,
      default: MARKDOWN_MAX_CHARS.default,
      description: 'Cut the markdown to at most this many characters (at a line end).',
    }),
  },
  { additionalProperties: false },
);
export type MarkdownQuery = Static<typeof MarkdownQuerySchema>;

export const MarkdownResultSchema = Type.Object({
  documentId: Type.String(),
  name: Type.String(),
  version: Type.Integer({ description: 'The indexed version the markdown belongs to.' }),
  pages: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Pages of the document; null for unpaged formats.',
  }),
  chunkCount: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Chunks of the document; given with a chunk range, else null.',
  }),
  fromPage: Type.Union([Type.Integer(), Type.Null()]),
  toPage: Type.Union([Type.Integer(), Type.Null()]),
  fromChunk: Type.Union([Type.Integer(), Type.Null()]),
  toChunk: Type.Union([Type.Integer(), Type.Null()]),
  markdown: Type.String({
    description: 'The range of the converted markdown, page markers (`<!-- page: N -->`) included.',
  }),
  totalChars: Type.Integer({ description: 'Characters of the whole range before any cut.' }),
  truncated: Type.Boolean({ description: 'true: the range was cut to `maxChars`.' }),
});
export type MarkdownResult = Static<typeof MarkdownResultSchema>;
