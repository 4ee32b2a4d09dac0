/** GET {prefix}/audit: the audit trail, newest first (admin access, every project). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AUTHENTICATED_ERRORS, described, errorResponses } from '../http/schemas.js';
import { AuditPageSchema, AuditQuerySchema } from './audit.schemas.js';
import type { AuditService } from './audit.service.js';

export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditService }> = async (
  app,
  { audit },
) => {
  app.get(
    '/audit',
    {
      // It covers every project: a key restricted to some may not read it.
      config: { access: 'L0', mutates: false, admin: true, everyProject: true },
      schema: {
        summary: 'The audit trail: who did what, when, in which request (newest first)',
        tags: ['auth'],
        querystring: AuditQuerySchema,
        response: {
          200: described('One page of entries and the cursor of the next.', AuditPageSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS),
        },
      },
    },
    (request) => audit.list(request.query),
  );
};
