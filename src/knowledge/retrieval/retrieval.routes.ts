/** POST …/knowledge/retrieve: search the indexed chunks. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { described } from '../../http/schemas.js';
import type { KnowledgeModule } from '../knowledge.module.js';
import { errors, projectsOf, READ, tags } from '../route-options.js';
import { RetrieveBodySchema, RetrieveResultSchema } from './retrieval.schemas.js';

export const retrievalRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  app.post(
    '/knowledge/retrieve',
    {
      config: READ,
      schema: {
        summary: 'Search indexed chunks (hybrid by default)',
        description:
          "Scores: `semantic` = cosine similarity in [-1, 1]; `keyword` = 0.1 + 0.9 × calibrated BM25 s/(s+16), in [0.1, 1); `hybrid` (default): K + 0.9 × coverage × (1 − K*) × max(0, cosine), in [0, 1), where K is the keyword evidence of the passage — its BM25 as a share r of the largest BM25 this query could score, K = T × x/(1+x) with x = (r/0.2)^3 (0 without a query word; T < 1 only for queries of common words) — K* the best K of the query, and coverage (0..1) how much of the query the embedding model understood (an identifier it has no vector for counts as not understood); every score of the query is then multiplied by S in [0.85, 1]: 1 when the best keyword match leads the next one by a tenth of what the query could score, less when the matches are alike (the words of the query are merely common to the topic), 0.85 without a match. A passage holding what the query asks for ranks by keywords; where keyword evidence is weak, meaning ranks; S never changes the order. Items are ordered by score; `minScore` filters before `topK` (without it, hits scoring ≤ 0 are dropped). Calibrated on real documents: hybrid `minScore` 0.77 kept 90 % of answerable questions and dropped 58 % of questions without an answer (docs/knowledge-base.md, minScore calibration). Reranked answers (`rerank`, default when RERANK_PROVIDER is set; `reranked: true`): the RERANK_CANDIDATES best hits of the mode (at least topK) are read with the query by a cross-encoder and ordered by its relevance, which is then each hit's `score`, in [0, 1] (the sigmoid of the model's logit); `minScore` applies to it, then `topK`. A failed or slow reranker leaves the fused answer (`reranked: false`).",
        tags,
        body: RetrieveBodySchema,
        response: { 200: described('The hits, best first.', RetrieveResultSchema), ...errors() },
      },
    },
    (request) => knowledge.retrieval.retrieve(request.body, projectsOf(request)),
  );
};
