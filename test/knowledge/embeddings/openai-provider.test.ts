import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  OpenAIEmbeddingProvider,
  type OpenAIEmbeddingConfig,
} from '../../../src/knowledge/embeddings/openai-provider.js';
import { EmbeddingError } from '../../../src/knowledge/embeddings/provider.js';

// ---------- a real OpenAI-compatible server on 127.0.0.1 ----------

interface Received {
  model: unknown;
  input: string[];
  authorization: string | undefined;
}
/** What the server does with the n-th request (0-based): answer, fail, or never answer. */
type Reply =
  | { kind: 'vectors'; dimensions?: number; reverse?: boolean; drop?: boolean }
  | { kind: 'status'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'hang' };

const SECRET = 'sk-test-0123456789abcdef';
let server: Server;
let baseUrl: string;
let received: Received[] = [];
let reply: (n: number, request: Received) => Reply = () => ({ kind: 'vectors' });

/** Deterministic, deliberately not unit-length, so the provider's normalisation shows. */
function fakeVector(text: string, dimensions = 8): number[] {
  const digest = createHash('sha256').update(text).digest();
  return Array.from({ length: dimensions }, (_, i) => (digest[i % digest.length]! - 128) / 16);
}

/** The provider must return the server's vector, L2-normalised. */
function expectUnitOf(actual: Float32Array | undefined, raw: number[]): void {
  const norm = Math.hypot(...raw);
  expect(actual).toHaveLength(raw.length);
  raw.forEach((x, i) => {
    expect(actual![i]).toBeCloseTo(x / norm, 6);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    model: unknown;
    input: string[];
  };
  const request = {
    model: body.model,
    input: body.input,
    authorization: req.headers.authorization,
  };
  received.push(request);
  const r = reply(received.length - 1, request);
  if (r.kind === 'hang') return; // the socket stays open until the test closes connections
  if (r.kind === 'status') {
    send(res, r.status, r.body, r.headers);
    return;
  }
  let data = body.input.map((text, index) => ({
    object: 'embedding',
    index,
    embedding: fakeVector(text, r.dimensions),
  }));
  if (r.reverse) data = data.reverse();
  if (r.drop) data = data.slice(1);
  send(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: 1 } });
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  server.closeAllConnections(); // ends hanging requests of the previous test
  received = [];
  reply = () => ({ kind: 'vectors' });
});

function provider(config: Partial<OpenAIEmbeddingConfig> = {}, maxAttempts = 4) {
  return new OpenAIEmbeddingProvider(
    { model: 'test-embed', baseUrl, apiKey: SECRET, timeoutMs: 5_000, batchSize: 64, ...config },
    { maxAttempts, retryBaseMs: 1 },
  );
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(
    () => expect.fail('expected a rejection'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

const sizes = (): number[] => received.map((r) => r.input.length);

describe('OpenAIEmbeddingProvider', () => {
  it('names the model, sends model, input and the bearer key, and returns unit vectors', async () => {
    const p = provider();
    expect(p.model).toBe('openai:test-embed');
    const [vector] = await p.embedDocuments(['hello world']);
    expect(received).toEqual([
      { model: 'test-embed', input: ['hello world'], authorization: `Bearer ${SECRET}` },
    ]);
    expectUnitOf(vector, fakeVector('hello world'));
  });

  it('sends no Authorization header without a key, and returns [] for no texts', async () => {
    const p = provider({ apiKey: null });
    await p.embedQuery('q');
    expect(received[0]!.authorization).toBeUndefined();
    expect(await p.embedDocuments([])).toEqual([]);
    expect(received).toHaveLength(1);
  });

  it('learns dimensions from the first response; ready() probes with one word', async () => {
    const p = provider();
    expect(p.dimensions).toBe(0);
    await p.ready();
    expect(p.dimensions).toBe(8);
    expect(sizes()).toEqual([1]);
  });

  it('batches by batchSize and keeps the input order', async () => {
    const texts = Array.from({ length: 7 }, (_, i) => `text number ${i}`);
    const vectors = await provider({ batchSize: 3 }).embedDocuments(texts);
    expect(sizes()).toEqual([3, 3, 1]);
    expect(received.flatMap((r) => r.input)).toEqual(texts);
    vectors.forEach((v, i) => {
      expectUnitOf(v, fakeVector(texts[i]!));
      expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    });
  });

  it('orders vectors by index even when the server shuffles them', async () => {
    reply = () => ({ kind: 'vectors', reverse: true });
    const texts = ['alpha', 'beta', 'gamma', 'delta'];
    const vectors = await provider().embedDocuments(texts);
    expect(received[0]!.input).toEqual(texts);
    vectors.forEach((v, i) => {
      expectUnitOf(v, fakeVector(texts[i]!));
    });
  });

  it('retries 500s and succeeds', async () => {
    reply = (n) =>
      n < 2 ? { kind: 'status', status: 500, body: { error: 'boom' } } : { kind: 'vectors' };
    expect(await provider().embedDocuments(['a', 'b'])).toHaveLength(2);
    expect(sizes()).toEqual([2, 2, 2]);
  });

  it('honours Retry-After on 429', async () => {
    reply = (n) =>
      n === 0
        ? {
            kind: 'status',
            status: 429,
            body: { error: { message: 'slow down' } },
            headers: { 'retry-after': '1' },
          }
        : { kind: 'vectors' };
    const started = Date.now();
    await provider().embedQuery('x');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950); // retryBaseMs is 1: the header ruled
    expect(received).toHaveLength(2);
  });

  it('gives up after maxAttempts with a clear EmbeddingError', async () => {
    reply = () => ({
      kind: 'status',
      status: 503,
      body: { error: { message: 'model is loading' } },
    });
    const err = await failure(provider().embedQuery('x'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(/after 4 attempts.*HTTP 503: model is loading/);
    expect(received).toHaveLength(4);
  });

  it('fails fast when Retry-After is longer than the longest accepted wait', async () => {
    reply = () => ({ kind: 'status', status: 429, body: {}, headers: { 'retry-after': '3600' } });
    const err = await failure(provider().embedQuery('x'));
    expect(err.message).toMatch(/retry after 3600 s/);
    expect(received).toHaveLength(1);
  });

  it.each([400, 401, 404])('does not retry %i and reports the server message', async (status) => {
    reply = () => ({ kind: 'status', status, body: { error: { message: `nope ${status}` } } });
    const err = await failure(provider().embedQuery('x'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toContain(`HTTP ${status}: nope ${status}`);
    expect(received).toHaveLength(1);
  });

  it('never puts the API key into error messages, even when the server echoes it', async () => {
    reply = () => ({
      kind: 'status',
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${SECRET}.` } },
    });
    const err = await failure(provider().embedQuery('x'));
    expect(err.message).toContain('Incorrect API key provided: [redacted]');
    expect(err.message).toContain('EMBEDDING_API_KEY');
    expect(`${err.message} ${err.stack ?? ''} ${String(err.cause)}`).not.toContain(SECRET);
  });

  it('retries network errors and names the cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const p = provider({ baseUrl: `http://127.0.0.1:${port}` }, 2);
    const err = await failure(p.embedQuery('x'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(/after 2 attempts.*ECONNREFUSED/);
  });

  it('times out a hanging server after timeoutMs per attempt', async () => {
    reply = () => ({ kind: 'hang' });
    const started = Date.now();
    const err = await failure(provider({ timeoutMs: 100 }, 2).embedQuery('x'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(/after 2 attempts.*no response within 100 ms/);
    expect(received).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("stops at once when the caller's signal aborts, in flight or while backing off", async () => {
    reply = () => ({ kind: 'hang' });
    const inFlight = failure(provider().embedQuery('x', AbortSignal.timeout(50)));
    expect((await inFlight).name).toMatch(/AbortError|TimeoutError/);

    reply = () => ({ kind: 'status', status: 500, body: {} });
    const slow = new OpenAIEmbeddingProvider(
      { model: 'm', baseUrl, apiKey: null, timeoutMs: 5_000, batchSize: 8 },
      { retryBaseMs: 10_000 },
    );
    const controller = new AbortController();
    const started = Date.now();
    const backingOff = failure(slow.embedQuery('x', controller.signal));
    setTimeout(() => {
      controller.abort();
    }, 100);
    const err = await backingOff;
    expect(err).not.toBeInstanceOf(EmbeddingError);
    expect(err.name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('close() ends in-flight requests', async () => {
    reply = () => ({ kind: 'hang' });
    const p = provider();
    const pending = failure(p.embedQuery('x'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await p.close();
    expect((await pending).message).toMatch(/closed/);
  });

  it('rejects a dimension change between responses', async () => {
    const p = provider();
    await p.embedQuery('x');
    reply = () => ({ kind: 'vectors', dimensions: 6 });
    const err = await failure(p.embedQuery('y'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(/6-dimensional vector, expected 8/);
  });

  it('rejects malformed responses: missing items, mixed lengths, non-numbers', async () => {
    reply = () => ({ kind: 'vectors', drop: true });
    expect((await failure(provider().embedDocuments(['a', 'b']))).message).toMatch(
      /returned 1 vectors for 2 inputs/,
    );
    const body = {
      data: [
        { index: 0, embedding: [1, 2] },
        { index: 1, embedding: [1, 2, 3] },
      ],
    };
    reply = () => ({ kind: 'status', status: 200, body });
    expect((await failure(provider().embedDocuments(['a', 'b']))).message).toMatch(
      /3-dimensional vector, expected 2/,
    );
    reply = () => ({
      kind: 'status',
      status: 200,
      body: { data: [{ index: 0, embedding: [1, null] }] },
    });
    expect((await failure(provider().embedQuery('a'))).message).toMatch(/non-finite/);
  });
});
