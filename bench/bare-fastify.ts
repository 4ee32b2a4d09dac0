/**
 * The yardstick of bench/request-path.ts: a bare Fastify 5 server with one GET route answering a
 * JSON body of BODY_BYTES bytes (the size of the measured route's answer), on 127.0.0.1:PORT.
 * No logger, no hooks, no schema: what Node and Fastify cost at least.
 */
import Fastify from 'fastify';

const bytes = Number(process.env.BODY_BYTES ?? '64');
const port = Number(process.env.PORT ?? '0');
// {"items":"xxx…"}: 12 bytes of JSON around the filler.
const body = { items: 'x'.repeat(Math.max(0, bytes - 12)) };

const app = Fastify();
app.get('/hello', () => body);
app.get('/health', () => ({ status: 'ok' }));
await app.listen({ host: '127.0.0.1', port });
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
