/** Schemas of the retrieval route: validation, TypeScript types and OpenAPI in one place. */
import { Type, type Static } from 'typebox';
import { Nullable, PageEnd } from '../documents/documents.schemas.js';
import { FilterSchema } from '../filter/filter.schemas.js';

const HitSchema = Type.Object({
  id: Type.String(),
  score: Type.Number({
    description:
      "See the retrieval description: higher is better; ordered and filtered by it. When the answer is `reranked`, the reranker's relevance of the passage to the query, in [0, 1].",
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

export const RetrieveBodySchema = Type.Object(
  {
    query: Type.String({ maxLength: 4000 }),
    topK: Type.Integer({ minimum: 1, maximum: 100, default: 6 }),
    minScore: Type.Optional(
      Type.Number({
        minimum: -1,
        maximum: 1,
        description:
          'Drop hits scoring below it (before topK). Without it, hits scoring ≤ 0 (no evidence) and padding (hits whose evidence is under a tenth of the best hit’s) are dropped. In hybrid mode 0.77 is the calibrated threshold for "answer or nothing": on real documents it kept 90 % of answerable questions and dropped 58 % of unanswerable ones. When the answer is reranked, it applies to the reranker\'s relevance (in [0, 1]) instead of the fused score.',
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
    rerank: Type.Optional(
      Type.Boolean({
        description:
          "Have the reranker (RERANK_PROVIDER) reorder the best hits: it reads the query with each of the RERANK_CANDIDATES best hits (at least topK), orders them by its relevance in [0, 1], which becomes each hit's `score`, then applies `minScore` to it and cuts to `topK`. Default: true when a reranker is configured; true without one is a 400 (KNOWLEDGE_RERANK_UNAVAILABLE). If the reranker fails or times out, the answer keeps the fused order and scores (`reranked: false`).",
      }),
    ),
  },
  { additionalProperties: false },
);
export type RetrieveBody = Static<typeof RetrieveBodySchema>;

export const RetrieveResultSchema = Type.Object({
  query: Type.String(),
  topK: Type.Integer(),
  mode: Type.String(),
  reranked: Type.Boolean({
    description:
      'Whether the reranker ordered the items and made their scores (its relevance in [0, 1]); false: the fused order and scores (no reranker, `rerank: false`, or the reranker failed or timed out).',
  }),
  items: Type.Array(HitSchema),
});
