/**
 * Request logs through Fastify's own extension point (its `logController` option): one `info`
 * line per request when its response ends — method, url, client address, status, response time
 * in ms, and the request id (`reqId`, bound to `request.log`) — and the "incoming request" line
 * only at `debug`. Fastify's default writes both lines at `info`, each serialising the whole
 * request or reply; on a small authenticated GET those two lines were among the largest costs of
 * the request path (issue 13). Fastify's serializers pick the fields (no header, so no
 * credential, reaches a request line). `request.log` carries the route's `logLevel` (health
 * polls stay out of `info`: logger.ts).
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

export class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    // Fastify's serializers: req → method, url, host, remote address and port; res → status.
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) request.log.error({ ...line, err: error }, 'request errored');
    else request.log.info(line, 'request completed');
  }
}
