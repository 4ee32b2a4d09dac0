/** The one pino logger: structured JSON, credentials redacted. Fastify uses it for request logs. */
import type { FastifyBaseLogger } from 'fastify';
import { pino, type DestinationStream } from 'pino';
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

export function createLogger(
  config: Pick<Config, 'logLevel'>,
  stream?: DestinationStream,
): FastifyBaseLogger {
  const options = {
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return stream === undefined ? pino(options) : pino(options, stream);
}
