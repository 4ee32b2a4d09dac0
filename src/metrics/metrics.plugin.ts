/**
 * The metrics' part of the app: an `onError` hook counting database outages (it runs for errors
 * only), the load-shedding families, and — with METRICS_TOKEN — `GET /metrics` on the main
 * port, outside API_PREFIX and its guard: `Authorization: Bearer <METRICS_TOKEN>`, compared in
 * constant time; a missing or wrong token is 401 `AUTH_UNAUTHORIZED`. Requests are counted by
 * the app's RequestLog (http/request-log.ts), which Fastify calls for every response anyway.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { AppError } from '../errors.js';
import { pollingLogLevel } from '../logger.js';
import { registerShedding } from './collectors.js';
import { METRICS_PATH, type Metrics } from './metrics.js';

export interface MetricsPluginOptions {
  /** METRICS_TOKEN; null: no `/metrics` route on the main port (404 like any unknown path). */
  token: string | null;
}

/** SHA-256 of a text: equal lengths for `timingSafeEqual`, whatever was sent. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Whether `header` is `Bearer <token>`, compared in constant time. */
export function bearerMatches(header: string | undefined, wanted: Buffer): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  // A missing header is compared too, so that its answer takes as long as a wrong one's.
  return timingSafeEqual(digest(match?.[1] ?? ''), wanted) && match !== null;
}

export function registerMetricsPlugin(
  app: FastifyInstance,
  metrics: Metrics,
  options: MetricsPluginOptions,
): void {
  app.addHook('onError', (_request, _reply, error, done) => {
    if (isDatabaseUnavailable(error)) metrics.databaseError('unavailable');
    done();
  });
  registerShedding(metrics.registry, app.loadShedding);
  if (options.token === null) return;
  const wanted = digest(options.token);
  app.get(
    METRICS_PATH,
    // Scraped every few seconds: its line stays out of `info`, like the health checks'.
    { logLevel: pollingLogLevel(app.log.level), schema: { hide: true } },
    async (request, reply) => {
      if (!bearerMatches(request.headers.authorization, wanted)) {
        void reply.header('www-authenticate', 'Bearer');
        throw new AppError('AUTH_UNAUTHORIZED');
      }
      const text = await metrics.text();
      return reply.type(metrics.contentType).header('cache-control', 'no-store').send(text);
    },
  );
}
