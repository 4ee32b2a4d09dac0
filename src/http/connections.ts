/**
 * Connection hygiene of the HTTP server: how long a client may take to send its headers, how long
 * a request body may stall, how long an idle keep-alive connection lives, and how many connections
 * one client address may hold. Slow uploads keep working: a body is timed out on inactivity, never
 * on its total time.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { rawErrorResponse } from './client-errors.js';

export type ConnectionLimits = Config['http'];

/**
 * Options for `http.createServer`: Node's own headers timeout, and no limit on a request's total
 * time. (The keep-alive timeout is Fastify's own option: it overwrites Node's.)
 */
export function serverOptions(limits: ConnectionLimits) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: 0,
    // How often Node looks for connections past the headers timeout; its default (30 s) would let
    // a stalled client live up to twice the timeout.
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
}

/** Does this request announce a body (which Node then reads after the headers)? */
function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * A body that makes no progress for `bodyIdleTimeoutMs` is dropped (408, then the connection is
 * closed). Once the body is in, the timer is off while the handler works (a synchronous index run
 * may take minutes); once the response is sent, Node's keep-alive timeout takes over.
 */
function timeBodies(server: Server, limits: ConnectionLimits, log: FastifyBaseLogger): void {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!announcesBody(req)) return;
    const socket = req.socket;
    const onTimeout = () => {
      log.info({ url: req.url?.split('?')[0] }, 'request body stalled: connection closed');
      if (!res.headersSent && socket.writable) {
        socket.end(rawErrorResponse('REQUEST_TIMEOUT', 'The request body stopped arriving.'));
        socket.destroySoon();
      } else {
        socket.destroy();
      }
    };
    // Node emits a socket timeout on the unfinished request first; a listener there keeps Node
    // from destroying the socket before the 408 is written.
    req.on('timeout', onTimeout);
    socket.setTimeout(limits.bodyIdleTimeoutMs);
    req.once('end', () => {
      // The handler may now work for minutes without a byte on the wire.
      if (!res.writableFinished) socket.setTimeout(0);
    });
    // Answered before the body is in (e.g. 401): Node reads and drops the rest, on our clock
    // rather than the keep-alive timeout it has just set.
    res.once('finish', () => {
      if (!req.complete) socket.setTimeout(limits.bodyIdleTimeoutMs);
    });
  });
}

/**
 * Whether a connection from this address comes from a trusted reverse proxy (TRUST_PROXY): its
 * connections carry many clients, whose own addresses only its X-Forwarded-For tells.
 */
export function trustedProxy(trust: ConnectionLimits['trustProxy']): (address: string) => boolean {
  if (trust === false || trust === 0) return () => false;
  if (trust === true || typeof trust === 'number') return () => true;
  const trusted = proxyAddr.compile(trust);
  return (address) => trusted(address, 0);
}

/**
 * At most `maxConnectionsPerClient` open connections per remote address (0: no cap), except from
 * a trusted proxy (whose clients the proxy caps). A connection over the cap gets a 429 and is
 * closed; should its request still be parsed before the close, the `onRequest` hook refuses it
 * too, so no handler runs for it.
 */
function capConnections(app: FastifyInstance, limits: ConnectionLimits): void {
  const max = limits.maxConnectionsPerClient;
  if (max === 0) return;
  const fromProxy = trustedProxy(limits.trustProxy);
  const open = new Map<string, number>();
  const refused = new WeakSet<Socket>();
  const message = `This client already has ${max} open connections; close some and retry.`;
  // Before Node's own listener, so the refusal is the first thing written on the socket.
  app.server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    if (socket.remoteAddress !== undefined && fromProxy(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      refused.add(socket);
      app.log.warn({ address, max }, 'too many connections from one client: refused');
      socket.end(rawErrorResponse('TOO_MANY_CONNECTIONS', message));
      socket.destroySoon();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
  // A callback hook: an async one costs a promise and a microtask hop on every request.
  app.addHook('onRequest', (request, _reply, done) => {
    done(
      refused.has(request.raw.socket) ? new AppError('TOO_MANY_CONNECTIONS', message) : undefined,
    );
  });
}

/** Installs the body inactivity timeout and the per-client connection cap on the app's server. */
export function guardConnections(app: FastifyInstance, limits: ConnectionLimits): void {
  timeBodies(app.server, limits, app.log);
  capConnections(app, limits);
}
