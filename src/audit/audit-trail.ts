/**
 * The audit entries of the API's document routes, in one place: a route declares its action
 * (`config.audit`), and after it succeeds an entry is recorded per thing it acted on: the
 * `:id` it names, or the documents its answer created (an upload, each created file of a batch).
 * The key routes audit in their own transaction (auth/api-key.service.ts); refusals are
 * recorded by the guard.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requestActor } from './actor.js';
import type { AuditService } from './audit.service.js';

export type AuditAction =
  | 'document.create'
  | 'document.update'
  | 'document.index'
  | 'document.delete'
  | 'documents.reindex';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The audit action a successful request of this route records (audit/audit-trail.ts). */
    audit?: AuditAction;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A created document in an answer: `{id, …}` answered 201, or a batch item with status 201. */
function createdDocuments(payload: unknown, statusCode: number): Record<string, unknown>[] {
  if (!isRecord(payload)) return [];
  if (Array.isArray(payload.items)) {
    return payload.items.flatMap((item) =>
      isRecord(item) && item.status === 201 && isRecord(item.document) ? [item.document] : [],
    );
  }
  return statusCode === 201 && typeof payload.id === 'string' ? [payload] : [];
}

/** What a request of `action` tells about itself (never a document's content). */
function detailOf(
  action: AuditAction,
  request: FastifyRequest,
): Record<string, unknown> | undefined {
  const body = isRecord(request.body) ? request.body : {};
  if (action === 'document.update') {
    const fields = Object.keys(body);
    const metadata = isRecord(body.metadata) ? Object.keys(body.metadata) : undefined;
    return { fields, ...(metadata === undefined ? {} : { metadataKeys: metadata }) };
  }
  if (action === 'document.index' || action === 'documents.reindex') return { settings: body };
  return undefined;
}

/** Installs the hooks on the routes (of this scope) that declare an audit action. */
export function registerAuditTrail(app: FastifyInstance, audit: AuditService): void {
  app.addHook('onRoute', (route) => {
    const action = route.config?.audit;
    if (action === undefined) return;
    const created = new WeakMap<FastifyRequest, Record<string, unknown>[]>();
    const capture = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      if (action === 'document.create')
        created.set(request, createdDocuments(payload, reply.statusCode));
      return payload;
    };
    const record = async (request: FastifyRequest, reply: FastifyReply) => {
      if (reply.statusCode >= 400) return;
      const actor = requestActor(request);
      if (action === 'document.create') {
        for (const document of created.get(request) ?? []) {
          audit.record({
            actor,
            action,
            target: String(document.id),
            details: { name: document.name, projectId: document.projectId ?? null },
          });
        }
        return;
      }
      const params = isRecord(request.params) ? request.params : {};
      const target = typeof params.id === 'string' ? params.id : '*';
      const details = detailOf(action, request);
      audit.record({ actor, action, target, ...(details === undefined ? {} : { details }) });
    };
    route.preSerialization = [...asArray(route.preSerialization), capture];
    route.onResponse = [...asArray(route.onResponse), record];
  });
}

function asArray<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
