/**
 * Retrieval with a reranker, through the real app: RERANK_PROVIDER=http against a real local
 * server (rerank-server.ts) whose relevance rises along the documents it is sent, so a reranked
 * answer is the fused order reversed. That stand-in for a model is enough here: what is tested is
 * what retrieval does with a reranker's scores (pool depth, order, minScore, topK, fallback,
 * cool-down, the API), not a model's judgement (test/models/rerank.test.ts tests the real one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers.js';
import { KnowledgeClient, knowledgeApp } from '../helpers.js';
import {
  documentsOf,
  reversingAnswer,
  startRerankServer,
  type RerankServer,
} from './rerank-server.js';

interface Answer {
  reranked: boolean;
  items: { id: string; score: number; content: string }[];
}

const QUERY = 'when is the lighthouse lamp inspected';

/** Six documents that all match the query, some better than others. */
const DOCS = [
  'The lighthouse lamp is inspected every evening before dusk by the keeper.',
  'A lighthouse keeper inspects the lamp, the lens and the fog horn each week.',
  'The lamp of the old lighthouse was replaced in 1952.',
  'Visitors may climb the lighthouse on Sundays.',
  'The lighthouse stands on a granite rock at the harbour mouth.',
  'Lamp oil was stored in a shed beside the lighthouse.',
];

async function indexAll(k: KnowledgeClient): Promise<void> {
  for (const [i, text] of DOCS.entries()) {
    const doc = await k.uploadOk(`doc-${i}.txt`, text);
    await k.indexOk(doc.id);
  }
}

async function retrieve(k: KnowledgeClient, body: Record<string, unknown>): Promise<Answer> {
  const res = await k.retrieve({ query: QUERY, ...body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Answer>();
}

describe('retrieval with a reranker', () => {
  let server: RerankServer;
  let t: TestApp;
  let k: KnowledgeClient;
  beforeAll(async () => {
    server = await startRerankServer(reversingAnswer);
    ({ t, k } = await knowledgeApp({
      RERANK_PROVIDER: 'http',
      RERANK_BASE_URL: server.url,
      RERANK_CANDIDATES: '4',
      RERANK_TIMEOUT_MS: '2000',
    }));
    await indexAll(k);
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it('rerank: false keeps the fused order and asks no reranker', async () => {
    const fused = await retrieve(k, { topK: 4, rerank: false });
    expect(fused.reranked).toBe(false);
    expect(fused.items).toHaveLength(4);
    expect(server.requests).toHaveLength(0);
  });

  it('by default reranks RERANK_CANDIDATES hits, scores them by relevance, then cuts to topK', async () => {
    const fused = await retrieve(k, { topK: 4, rerank: false });
    server.requests.length = 0;
    const answer = await retrieve(k, { topK: 2 });
    expect(answer.reranked).toBe(true);
    // The reranker read the 4 best fused hits, in the fused order.
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body.query).toBe(QUERY);
    expect(documentsOf(server.requests[0]!)).toEqual(fused.items.map((h) => h.content));
    // Its order (the fused one reversed), its scores, topK.
    expect(answer.items.map((h) => h.id)).toEqual([fused.items[3]?.id, fused.items[2]?.id]);
    expect(answer.items.map((h) => h.score)).toEqual([4 / 5, 3 / 5]);
  });

  it('asks for topK hits when topK is above RERANK_CANDIDATES', async () => {
    server.requests.length = 0;
    // minScore 0 keeps every keyword match in the pool (without one, padding is left out: the
    // reranker reads the hits the fused answer would give).
    const answer = await retrieve(k, { topK: 6, rerank: true, mode: 'keyword', minScore: 0 });
    expect(answer.reranked).toBe(true);
    const sent = documentsOf(server.requests[0]!);
    expect(sent.length).toBeGreaterThan(4);
    expect(answer.items).toHaveLength(sent.length);
    expect(answer.items.map((h) => h.content)).toEqual([...sent].reverse());
  });

  it('applies minScore to the relevance, not to the fused score', async () => {
    // Relevance 0.8, 0.6, 0.4, 0.2 for the 4 candidates; no fused score reaches 0.99.
    const answer = await retrieve(k, { topK: 4, minScore: 0.5 });
    expect(answer.reranked).toBe(true);
    expect(answer.items.map((h) => h.score)).toEqual([0.8, 0.6]);
    const fused = await retrieve(k, { topK: 4, minScore: 0.99, rerank: false });
    expect(fused.items).toEqual([]);
  });

  it('answers in the fused order when the reranker fails, warns once, then skips it a while', async () => {
    const fused = await retrieve(k, { topK: 3, rerank: false });
    server.answer = () => ({ status: 503, body: { message: 'overloaded' } });
    server.requests.length = 0;
    const warnings = () => t.logs.lines.filter((l) => l.includes('reranking failed'));
    const failed = await retrieve(k, { topK: 3 });
    expect(failed).toEqual(fused);
    expect(server.requests).toHaveLength(1);
    expect(warnings()).toHaveLength(1);
    expect(JSON.parse(warnings()[0]!)).toMatchObject({
      level: 40,
      reranker: 'http:ms-marco-MiniLM-L-12-v2',
      reason: 'the rerank server answered 503: overloaded',
    });
    // The cool-down: the next retrievals do not wait for a failing reranker, nor warn again.
    server.answer = reversingAnswer;
    const next = await retrieve(k, { topK: 3, rerank: true });
    expect(next).toEqual(fused);
    expect(server.requests).toHaveLength(1);
    expect(warnings()).toHaveLength(1);
    // No query text in any log line.
    expect(t.logs.text).not.toContain('lighthouse');
  });
});

describe('a reranker that does not answer in time', () => {
  it('is given up after RERANK_TIMEOUT_MS: the fused answer', async () => {
    const server = await startRerankServer((request) => ({
      ...reversingAnswer(request),
      delayMs: 3000,
    }));
    const { t, k } = await knowledgeApp({
      RERANK_PROVIDER: 'http',
      RERANK_BASE_URL: server.url,
      RERANK_TIMEOUT_MS: '300',
    });
    try {
      await indexAll(k);
      const fused = await retrieve(k, { topK: 3, rerank: false });
      const started = performance.now();
      const answer = await retrieve(k, { topK: 3 });
      expect(performance.now() - started).toBeLessThan(2500);
      expect(answer).toEqual(fused);
      expect(t.logs.text).toContain('did not answer within 300 ms');
    } finally {
      await t.close();
      await server.close();
    }
  });
});

describe('without a reranker (RERANK_PROVIDER=none)', () => {
  let t: TestApp;
  let k: KnowledgeClient;
  beforeAll(async () => {
    ({ t, k } = await knowledgeApp());
    await indexAll(k);
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers fused by default and with rerank: false; rerank: true is a 400', async () => {
    expect((await retrieve(k, {})).reranked).toBe(false);
    expect((await retrieve(k, { rerank: false })).reranked).toBe(false);
    const res = await k.retrieve({ query: QUERY, rerank: true });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      statusCode: 400,
      code: 'KNOWLEDGE_RERANK_UNAVAILABLE',
      message: 'No reranker is configured (RERANK_PROVIDER=none): omit `rerank` or send false.',
    });
  });

  it('describes `rerank` and `reranked` in the OpenAPI document', async () => {
    type Schema = { type?: string; description?: string; properties?: Record<string, Schema> };
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<
        string,
        Record<
          string,
          {
            description: string;
            requestBody: { content: Record<string, { schema: Schema }> };
            responses: Record<string, { content: Record<string, { schema: Schema }> }>;
          }
        >
      >;
    }>();
    const op = doc.paths[`${t.prefix}/knowledge/retrieve`]?.post;
    const body = op?.requestBody.content['application/json']?.schema;
    expect(body?.properties?.rerank).toMatchObject({ type: 'boolean' });
    expect(body?.properties?.rerank?.description).toMatch(/relevance in \[0, 1\]/);
    const result = op?.responses['200']?.content['application/json']?.schema;
    expect(result?.properties?.reranked).toMatchObject({ type: 'boolean' });
    expect(op?.description).toMatch(/Reranked answers/);
  });
});
