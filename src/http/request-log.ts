/**
 * Request logs through Fastify's own extension point (its `logController` option): one `info`
 * line per request when its response ends — method, url, client address, status, response time
 * in ms, and the request id (`reqId`) — and the "incoming request" line only at `debug`.
 * Fastify's default writes both lines at `info`, each serialising the whole request or reply; on
 * a small authenticated GET those two lines were among the largest costs of the request path
 * (issue 13). The line is built from named fields only (no header, so no credential, reaches it),
 * so it is written through a child of the root logger without redaction: pino's redaction of the
 * wildcard paths copies every logged object and cost ~10 µs per line. Lines with an error go
 * through `request.log`, redacted. `request.log` carries the route's `logLevel` (health polls
 * stay out of `info`: logger.ts), which decides whether the line is written.
 */
import {
  LogController,
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { levels } from 'pino';

const INFO = levels.values.info ?? 30;

export class RequestLog extends LogController {
  /** The root logger without redaction: for the request line, which holds no secret. */
  private readonly lines: FastifyBaseLogger;

  constructor(root: FastifyBaseLogger) {
    super();
    this.lines = root.child({}, { redact: [] });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) {
      // Fastify's serializers: req → method, url, host, remote address and port; res → status.
      request.log.error(
        { req: request, res: reply, responseTime: reply.elapsedTime, err: error },
        'request errored',
      );
      return;
    }
    const level = levels.values[request.log.level]; // undefined: 'silent'
    if (level === undefined || level > INFO) return;
    // The fields of Fastify's req and res serializers, and the reqId its request logger binds.
    this.lines.info(
      {
        reqId: request.id,
        req: {
          method: request.method,
          url: request.url,
          version: request.headers['accept-version'],
          host: request.host,
          remoteAddress: request.ip,
          remotePort: request.socket.remotePort,
        },
        res: { statusCode: reply.statusCode },
        responseTime: reply.elapsedTime,
      },
      'request completed',
    );
  }
}
