/**
 * `GET {prefix}/knowledge/events`: the document events (events.ts) as a `text/event-stream`, one
 * stream per client, optionally one project's. Each event is `event: <type>` with `data:` the
 * document record as the API returns it (`{id}` for a deleted one); a comment line every
 * `heartbeatMs` keeps proxies from closing an idle stream. Credentials go in headers as on every
 * route (a browser reads the stream with `fetch`, since EventSource cannot send headers).
 */
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../../errors.js';
import { DOCUMENT_EVENTS, type DocumentEvent } from './events.js';
import type { KnowledgeModule } from '../knowledge.module.js';
import { errors, projectsOf, READ, tags } from '../route-options.js';

const EventsQuerySchema = Type.Object({
  projectId: Type.Optional(
    Type.String({ minLength: 1, description: 'Only the events of this project’s documents.' }),
  ),
});

/** OpenAPI only: typed loosely, so that the handler may answer with a stream. */
const STREAM_RESPONSE: object = {
  description: 'The event stream (open until the client closes it).',
  content: { 'text/event-stream': { schema: { type: 'string' } } },
};

/** One event in the stream's wire format (data is one line of JSON). */
export function formatEvent(event: DocumentEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

export const eventsRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeModule }> = async (
  app,
  { knowledge },
) => {
  const { heartbeatMs, maxStreams } = knowledge.eventStreams;
  /** The open streams' closers: the server ends them as it shuts down (or it would wait). */
  const open = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const close of open) close();
    done();
  });

  app.get(
    '/knowledge/events',
    {
      config: { ...READ, stream: true },
      schema: {
        summary: 'Live document events (server-sent events)',
        description: `A \`text/event-stream\` of \`${DOCUMENT_EVENTS.join('`, `')}\`; \`data\` is the document record (\`{id}\` for \`document.deleted\`). Progress events come at most a few times a second per document; a comment line is sent every KNOWLEDGE_EVENTS_HEARTBEAT_MS. On PostgreSQL every instance's events reach every instance's streams.`,
        tags,
        querystring: EventsQuerySchema,
        response: {
          200: STREAM_RESPONSE,
          ...errors(503),
        },
      },
    },
    (request, reply) => {
      if (open.size >= maxStreams) {
        void reply.header('retry-after', '5');
        throw new AppError('OVERLOADED', `This instance has ${maxStreams} event streams open.`);
      }
      const { projectId } = request.query;
      // A key restricted to projects hears only theirs (a projectId outside: 403 by the guard).
      const projects = projectsOf(request);
      const stream = new PassThrough();
      const unsubscribe = knowledge.events.subscribe((event) => {
        if (
          (projectId === undefined || event.projectId === projectId) &&
          (projects === null || (event.projectId !== null && projects.includes(event.projectId)))
        ) {
          stream.write(formatEvent(event));
        }
      });
      const heartbeat = setInterval(() => stream.write(':\n\n'), heartbeatMs);
      heartbeat.unref();
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        open.delete(close);
        clearInterval(heartbeat);
        unsubscribe();
        stream.end();
      };
      open.add(close);
      reply.raw.once('close', close);
      stream.once('close', close);
      // The first bytes go out at once, so the client knows it is subscribed.
      stream.write('retry: 3000\n: subscribed\n\n');
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache, no-transform')
        .header('x-accel-buffering', 'no')
        .send(stream);
    },
  );
};
