/**
 * The http reranker against a real rerank server: infinity-emb serving the installed
 * ms-marco-MiniLM-L-12-v2 (scripts/models/infinity.ts; its environment is made on first use,
 * ~5.8 GB, or by `npm run models:install -- infinity-server`). Its scores equal the reference
 * pipeline's for the same batch; through the app, a reranked answer puts an answer first. Prints
 * the latency of reranking 30 real chunks over HTTP.
 *
 * APS_SKIP_INFINITY=1 skips the suite (say so where it is set); otherwise it runs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpReranker } from '../../src/knowledge/rerank/http-reranker.js';
import { sigmoid } from '../../src/knowledge/rerank/provider.js';
import { startInfinityServer, type InfinityServer } from '../../scripts/models/infinity.js';
import { rerankReference } from '../../scripts/models/rerank-reference.js';
import type { TestApp } from '../helpers.js';
import { KnowledgeClient, knowledgeApp } from '../knowledge/helpers.js';
import { installedModel } from './models.js';
import {
  answers,
  FAQ_FILE,
  FAQ_QUERY,
  faqChunks,
  judgedQuestions,
  PAIRS,
  percentiles,
} from './rerank-data.js';

const MODEL = 'ms-marco-MiniLM-L-12-v2';
const KEY = 'infinity-test-key';
const skip = process.env.APS_SKIP_INFINITY === '1';
if (skip) console.warn('rerank-http: APS_SKIP_INFINITY=1, the infinity suite is skipped');

describe.skipIf(skip)('http reranker against infinity-emb', () => {
  let server: InfinityServer;
  let reranker: HttpReranker;
  const chunks = faqChunks(30);

  beforeAll(async () => {
    installedModel(MODEL);
    server = await startInfinityServer({ apiKey: KEY });
    reranker = new HttpReranker({
      baseUrl: server.baseUrl,
      model: MODEL,
      apiKey: KEY,
      timeoutMs: 60_000,
    });
  }, 1_800_000); // the first run installs infinity (~5.8 GB)
  afterAll(async () => {
    await server.stop();
  });

  it('scores as the reference pipeline does for the same batch (relevance within 1e-3)', async () => {
    const dir = installedModel(MODEL);
    const file = existsSync(join(dir, 'onnx/model.onnx'))
      ? 'onnx/model.onnx'
      : 'onnx/model_quantized.onnx';
    const requests = [...PAIRS, { query: FAQ_QUERY, passages: chunks }];
    // infinity scores a request's documents in one batch (up to its --batch-size of 32), in order.
    const reference = await rerankReference({
      model_dir: dir,
      model_file: file,
      batch_size: 32,
      threads: 2,
      requests,
    });
    for (const [i, request] of requests.entries()) {
      const ours = await reranker.rerank(request.query, request.passages);
      const theirs = (reference.logits[i] ?? []).map(sigmoid);
      const worst = Math.max(...ours.map((x, k) => Math.abs(x - (theirs[k] ?? NaN))));
      expect(worst, `request ${i}`).toBeLessThan(1e-3);
    }
  }, 600_000);

  it('refuses a wrong key with a RerankError naming the status', async () => {
    const wrong = new HttpReranker({
      baseUrl: server.baseUrl,
      model: MODEL,
      apiKey: 'wrong',
      timeoutMs: 10_000,
    });
    await expect(wrong.rerank('q', ['p'])).rejects.toThrow(/^the rerank server answered 401/);
  });

  it('reranks 30 real chunks over HTTP: latency on this machine', async () => {
    await reranker.rerank(FAQ_QUERY, chunks);
    const ms: number[] = [];
    for (let run = 0; run < 10; run++) {
      const started = performance.now();
      await reranker.rerank(FAQ_QUERY, chunks);
      ms.push(performance.now() - started);
    }
    const { p50, p95 } = percentiles(ms);
    console.log(`rerank 30 chunks (~1,400 chars) via infinity: p50 ${p50} ms, p95 ${p95} ms`);
    expect(p50).toBeGreaterThan(0);
  }, 600_000);

  describe('through the app (RERANK_PROVIDER=http)', () => {
    let t: TestApp;
    let k: KnowledgeClient;
    beforeAll(async () => {
      ({ t, k } = await knowledgeApp({
        RERANK_PROVIDER: 'http',
        RERANK_BASE_URL: server.baseUrl,
        RERANK_API_KEY: KEY,
        RERANK_MODEL: MODEL,
        RERANK_TIMEOUT_MS: '60000',
        RERANK_CANDIDATES: '10',
      }));
      const doc = await k.uploadOk('curl-faq.txt', readFileSync(FAQ_FILE));
      await k.indexOk(doc.id);
    });
    afterAll(async () => {
      await t.close();
    });

    it('answers reranked, an answer first for most judged questions', async () => {
      const questions = judgedQuestions('curl-faq.txt');
      let first = 0;
      for (const question of questions) {
        const res = await k.retrieve({ query: question.question, topK: 5 });
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json<{ reranked: boolean; items: { content: string }[] }>();
        expect(body.reranked).toBe(true);
        if (body.items[0] !== undefined && answers(body.items[0].content, question)) first += 1;
      }
      console.log(`curl FAQ via infinity: an answer first for ${first} of ${questions.length}`);
      expect(first).toBeGreaterThanOrEqual(Math.ceil(questions.length * 0.6));
      expect(t.logs.text).not.toContain(KEY);
    }, 600_000);
  });
});
