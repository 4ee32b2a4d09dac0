/**
 * The one pino logger, credentials redacted: JSON lines for machines, or one readable line per
 * entry (pino-pretty) on a terminal. Fastify uses it for request logs.
 */
import type { FastifyBaseLogger } from 'fastify';
import { pino, type DestinationStream, type LevelWithSilent } from 'pino';
import pinoPretty from 'pino-pretty';
import type { Config } from './config.js';

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
