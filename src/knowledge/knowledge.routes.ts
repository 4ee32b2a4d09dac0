/**
 * The Knowledge routes (all L0), one plugin per job folder. Thin: schema → service → response.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { documentsRoutes } from './documents/documents.routes.js';
import { eventsRoutes } from './events/events.routes.js';
import { indexingRoutes } from './indexing/indexing.routes.js';
import { ingestRoutes } from './ingest/ingest.routes.js';
import type { KnowledgeModule } from './knowledge.module.js';
import { markdownRoutes } from './markdown/markdown.routes.js';
import { retrievalRoutes } from './retrieval/retrieval.routes.js';

export const knowledgeRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  await app.register(eventsRoutes, { knowledge });
  await app.register(markdownRoutes, { knowledge });
  await app.register(documentsRoutes, { knowledge });
  await app.register(ingestRoutes, { knowledge });
  await app.register(indexingRoutes, { knowledge });
  await app.register(retrievalRoutes, { knowledge });
};
