/**
 * The HTTP request families counted outside prom-client (src/metrics/request-metrics.ts): the
 * series per route pattern and status class, cumulative buckets, the excluded scrape; and the
 * metrics token's comparison.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { bearerMatches } from '../../../src/metrics/metrics.plugin.js';
import { RequestMetrics } from '../../../src/metrics/request-metrics.js';

/** A finished request as the onResponse hook sees it. */
function finished(config: object, statusCode: number, ms: number) {
  return [
    { routeOptions: { config } } as unknown as FastifyRequest,
    { statusCode, elapsedTime: ms } as unknown as FastifyReply,
  ] as const;
}

describe('RequestMetrics', () => {
  it('counts by method, route pattern and status class, buckets cumulative', () => {
    const metrics = new RequestMetrics(new Set(['/metrics']));
    const route = { url: '/api/v1/knowledge/documents/:id', method: 'GET' };
    metrics.record(...finished(route, 200, 0.5));
    metrics.record(...finished(route, 204, 3));
    metrics.record(...finished(route, 404, 40));
    metrics.record(...finished({ url: '/metrics', method: 'GET' }, 200, 1));
    metrics.record(...finished({}, 404, 0.2)); // no route matched
    const text = metrics.text();
    const ok = 'method="GET",route="/api/v1/knowledge/documents/:id",status_class="2xx"';
    expect(text).toContain(`aps_http_requests_total{${ok}} 2\n`);
    expect(text).toContain(`aps_http_request_duration_seconds_bucket{le="0.001",${ok}} 1\n`);
    expect(text).toContain(`aps_http_request_duration_seconds_bucket{le="0.0025",${ok}} 1\n`);
    expect(text).toContain(`aps_http_request_duration_seconds_bucket{le="0.005",${ok}} 2\n`);
    expect(text).toContain(`aps_http_request_duration_seconds_bucket{le="+Inf",${ok}} 2\n`);
    expect(text).toContain(`aps_http_request_duration_seconds_sum{${ok}} 0.0035\n`);
    expect(text).toContain(`aps_http_request_duration_seconds_count{${ok}} 2\n`);
    expect(text).toMatch(
      /aps_http_requests_total\{method="GET",route="[^"]+",status_class="4xx"\} 1/,
    );
    expect(text).toContain(
      'aps_http_requests_total{method="other",route="unmatched",status_class="4xx"} 1\n',
    );
    expect(text).not.toContain('route="/metrics"');
    expect(text).toMatch(/^# TYPE aps_http_requests_total counter$/m);
    expect(text).toMatch(/^# TYPE aps_http_request_duration_seconds histogram$/m);
  });

  it('writes the families (help and type) before any request', () => {
    const text = new RequestMetrics(new Set()).text();
    expect(text).toMatch(/^# HELP aps_http_requests_total /m);
    expect(text).not.toMatch(/^aps_/m);
  });
});

describe('bearerMatches', () => {
  const wanted = createHash('sha256').update('s'.repeat(32)).digest();
  it('accepts exactly `Bearer <token>`', () => {
    expect(bearerMatches(`Bearer ${'s'.repeat(32)}`, wanted)).toBe(true);
    expect(bearerMatches(`bearer ${'s'.repeat(32)}`, wanted)).toBe(true);
    for (const header of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      's'.repeat(32),
      `Bearer ${'s'.repeat(31)}`,
      `Bearer ${'s'.repeat(33)}`,
      `Basic ${'s'.repeat(32)}`,
      `Bearer ${'s'.repeat(32)} extra`,
    ]) {
      expect(bearerMatches(header, wanted), String(header)).toBe(false);
    }
  });
});
