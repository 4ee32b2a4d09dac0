/**
 * The one pino logger, credentials redacted: JSON lines for machines, or one readable line per
 * entry (pino-pretty) on a terminal. Fastify uses it for request logs.
 */
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { pino, type DestinationStream, type LevelWithSilent } from 'pino';
import pinoPretty from 'pino-pretty';
import type { Config } from './config.js';
import { redactText, redactUrl } from './http/redact.js';

/** Log paths that may carry secrets. */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'apiKey',
  '*.apiKey',
  '*.*.apiKey',
  'token',
  '*.token',
];

/**
 * A request as its log lines show it: Fastify's fields (method, url, version, host, client
 * address and port), the URL with credentials redacted (http/redact.ts): the reference console
 * sends its key in a query parameter.
 */
function requestSerializer(req: FastifyRequest) {
  const version = req.headers['accept-version'];
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    version: typeof version === 'string' ? version : undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: (req.socket as typeof req.socket | undefined)?.remotePort,
  };
}

/** pino's error serializer, with credentials redacted from the message and the stack. */
function errorSerializer(error: Error) {
  const out = pino.stdSerializers.err(error);
  if (typeof out.message === 'string') out.message = redactText(out.message);
  if (typeof out.stack === 'string') out.stack = redactText(out.stack);
  return out;
}

/** `auto`: readable lines when a person watches the terminal, JSON when a program reads them. */
export function chooseLogFormat(setting: Config['logFormat'], isTTY: boolean): 'pretty' | 'json' {
  if (setting !== 'auto') return setting;
  return isTTY ? 'pretty' : 'json';
}

/**
 * `stream`: where lines go (default stdout); `isTTY`: whether that is a terminal (decides `auto`).
 * Pretty lines are formatted in-process by pino-pretty's `prettyFactory` rather than its transport
 * (a worker thread): lines stay in order with what the CLI prints itself (the first key, the
 * progress bar), and none are lost when a command exits. Redaction happens before either format.
 */
export function createLogger(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  stream?: DestinationStream,
  isTTY: boolean = stream === undefined && process.stdout.isTTY,
): FastifyBaseLogger {
  const options = {
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Fastify merges these over its own (ours win): `req` and `err` lines never carry a credential.
    serializers: { req: requestSerializer, err: errorSerializer },
  };
  if (chooseLogFormat(config.logFormat, isTTY) === 'json')
    return pino(options, stream ?? bufferedStdout());
  const prettify = pinoPretty.prettyFactory({
    colorize: isTTY,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
  const out = stream ?? process.stdout;
  return pino(options, { write: (line: string) => out.write(prettify(line)) });
}

/** Bytes of JSON lines gathered before one write to stdout. */
const LOG_BUFFER_BYTES = 4096;
/** The longest a line waits in the buffer on a quiet server. */
const LOG_FLUSH_MS = 100;

/**
 * stdout through pino's asynchronous destination (sonic-boom), lines gathered into writes of
 * LOG_BUFFER_BYTES: one write per line (its own fs.write through libuv's thread pool) cost about
 * a fifth of the server's CPU on a small authenticated GET. A line waits at most
 * LOG_FLUSH_MS (an unref'd timer); pino flushes what is left synchronously when the process exits,
 * by `process.exit()` (graceful shutdown) or an uncaught error (Node emits `exit` then too).
 */
function bufferedStdout(): DestinationStream {
  return pino.destination({
    dest: 1,
    sync: false,
    minLength: LOG_BUFFER_BYTES,
    periodicFlush: LOG_FLUSH_MS,
  });
}

/**
 * The level for routes that are polled (health checks): their request lines appear only when
 * the server logs at `debug` or `trace`, never at `info`; warnings and errors still do.
 */
export function pollingLogLevel(level: string): LevelWithSilent {
  return level === 'info' ? 'warn' : (level as LevelWithSilent);
}
