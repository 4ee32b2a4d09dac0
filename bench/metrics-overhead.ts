/**
 * What counting a request in the metrics costs (src/metrics/), apart from the noise of a whole
 * request (`npm run bench:request` gives that, on a real server): `npm run bench:metrics`.
 *
 * `RequestMetrics.record`, the only work metrics add to a request (RequestLog calls it as the
 * response ends; no hook), on real Fastify requests and replies kept from finished requests of
 * three routes and statuses: the lookup of the route's series and the additions, per call. Beside
 * it, prom-client's labelled children doing the same (a counter and a histogram), for scale.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestMetrics } from '../src/metrics/request-metrics.js';

const log = (line: string) => process.stdout.write(line + '\n');

/** Finished requests and replies, as the hook gets them. */
async function captured(): Promise<[FastifyRequest, FastifyReply][]> {
  const kept: [FastifyRequest, FastifyReply][] = [];
  const server = Fastify();
  server.addHook('onResponse', (request, reply, done) => {
    kept.push([request, reply]);
    done();
  });
  server.get('/api/v1/knowledge/commands', () => ({ ok: true }));
  server.get('/api/v1/knowledge/documents/:id', (_request, reply) =>
    reply.status(404).send({ statusCode: 404 }),
  );
  for (const url of ['/api/v1/knowledge/commands', '/api/v1/knowledge/documents/1', '/nope']) {
    await server.inject({ method: 'GET', url });
  }
  await server.close();
  return kept;
}

const pairs = await captured();
if (pairs.length !== 3) throw new Error(`kept ${String(pairs.length)} requests, not 3`);
const calls = 2_000_000;
for (const round of [1, 2, 3]) {
  const metrics = new RequestMetrics(new Set());
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    const [request, reply] = pairs[i % pairs.length] ?? [];
    if (request !== undefined && reply !== undefined) metrics.record(request, reply);
  }
  const ns = ((performance.now() - start) * 1e6) / calls;
  log(`round ${round}: RequestMetrics.record ${ns.toFixed(0)} ns per request`);
}
// For comparison: prom-client's labelled children (a counter and a histogram), per request.
{
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status_class'] as const;
  const counter = new Counter({ name: 'c', help: 'c', labelNames, registers: [registry] });
  const histogram = new Histogram({ name: 'h', help: 'h', labelNames, registers: [registry] });
  const c = counter.labels('GET', '/api/v1/knowledge/commands', '2xx');
  const h = histogram.labels('GET', '/api/v1/knowledge/commands', '2xx');
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    c.inc();
    h.observe(0.0003);
  }
  const ns = ((performance.now() - start) * 1e6) / calls;
  log(`prom-client children (inc + observe): ${ns.toFixed(0)} ns per request`);
}
