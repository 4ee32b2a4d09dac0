/**
 * The HTTP request families, `aps_http_requests_total` and `aps_http_request_duration_seconds`,
 * by method, route pattern (Fastify's `routeOptions.url`, never the raw URL: no ids or
 * credentials reach a label) and status class. They are counted here rather than through
 * prom-client's children: a child's `inc()` and `observe()` hash their labels on every call
 * (~0.85 µs the pair), where a series found once per route and status class is a few
 * additions. The text is written at scrape time, in the exposition format prom-client writes.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestCounter } from '../http/request-log.js';

/** Upper bounds (seconds) of the duration buckets: 1 ms to 30 s. */
export const REQUEST_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

/** Requests that matched no route share one series (their paths are the client's to choose). */
const UNMATCHED = 'unmatched';

/** The requests of one route (and method) and status class. */
class Series {
  count = 0;
  sum = 0;
  /** Per bucket, not cumulative (the text adds them up). */
  readonly buckets = new Float64Array(REQUEST_BUCKETS.length);

  observe(seconds: number): void {
    this.count += 1;
    this.sum += seconds;
    let i = 0;
    while (i < REQUEST_BUCKETS.length && seconds > (REQUEST_BUCKETS[i] ?? 0)) i += 1;
    if (i < REQUEST_BUCKETS.length) this.buckets[i] = (this.buckets[i] ?? 0) + 1;
  }
}

/** A route's series by status class (index 1 to 5: 1xx to 5xx). */
class RouteSeries {
  readonly byClass: (Series | undefined)[] = [];

  constructor(
    readonly method: string,
    readonly route: string,
  ) {}

  series(statusCode: number): Series {
    const index = Math.min(5, Math.max(1, Math.floor(statusCode / 100)));
    return (this.byClass[index] ??= new Series());
  }
}

/** `\`, `"` and line feeds escaped, as the exposition format wants label values. */
function label(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

export class RequestMetrics implements RequestCounter {
  /** Keyed by the route's config object (one per route and method); null: not counted. */
  private readonly routes = new Map<object, RouteSeries | null>();
  private readonly unmatched = new RouteSeries('other', UNMATCHED);

  /** @param excluded route patterns left out (`/metrics` itself). */
  constructor(private readonly excluded: ReadonlySet<string>) {}

  /** Counts a finished request: one map lookup and a few additions (RequestLog calls it). */
  record(request: FastifyRequest, reply: FastifyReply): void {
    const config = request.routeOptions.config as { url?: string; method?: unknown };
    let route = this.routes.get(config);
    if (route === undefined) {
      route = this.routeOf(config);
      this.routes.set(config, route);
    }
    route?.series(reply.statusCode).observe(reply.elapsedTime / 1000);
  }

  private routeOf(config: { url?: string; method?: unknown }): RouteSeries | null {
    if (config.url === undefined) return this.unmatched;
    if (this.excluded.has(config.url)) return null;
    const method = Array.isArray(config.method) ? config.method.join(',') : String(config.method);
    return new RouteSeries(method, config.url);
  }

  /** Every series that has counted a request, with its labels. */
  private all(): { labels: string; series: Series }[] {
    const found: { labels: string; series: Series }[] = [];
    for (const route of new Set([...this.routes.values(), this.unmatched])) {
      if (route === null) continue;
      route.byClass.forEach((series, index) => {
        if (series === undefined) return;
        const labels = `method="${label(route.method)}",route="${label(route.route)}",status_class="${String(index)}xx"`;
        found.push({ labels, series });
      });
    }
    return found;
  }

  /** The two families in the Prometheus text format. */
  text(): string {
    const series = this.all();
    const lines = [
      '# HELP aps_http_requests_total HTTP requests answered, by method, route pattern and status class.',
      '# TYPE aps_http_requests_total counter',
    ];
    for (const { labels, series: s } of series) {
      lines.push(`aps_http_requests_total{${labels}} ${String(s.count)}`);
    }
    lines.push(
      '',
      '# HELP aps_http_request_duration_seconds Time to answer an HTTP request (until its response was sent), by method, route pattern and status class.',
      '# TYPE aps_http_request_duration_seconds histogram',
    );
    for (const { labels, series: s } of series) {
      let cumulative = 0;
      REQUEST_BUCKETS.forEach((bound, i) => {
        cumulative += s.buckets[i] ?? 0;
        lines.push(
          `aps_http_request_duration_seconds_bucket{le="${String(bound)}",${labels}} ${String(cumulative)}`,
        );
      });
      lines.push(
        `aps_http_request_duration_seconds_bucket{le="+Inf",${labels}} ${String(s.count)}`,
        `aps_http_request_duration_seconds_sum{${labels}} ${String(s.sum)}`,
        `aps_http_request_duration_seconds_count{${labels}} ${String(s.count)}`,
      );
    }
    return lines.join('\n') + '\n';
  }
}
