/**
 * Load shedding over a real port: slow requests (bodies sent in part over raw sockets) hold their
 * slots; beyond MAX_REQUESTS_IN_FLIGHT a request gets 503 OVERLOADED with Retry-After while
 * /health answers; finished, failed and abandoned requests all give their slot back.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers.js';

const LIMIT = 3;
let t: TestApp;
let base: string;
let port: number;

beforeEach(async () => {
  t = await createTestApp({ env: { MAX_REQUESTS_IN_FLIGHT: String(LIMIT) } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = t.app.server.address();
  port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  base = `http://127.0.0.1:${port}`;
});
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await t.close();
});

const BODY = JSON.stringify({ query: 'anything at all', mode: 'keyword' });

/** A retrieval whose body is sent in part: it stays in flight until `finish` or `abort`. */
async function slowRetrieval(body = BODY) {
  const socket: Socket = connect(port, '127.0.0.1');
  sockets.add(socket);
  await new Promise<void>((ok, fail) => socket.once('connect', ok).once('error', fail));
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  const answered = new Promise<string>((ok) => {
    socket.once('close', () => {
      ok(received);
    });
  });
  socket.on('error', () => undefined);
  socket.write(
    `POST ${t.prefix}/knowledge/retrieve HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${t.key}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `connection: close\r\n\r\n${body.slice(0, 5)}`,
  );
  return {
    /** Sends the rest of the body; resolves with the status line's code. */
    async finish(): Promise<number> {
      socket.write(body.slice(5));
      const text = await answered;
      return Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1]);
    },
    abort(): void {
      socket.destroy();
    },
  };
}

const documents = () =>
  fetch(`${base}${t.prefix}/knowledge/documents`, {
    headers: { authorization: `Bearer ${t.key}` },
  });

/** Waits until the slow requests hold every slot; then a new API request is refused. */
async function full(): Promise<Response> {
  await expect.poll(() => t.app.loadShedding.inFlight, { timeout: 5000 }).toBe(LIMIT);
  const res = await documents();
  expect(res.status).toBe(503);
  return res;
}

/** The server sees a finished response's close, or a hang-up, a moment after the client. */
async function drained(): Promise<void> {
  await expect.poll(() => t.app.loadShedding.inFlight, { timeout: 5000 }).toBe(0);
}

describe('MAX_REQUESTS_IN_FLIGHT', () => {
  it('answers 503 OVERLOADED with Retry-After beyond the limit; /health still answers', async () => {
    const shed = t.app.loadShedding.shed;
    const slow = await Promise.all(Array.from({ length: LIMIT }, () => slowRetrieval()));
    const refused = await full();
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      statusCode: 503,
      code: 'OVERLOADED',
      message: expect.stringMatching(/Retry-After/) as unknown,
    });
    const retrieve = await fetch(`${base}${t.prefix}/knowledge/retrieve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: BODY,
    });
    expect(retrieve.status).toBe(503);
    // Counted for the metrics (aps_http_requests_shed_total).
    expect(t.app.loadShedding.shed).toBe(shed + 2);
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${base}/health`)).status).toBe(200);
    }
    // Every unprefixed /health* path is exempt (e.g. /health/ready of the readiness probe).
    // (Not started here, readiness itself answers 503 NOT_READY: what matters is it was not shed.)
    const ready = await fetch(`${base}/health/ready`);
    expect(
      ready.status === 200 || ((await ready.json()) as { code?: string }).code !== 'OVERLOADED',
    ).toBe(true);
    expect((await fetch(`${base}/docs/json`)).status).toBe(200);
    expect(await Promise.all(slow.map((s) => s.finish()))).toEqual([200, 200, 200]);
    await drained();
    expect((await documents()).status).toBe(200);
  });

  it('gives every slot back after success, an error and a client that hangs up', async () => {
    for (let round = 0; round < 3; round++) {
      const ok = await slowRetrieval();
      const bad = await slowRetrieval('{"query": "x", "mode": "keyword" ]');
      const gone = await slowRetrieval();
      await full();
      gone.abort();
      expect(await bad.finish()).toBe(400);
      expect(await ok.finish()).toBe(200);
      await drained();
      // All three slots are free again: LIMIT new slow requests are admitted, one more is not.
      const again = await Promise.all(Array.from({ length: LIMIT }, () => slowRetrieval()));
      await full();
      // A leaked slot would have refused one of them (503).
      expect(await Promise.all(again.map((s) => s.finish()))).toEqual([200, 200, 200]);
      await drained();
    }
    expect((await documents()).status).toBe(200);
  });
});
