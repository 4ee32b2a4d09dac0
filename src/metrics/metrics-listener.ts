/**
 * METRICS_PORT: a listener of its own that serves `GET /metrics` without a token, bound to
 * METRICS_HOST (loopback by default), so that a Prometheus on the same machine or network
 * namespace scrapes without credentials while the main port needs none of this. Plain
 * `node:http`: nothing of the app's hooks, limits or logs. Other paths answer 404 and other
 * methods 405, with the catalogue's error body.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { AppError, type ErrorCode } from '../errors.js';
import { METRICS_PATH, type Metrics } from './metrics.js';

export interface MetricsListener {
  /** e.g. `http://127.0.0.1:9464` */
  address: string;
  close(): Promise<void>;
}

function fail(res: ServerResponse, code: ErrorCode, message?: string): void {
  const body = new AppError(code, message).toBody();
  res.writeHead(body.statusCode, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** Starts the listener; rejects when the port cannot be bound (the server does not start). */
export async function listenMetrics(
  metrics: Metrics,
  options: { port: number; host: string },
  log: FastifyBaseLogger,
): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== METRICS_PATH) {
      fail(res, 'ROUTE_NOT_FOUND', `Route ${req.method ?? ''} ${path ?? ''} not found`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      fail(res, 'METHOD_NOT_ALLOWED');
      return;
    }
    metrics.text().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        log.error({ err: error }, 'collecting the metrics failed');
        fail(res, 'INTERNAL_ERROR');
      },
    );
  });
  // A scraper sends a small request at once: a slow one is not waited for.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => {
    log.error({ err: error }, 'the metrics listener failed');
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    address: `http://${host}:${String(port)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
