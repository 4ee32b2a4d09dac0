/** The http reranker against a real local server speaking each rerank dialect (rerank-server.ts). */
import { afterEach, describe, expect, it } from 'vitest';
import { HttpReranker, readScores } from '../../../src/knowledge/rerank/http-reranker.js';
import { RerankError } from '../../../src/knowledge/rerank/provider.js';
import { documentsOf, startRerankServer, type RerankServer } from './rerank-server.js';

const QUERY = 'how do I make curl follow redirects';
const PASSAGES = [
  'libcurl is a free client-side URL transfer library.',
  'Use -L, --location to make curl follow HTTP redirects.',
  'Paris is the capital of France.',
];

let server: RerankServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function reranker(url: string, options: { apiKey?: string; timeoutMs?: number } = {}) {
  return new HttpReranker({
    baseUrl: url,
    model: 'ms-marco-MiniLM-L-12-v2',
    apiKey: options.apiKey ?? null,
    timeoutMs: options.timeoutMs ?? 5000,
  });
}

describe('http reranker', () => {
  it('speaks Cohere/Jina/infinity: documents, top_n and the bearer key out; results by index in', async () => {
    server = await startRerankServer(() => ({
      // Out of order, as these servers sort by relevance.
      body: {
        results: [
          { index: 1, relevance_score: 0.98 },
          { index: 0, relevance_score: 0.2 },
          { index: 2, relevance_score: 0.001 },
        ],
      },
    }));
    const scores = await reranker(server.url, { apiKey: 'sk-test' }).rerank(QUERY, PASSAGES);
    expect(scores).toEqual([0.2, 0.98, 0.001]);
    const [request] = server.requests;
    expect(request?.path).toBe('/rerank');
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.body).toEqual({
      model: 'ms-marco-MiniLM-L-12-v2',
      query: QUERY,
      documents: PASSAGES,
      top_n: 3,
      return_documents: false,
    });
  });

  it('sends no authorization header without a key', async () => {
    server = await startRerankServer(() => ({
      body: { results: [{ index: 0, relevance_score: 1 }] },
    }));
    await reranker(server.url).rerank(QUERY, ['one']);
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('speaks TEI when the server asks for `texts`: resends once, then keeps to it', async () => {
    // TEI's own refusal of a body without `texts`, and its bare array of {index, score}.
    server = await startRerankServer((request) =>
      'texts' in request.body
        ? {
            body: documentsOf(request)
              .map((_, index) => ({ index, score: [0.3, 0.9, 0.1][index] ?? 0 }))
              .sort((a, b) => b.score - a.score),
          }
        : {
            status: 422,
            body: 'Failed to deserialize the JSON body into the target type: missing field `texts` at line 1 column 120',
          },
    );
    const provider = reranker(server.url);
    expect(await provider.rerank(QUERY, PASSAGES)).toEqual([0.3, 0.9, 0.1]);
    expect(server.requests.map((r) => Object.keys(r.body).sort())).toEqual([
      ['documents', 'model', 'query', 'return_documents', 'top_n'],
      ['query', 'raw_scores', 'return_text', 'texts', 'truncate'],
    ]);
    expect(server.requests[1]?.body).toMatchObject({ texts: PASSAGES, raw_scores: false });
    await provider.rerank(QUERY, PASSAGES);
    expect(server.requests).toHaveLength(3);
    expect(server.requests[2]?.body).toHaveProperty('texts');
  });

  it('fails with the status and the server message, never the query or passages', async () => {
    server = await startRerankServer(() => ({
      status: 500,
      body: { error: 'model worker crashed' },
    }));
    const error = await reranker(server.url)
      .rerank(QUERY, PASSAGES)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RerankError);
    expect((error as Error).message).toBe('the rerank server answered 500: model worker crashed');
  });

  it('leaves out a validation error that echoes the input (pydantic `detail` arrays)', async () => {
    server = await startRerankServer((request) => ({
      status: 422,
      body: { detail: [{ loc: ['body', 'query'], msg: 'bad', input: request.body.query }] },
    }));
    const error = (await reranker(server.url)
      .rerank(QUERY, PASSAGES)
      .catch((e: unknown) => e)) as Error;
    expect(error.message).toBe('the rerank server answered 422');
    expect(server.requests).toHaveLength(1); // no `texts` named: no TEI retry
  });

  it('gives up on a slow answer after the timeout', async () => {
    server = await startRerankServer(() => ({
      body: { results: [{ index: 0, relevance_score: 0.5 }] },
      delayMs: 2000,
    }));
    const started = performance.now();
    const error = (await reranker(server.url, { timeoutMs: 200 })
      .rerank(QUERY, ['one'])
      .catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(RerankError);
    expect(error.message).toBe('the rerank server did not answer within 200 ms');
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it("stops at once when the caller's signal aborts (its reason, not a RerankError)", async () => {
    server = await startRerankServer(() => ({ body: { results: [] }, delayMs: 2000 }));
    const controller = new AbortController();
    const pending = reranker(server.url).rerank(QUERY, ['one'], controller.signal);
    setTimeout(() => {
      controller.abort(new Error('gave up'));
    }, 50);
    await expect(pending).rejects.toThrow('gave up');
  });

  it('says when the server cannot be reached', async () => {
    server = await startRerankServer(() => ({ body: {} }));
    const url = server.url;
    await server.close();
    server = undefined;
    await expect(reranker(url).rerank(QUERY, ['one'])).rejects.toThrow(
      /^the rerank server could not be reached: ECONNREFUSED/,
    );
  });
});

describe('reading a rerank answer', () => {
  it('refuses raw logits, missing, duplicate and out-of-range results', () => {
    expect(() => readScores({ results: [{ index: 0, relevance_score: 4.2 }] }, 1)).toThrow(
      /outside \[0, 1\]/,
    );
    expect(() => readScores({ results: [{ index: 0, relevance_score: 0.4 }] }, 2)).toThrow(
      'the rerank server scored 1 of 2 passages (top_n too small?)',
    );
    expect(() =>
      readScores(
        [
          { index: 0, score: 0.1 },
          { index: 0, score: 0.2 },
        ],
        2,
      ),
    ).toThrow('scored passage 0 twice');
    expect(() => readScores([{ index: 3, score: 0.1 }], 2)).toThrow('without a valid index');
    expect(() => readScores({ data: [] }, 1)).toThrow(/neither/);
    expect(
      readScores(
        [
          { index: 1, score: 0 },
          { index: 0, score: 1 },
        ],
        2,
      ),
    ).toEqual([1, 0]);
  });
});
