/**
 * Request logs through Fastify's own extension point (its `logController` option): one line per
 * request when its response ends — method, url, client address, status, response time in ms, and
 * the request id (`reqId`) — and the "incoming request" line only at `debug`. Which requests
 * reach `info` is LOG_REQUESTS (`requestLineLevel`): by default those that change state, fail or
 * are slow; a quick successful read (GET, HEAD, OPTIONS: the console's and agents' polls) is
 * written at `debug`. Writing that line cost a fifth to a quarter of the server's CPU on a small
 * authenticated GET. Fastify's default writes both lines at `info`, each serialising
 * the whole request or reply. The line is built from named fields only (no header, so no
 * credential, reaches it), so it is written through a child of the root logger without
 * redaction: pino's redaction of the wildcard paths copies every logged object and cost ~10 µs
 * per line. Lines with an error go through `request.log`, redacted. `request.log` carries the
 * route's `logLevel` (health polls stay out of `info`: logger.ts), which decides whether the
 * line is written. The same call counts the request in the metrics when they are on
 * (`RequestCounter`, metrics/request-metrics.ts): Fastify calls it for every response anyway,
 * where an `onResponse` hook would add its hook runner to every request.
 */
import {
  LogController,
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { FastifyChildLoggerFactory } from 'fastify/types/logger.js';
import { levels, type Bindings, type ChildLoggerOptions } from 'pino';
import type { Config } from '../config.js';
import {
  LEVEL_NUMBERS,
  lineWriter,
  requestLineObject,
  type RequestLineFields,
  type RequestLineLevel,
  type RequestLineWriter,
} from './request-line.js';
import { redactUrl } from './redact.js';

/** A read that takes this long or longer is logged at `info` even when it succeeds. */
export const SLOW_REQUEST_MS = 1000;
/** The methods that only read (RFC 9110's safe methods the API answers). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The level of a finished request's line: `info` for every request (`all`), else only for a
 * request that changes state, fails (status ≥ 400) or is slow; a quick successful read is routine
 * (`debug`).
 */
export function requestLineLevel(
  mode: Config['logRequests'],
  method: string,
  statusCode: number,
  responseTimeMs: number,
): RequestLineLevel {
  const routine =
    mode === 'notable' &&
    statusCode < 400 &&
    SAFE_METHODS.has(method) &&
    responseTimeMs < SLOW_REQUEST_MS;
  return routine ? 'debug' : 'info';
}

/**
 * The logger of request lines: the root's, without redaction and without its `req` serializer
 * (the line's fields are already what that serializer writes, the URL redacted).
 */
export function lineLogger(root: FastifyBaseLogger): FastifyBaseLogger {
  const unset = { req: undefined } as unknown as Record<string, (value: unknown) => unknown>;
  return root.child({}, { redact: [], serializers: unset });
}

/** Counts finished requests (the metrics' HTTP families); called once per response. */
export interface RequestCounter {
  record(request: FastifyRequest, reply: FastifyReply): void;
}

export class RequestLog extends LogController {
  /** The root logger without redaction: for the request line, which holds no secret. */
  private readonly lines: FastifyBaseLogger;
  /** The line formatted in one pass (request-line.ts), when the logger is plain pino. */
  private readonly fast: RequestLineWriter | undefined;

  constructor(
    root: FastifyBaseLogger,
    private readonly mode: Config['logRequests'],
    /** The metrics' request counter; null when metrics are off. */
    private readonly counter: RequestCounter | null = null,
  ) {
    super();
    this.lines = lineLogger(root);
    this.fast = lineWriter(this.lines);
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    this.counter?.record(request, reply);
    if (error) {
      // Fastify's serializers: req → method, url, host, remote address and port; res → status.
      request.log.error(
        { req: request, res: reply, responseTime: reply.elapsedTime, err: error },
        'request errored',
      );
      return;
    }
    const threshold = levels.values[request.log.level]; // undefined: 'silent'
    if (threshold === undefined) return;
    const responseTime = reply.elapsedTime;
    const level = requestLineLevel(this.mode, request.method, reply.statusCode, responseTime);
    if (LEVEL_NUMBERS[level] < threshold) return;
    // The fields of Fastify's req and res serializers, and the reqId its request logger binds.
    const fields: RequestLineFields = {
      reqId: request.id,
      method: request.method,
      url: redactUrl(request.url),
      version: versionOf(request),
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket.remotePort,
      statusCode: reply.statusCode,
      responseTime,
    };
    if (this.fast !== undefined) this.fast(fields, level);
    else this.lines[level](requestLineObject(fields), 'request completed');
  }
}

/** The `accept-version` header, as Fastify's req serializer reports it. */
function versionOf(request: FastifyRequest): string | undefined {
  const version = request.headers['accept-version'];
  return typeof version === 'string' ? version : undefined;
}

/** Whether a line of `method`'s level is written at `level` (pino's numbers; silent writes none). */
function enabled(method: string, level: string): boolean {
  const line = levels.values[method];
  const threshold = levels.values[level];
  return line !== undefined && threshold !== undefined && line >= threshold;
}

/**
 * A request's `request.log`, which becomes a real pino child (bound to the request id) at its
 * first line. Most requests write nothing through it (their one line goes through RequestLog),
 * and pino's child() cost ~1.5 µs per request (its bindings serialised, redacted). Its
 * `level` is the child's without making it: the route's `logLevel`, else the parent's.
 */
export class LazyChildLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The pino child, made once. */
  get logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  /** Passes a line to the pino child's method of that level. */
  private write(
    method: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace',
    args: unknown[],
  ): void {
    // A line below the level needs no child (e.g. `incomingRequest` at debug on every request).
    if (this.made === undefined && !enabled(method, this.level)) return;
    const logger = this.logger;
    Reflect.apply(logger[method], logger, args);
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  /** pino's `silent` writes nothing. */
  silent(..._args: unknown[]): void {
    return undefined;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: each request's logger is a LazyChildLogger. */
export const lazyChildLogger: FastifyChildLoggerFactory = (logger, bindings, options) =>
  new LazyChildLogger(logger, bindings, options);
