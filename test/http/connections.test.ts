/**
 * Slow and malformed clients, over raw sockets against a listening server: timeouts close stalled
 * clients (with a catalogue 408 where a response is still possible), slow uploads that keep sending
 * still succeed, one address cannot hold more than its share of connections, and every parser or
 * router error answers `{statusCode, code, message}` without echoing the request.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers.js';
import { multipart } from '../knowledge/helpers.js';

let t: TestApp | undefined;
let port = 0;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await t?.close();
  t = undefined;
});

async function start(env: Record<string, string> = {}) {
  t = await createTestApp({ env });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  port = typeof address === 'object' && address !== null ? address.port : 0;
  return t;
}

interface Outcome {
  /** Everything the server sent. */
  response: string;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
}

/** Opens a connection, writes each part (a number waits that many ms), and collects the reply. */
function converse(parts: (string | Buffer | number)[], giveUpMs = 20_000): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    let response = '';
    socket.on('data', (data) => {
      response += data.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      resolve({ response, closedAfterMs: Date.now() - started });
    });
    setTimeout(() => {
      reject(new Error(`still open after ${giveUpMs} ms`));
    }, giveUpMs).unref();
    void (async () => {
      await new Promise((r) => socket.once('connect', r));
      for (const part of parts) {
        if (socket.destroyed) return;
        if (typeof part === 'number') await new Promise((r) => setTimeout(r, part));
        else socket.write(part);
      }
    })();
  });
}

function statusAndBody(response: string): { status: number; body: Record<string, unknown> } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  return { status, body: JSON.parse(body) as Record<string, unknown> };
}

const FAST = {
  HTTP_HEADERS_TIMEOUT_MS: '600',
  HTTP_BODY_IDLE_TIMEOUT_MS: '600',
  HTTP_KEEP_ALIVE_TIMEOUT_MS: '600',
};

describe('slow clients', () => {
  it('an unfinished body is dropped after the idle timeout, with or without a key', async () => {
    const { prefix, key } = await start(FAST);
    const head = (auth: string) =>
      `POST ${prefix}/knowledge/retrieve HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${auth}content-length: 100\r\n\r\n{"query":"`;
    const results = await Promise.all([
      ...Array.from({ length: 20 }, () => converse([head('')])),
      converse([head(`x-api-key: ${key}\r\n`)]),
    ]);
    for (const r of results) expect(r.closedAfterMs).toBeLessThan(5_000);
    // With a key the route waits for its body: the stall is answered 408 from the catalogue.
    const authed = statusAndBody(results.at(-1)?.response ?? '');
    expect(authed.status).toBe(408);
    expect(authed.body).toEqual({
      statusCode: 408,
      code: 'REQUEST_TIMEOUT',
      message: expect.any(String),
    });
  });

  it('a client that never finishes its headers gets 408 and is disconnected', async () => {
    await start(FAST);
    const idle = await converse([]);
    const trickle = await converse([
      'GET /health HTTP/1.1\r\n',
      ...Array.from({ length: 40 }, () => [100, 'x-a: b\r\n']).flat(),
    ]);
    for (const r of [idle, trickle]) {
      expect(r.closedAfterMs).toBeLessThan(5_000);
    }
    const { status, body } = statusAndBody(trickle.response);
    expect(status).toBe(408);
    expect(body.code).toBe('REQUEST_TIMEOUT');
  });

  it('an upload that keeps sending slowly succeeds, however long it takes in total', async () => {
    const { prefix, key } = await start(FAST);
    const { payload, headers } = multipart([
      {
        name: 'file',
        filename: 'slow.md',
        content: Buffer.from('# Slow\n\n' + 'words '.repeat(400)),
      },
    ]);
    const slices: (Buffer | number)[] = [];
    for (let i = 0; i < payload.length; i += 160) slices.push(200, payload.subarray(i, i + 160));
    expect(slices.length / 2).toBeGreaterThan(10); // > 2 s in total, > 3 × every timeout
    const head =
      `POST ${prefix}/knowledge/documents/upload HTTP/1.1\r\nhost: x\r\nx-api-key: ${key}\r\n` +
      `content-type: ${headers['content-type']}\r\ncontent-length: ${payload.length}\r\nconnection: close\r\n\r\n`;
    const outcome = await converse([head, ...slices]);
    const { status, body } = statusAndBody(outcome.response);
    expect(status).toBe(201);
    expect(body.name).toBe('slow.md');
  });

  it('an idle keep-alive connection is closed after its timeout', async () => {
    await start(FAST);
    const r = await converse(['GET /health HTTP/1.1\r\nhost: x\r\n\r\n']);
    expect(r.response).toMatch(/^HTTP\/1\.1 200/);
    expect(r.closedAfterMs).toBeLessThan(5_000);
  });
});

describe('connections per client address', () => {
  it('refuses connections over the cap with 429 and accepts again once one closes', async () => {
    await start({ MAX_CONNECTIONS_PER_CLIENT: '5' });
    const held = Array.from({ length: 5 }, () => connect(port, '127.0.0.1'));
    sockets.push(...held);
    await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))));
    const refused = await converse(['GET /health HTTP/1.1\r\nhost: x\r\n\r\n']);
    const { status, body } = statusAndBody(refused.response);
    expect(status).toBe(429);
    expect(body).toEqual({
      statusCode: 429,
      code: 'TOO_MANY_CONNECTIONS',
      message: expect.any(String),
    });
    held[0]?.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const accepted = await converse([
      'GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n',
    ]);
    expect(accepted.response).toMatch(/^HTTP\/1\.1 200/);
  });
});

describe('behind a reverse proxy (TRUST_PROXY)', () => {
  const forwarded = (address: string) =>
    `GET /api/v1/knowledge/commands HTTP/1.1\r\nhost: x\r\nx-forwarded-for: ${address}\r\n` +
    `connection: close\r\n\r\n`;
  const loggedAddresses = (app: TestApp) =>
    app.logs.lines
      .map((l) => JSON.parse(l) as { req?: { url?: string; remoteAddress?: string } })
      .filter((l) => l.req?.url === '/api/v1/knowledge/commands')
      .map((l) => l.req?.remoteAddress);

  it('takes the client address from X-Forwarded-For and does not cap the proxy', async () => {
    const app = await start({
      TRUST_PROXY: '127.0.0.1',
      MAX_CONNECTIONS_PER_CLIENT: '2',
      LOG_REQUESTS: 'all',
    });
    // The proxy holds more connections than one client may: none is refused.
    const held = Array.from({ length: 4 }, () => connect(port, '127.0.0.1'));
    sockets.push(...held);
    await Promise.all(held.map((socket) => new Promise((r) => socket.once('connect', r))));
    const reply = await converse([forwarded('203.0.113.7')]);
    expect(statusAndBody(reply.response).status).toBe(401);
    expect(loggedAddresses(app)).toEqual(['203.0.113.7']);
  });

  it('without it, X-Forwarded-For is ignored and the cap holds', async () => {
    const app = await start({ MAX_CONNECTIONS_PER_CLIENT: '2', LOG_REQUESTS: 'all' });
    const reply = await converse([forwarded('203.0.113.7')]);
    expect(statusAndBody(reply.response).status).toBe(401);
    expect(loggedAddresses(app)).toEqual(['127.0.0.1']);
    const held = Array.from({ length: 2 }, () => connect(port, '127.0.0.1'));
    sockets.push(...held);
    await Promise.all(held.map((socket) => new Promise((r) => socket.once('connect', r))));
    expect(statusAndBody((await converse([forwarded('203.0.113.7')])).response).status).toBe(429);
  });
});

describe('malformed requests get catalogue errors and no echo', () => {
  const ECHO = 'ECHO-ME-7f3a';
  const cases: [string, string, number, string][] = [
    ['a bad method', `BR${ECHO}EW /health HTTP/1.1\r\nhost: x\r\n\r\n`, 400, 'MALFORMED_REQUEST'],
    [
      'a CR inside a header',
      `GET /health HTTP/1.1\r\nhost: x\r\nx-a: ${ECHO}\rb\r\n\r\n`,
      400,
      'MALFORMED_REQUEST',
    ],
    [
      'a NUL inside a header',
      `GET /health HTTP/1.1\r\nhost: x\r\nx-a: ${ECHO}\0b\r\n\r\n`,
      400,
      'MALFORMED_REQUEST',
    ],
    [
      'content-length with transfer-encoding',
      `POST /health HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
      400,
      'MALFORMED_REQUEST',
    ],
    [
      // A route that reads its body: one without (POST /health) may answer before the chunk is read.
      'a bad chunk size',
      `POST /api/v1/auth/token HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nZZ${ECHO}\r\n`,
      400,
      'MALFORMED_REQUEST',
    ],
    [
      'two content-lengths',
      `POST /health HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab`,
      400,
      'MALFORMED_REQUEST',
    ],
    [
      'over-long headers',
      `GET /health HTTP/1.1\r\nhost: x\r\nx-a: ${ECHO}${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'HEADERS_TOO_LARGE',
    ],
    [
      'an over-long URL',
      `GET /health?${ECHO}${'a'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`,
      431,
      'HEADERS_TOO_LARGE',
    ],
    [
      'a path parameter over 100 characters',
      `GET /api/v1/knowledge/documents/${ECHO}${'a'.repeat(200)} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
      414,
      'URI_TOO_LONG',
    ],
    [
      'a malformed URL',
      `GET /api/v1/knowledge/documents/%zz${ECHO} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
      400,
      'MALFORMED_REQUEST',
    ],
  ];

  it.each(cases)('%s', async (_name, request, status, code) => {
    await start();
    const { response } = await converse([request]);
    const parsed = statusAndBody(response);
    expect(parsed.status).toBe(status);
    expect(parsed.body).toEqual({ statusCode: status, code, message: expect.any(String) });
    expect(response).not.toContain(ECHO);
  });
});
