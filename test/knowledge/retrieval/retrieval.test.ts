import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import type { ChunkStore } from '../../../src/knowledge/search/chunk-store.js';
import { bearer, createTestApp, type TestApp } from '../../helpers.js';
import { KnowledgeClient, knowledgeApp } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
const ids: Record<string, string> = {};

const DOCS: Record<string, { project: string; text: string }> = {
  'astronomy.md': {
    project: 'science',
    text: `# Astronomy

## Planets

Jupiter is the largest planet of the solar system; its Great Red Spot is a storm larger than Earth.

## Stars

A supernova is the explosion of a massive star at the end of its life, briefly outshining its galaxy.`,
  },
  'cooking.md': {
    project: 'kitchen',
    text: `# Cooking

## Bread

Knead the dough for ten minutes, then let it rise in a warm place until it doubles in size.

## Pasta

Boil the spaghetti in salted water and drain it one minute before the packet says.`,
  },
  'finance.txt': {
    project: 'science',
    text: 'Quarterly revenue grew by twelve percent while operating costs stayed flat, lifting the profit margin.',
  },
};

beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
  for (const [name, { project, text }] of Object.entries(DOCS)) {
    const doc = await k.uploadOk(name, text, { projectId: project });
    await k.indexOk(doc.id, { maxChars: 300, overlapChars: 30 });
    ids[name] = doc.id;
  }
  // An uploaded, never indexed document must not be searched.
  await k.uploadOk('pending.md', '# Pending\n\nJupiter storms are not indexed yet.', {
    projectId: 'science',
  });
});
let closed = false;
afterAll(async () => {
  if (!closed) await t.close();
});

describe('retrieve', () => {
  it('finds the right passage with its document, section and score (hybrid by default)', async () => {
    const res = await k.retrieve({ query: 'largest planet storm', topK: 3 });
    const body = res.json<{
      query: string;
      topK: number;
      mode: string;
      items: {
        documentId: string;
        sectionPath: string;
        documentName: string;
        score: number;
        content: string;
        model: string;
        source: string;
        projectId: string;
        chunkIndex: number;
        metadata: object;
        page: number | null;
      }[];
    }>();
    expect(body).toMatchObject({ query: 'largest planet storm', topK: 3, mode: 'hybrid' });
    const [top] = body.items;
    expect(top).toMatchObject({
      documentId: ids['astronomy.md'],
      documentName: 'astronomy.md',
      sectionPath: 'Astronomy > Planets',
      projectId: 'science',
      source: 'upload',
      page: null,
      model: t.ctx.knowledge.embedder.model,
      chunkIndex: expect.any(Number),
      metadata: expect.any(Object),
    });
    expect(top!.content).toContain('Great Red Spot');
    const scores = body.items.map((i) => i.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(body.items.some((i) => i.content.includes('not indexed yet'))).toBe(false);
  });

  it('keyword mode ranks by BM25 with stemming; semantic mode by cosine similarity', async () => {
    const kw = await k.hits({ query: 'kneading doughs', mode: 'keyword', topK: 2 });
    expect(kw[0]?.sectionPath).toBe('Cooking > Bread');
    expect(kw[0]!.score).toBeGreaterThan(0);
    expect(kw[0]!.score).toBeLessThan(1);
    const sem = await k.hits({ query: 'a star exploding', mode: 'semantic', topK: 6 });
    expect(sem.length).toBeGreaterThan(0);
    for (const hit of sem) {
      expect(hit.score).toBeGreaterThanOrEqual(-1);
      expect(hit.score).toBeLessThanOrEqual(1);
    }
    expect(sem.slice(0, 2).map((h) => h.sectionPath)).toContain('Astronomy > Stars');
  });

  it('keyword mode asks its index for topK alone, and answers the first topK of a deeper list', async () => {
    // The service's own chunk store, its searches recorded.
    const { store } = t.ctx.knowledge.retrieval as unknown as { store: ChunkStore };
    const limits: number[] = [];
    const search = store.search.bind(store);
    store.search = (request, rank) => {
      limits.push(request.limit);
      return search(request, rank);
    };
    try {
      const query = 'the dough and the planet of the star';
      const deep = await k.hits({ query, mode: 'keyword', topK: 20 });
      expect(deep.length).toBeGreaterThanOrEqual(3);
      for (const topK of [1, 2]) {
        const hits = await k.hits({ query, mode: 'keyword', topK });
        expect(hits).toEqual(deep.slice(0, topK));
      }
      // Fusion still gets the deeper candidate lists (SEARCH_HYBRID_CANDIDATES, 40 by default).
      await k.hits({ query, mode: 'hybrid', topK: 2 });
      expect(limits).toEqual([20, 1, 2, 40]);
    } finally {
      store.search = search;
    }
  });

  it('hybrid finds a passage whose words the query does not share', async () => {
    const hits = await k.hits({ query: 'earnings and profits increased', topK: 3 });
    expect(hits.map((h) => h.documentId)).toContain(ids['finance.txt']);
  });

  it('hybrid ranks a passage found by meaning above one sharing only a weak word', async () => {
    // "size" matches the bread recipe only ("doubles in size"): weak keyword evidence.
    const query = "Did the firm's income grow in size?";
    const keyword = await k.hits({ query, mode: 'keyword', topK: 3 });
    expect(keyword.map((h) => h.sectionPath)).toEqual(['Cooking > Bread']);
    const hybrid = await k.hits({ query, topK: 3 });
    expect(hybrid[0]?.documentId).toBe(ids['finance.txt']);
    expect(hybrid.map((h) => h.sectionPath)).toContain('Cooking > Bread');
  });

  it('scope filters apply before ranking; minScore before topK', async () => {
    const kitchen = await k.hits({ query: 'planet', projectId: 'kitchen', topK: 5 });
    expect(kitchen.every((h) => h.projectId === 'kitchen')).toBe(true);
    const oneDoc = await k.hits({
      query: 'storm explosion dough revenue',
      documentId: ids['cooking.md'],
      topK: 10,
    });
    expect(oneDoc.length).toBeGreaterThan(0);
    expect(oneDoc.every((h) => h.documentId === ids['cooking.md'])).toBe(true);
    const all = await k.hits({ query: 'jupiter', topK: 10, minScore: 0 });
    const strict = await k.hits({ query: 'jupiter', topK: 10, minScore: all[0]!.score });
    expect(strict.length).toBeGreaterThanOrEqual(1);
    expect(strict.every((h) => h.score >= all[0]!.score)).toBe(true);
    expect((await k.hits({ query: 'jupiter', topK: 1 })).length).toBe(1);
  });

  it('validates: blank query → 400 KNOWLEDGE_QUERY_REQUIRED; topK and mode bounds → 400', async () => {
    expect((await k.retrieve({ query: '   ' })).json()).toMatchObject({
      statusCode: 400,
      code: 'KNOWLEDGE_QUERY_REQUIRED',
    });
    expect((await k.retrieve({})).json()).toMatchObject({
      statusCode: 400,
      code: 'VALIDATION_ERROR',
      message: 'body.query is required',
    });
    expect((await k.retrieve({ query: 'x', topK: 0 })).statusCode).toBe(400);
    expect((await k.retrieve({ query: 'x', topK: 101 })).statusCode).toBe(400);
    expect((await k.retrieve({ query: 'x', mode: 'magic' })).statusCode).toBe(400);
  });

  it('never returns chunks of a document whose re-index failed, even when they rank first', async () => {
    const astronomy = ids['astronomy.md']!;
    const setStatus = (status: string) =>
      t.ctx.database.db
        .updateTable('knowledge_documents')
        .set({ status: status as 'failed' })
        .where('id', '=', astronomy)
        .execute();
    await setStatus('failed');
    try {
      for (const mode of ['keyword', 'hybrid', 'semantic']) {
        const hits = await k.hits({
          query: 'jupiter largest planet storm supernova',
          mode,
          topK: 10,
        });
        expect(
          hits.some((h) => h.documentId === astronomy),
          mode,
        ).toBe(false);
      }
      // Filtered and unfiltered keyword paths agree.
      const scoped = await k.hits({
        query: 'dough pasta',
        mode: 'keyword',
        projectId: 'kitchen',
        topK: 10,
      });
      const all = await k.hits({ query: 'dough pasta', mode: 'keyword', topK: 10 });
      expect(all.map((h) => [h.id, h.score])).toEqual(scoped.map((h) => [h.id, h.score]));
    } finally {
      await setStatus('indexed');
    }
  });

  it('never throws on FTS5 syntax in the query', async () => {
    for (const query of [
      '"unbalanced',
      'NEAR(a b',
      'col:val',
      'a AND OR NOT b',
      '*',
      '-',
      '()',
      "'; drop table x; --",
      '🙂🙂',
    ]) {
      const res = await k.retrieve({ query });
      expect(res.statusCode, query).toBe(200);
    }
  });
});

describe('small collections', () => {
  it('a passage with the query word outranks one found by meaning only', async () => {
    const { t: small, k: ks } = await knowledgeApp();
    try {
      const doc = await ks.uploadOk(
        'policy.md',
        '# Policy\n\n## Refunds\n\nA refund is paid within 14 days.\n\n## Billing\n\nInvoices mention the refund policy.\n\n## Money back\n\nUnhappy customers get their money back.',
      );
      await ks.indexOk(doc.id);
      const hits = await ks.hits({ query: 'refund', topK: 3 });
      const withWord = hits.filter((h) => h.content.toLowerCase().includes('refund'));
      expect(withWord).toHaveLength(2);
      expect(hits.slice(0, 2).every((h) => h.content.toLowerCase().includes('refund'))).toBe(true);
      const keyword = await ks.hits({ query: 'refund', mode: 'keyword', minScore: 0.0001 });
      expect(keyword).toHaveLength(2);
    } finally {
      await small.close();
    }
  });
});

describe('SEARCH_HYBRID_CANDIDATES', () => {
  it("sets how deep a hybrid retrieval looks (at least topK × 4), not the other modes'", async () => {
    const { t: a, k: ka } = await knowledgeApp({ SEARCH_HYBRID_CANDIDATES: '60' });
    try {
      const doc = await ka.uploadOk('walrus.md', '# Walruses\n\nWalruses rest on floating ice.');
      await ka.indexOk(doc.id);
      const { store } = a.ctx.knowledge.retrieval as unknown as { store: ChunkStore };
      const limits: string[] = [];
      const search = store.search.bind(store);
      store.search = (request, rank) => {
        limits.push(
          `${request.text === null ? 'semantic' : request.vector === null ? 'keyword' : 'hybrid'} ${request.limit}`,
        );
        return search(request, rank);
      };
      for (const [mode, topK] of [
        ['hybrid', 2],
        ['hybrid', 20],
        ['semantic', 2],
        ['keyword', 2],
      ] as const) {
        expect((await ka.hits({ query: 'walruses on ice', mode, topK }))[0]?.documentId).toBe(
          doc.id,
        );
      }
      expect(limits).toEqual(['hybrid 60', 'hybrid 80', 'semantic 100', 'keyword 2']);
    } finally {
      await a.close();
    }
  });
});

describe('when the embedding provider fails', () => {
  it('hybrid falls back to keywords; semantic answers 502', async () => {
    const { t: a, k: ka } = await knowledgeApp();
    const doc = await ka.uploadOk('fallback.md', '# Fallback\n\nWalruses rest on floating ice.');
    await ka.indexOk(doc.id);
    await a.close(true);
    const dead = {
      EMBEDDING_PROVIDER: 'openai',
      EMBEDDING_MODEL: 'm',
      EMBEDDING_BASE_URL: 'http://127.0.0.1:9/v1',
      EMBEDDING_TIMEOUT_MS: '200',
    };
    const { t: b } = await knowledgeApp(dead, a.dir);
    try {
      const kb = new KnowledgeClient({ ...b, key: a.key });
      expect((await kb.hits({ query: 'walruses' }))[0]?.documentId).toBe(doc.id);
      const semantic = await kb.retrieve({ query: 'walruses', mode: 'semantic' });
      expect(semantic.json()).toMatchObject({
        statusCode: 502,
        code: 'KNOWLEDGE_EMBEDDING_FAILED',
      });
    } finally {
      await b.close();
    }
  });
});

describe('retrieve in read-only mode', () => {
  it('keeps working while uploads are refused', async () => {
    await t.close(true);
    closed = true;
    const broken = { name: '9999_broken', up: () => Promise.reject(new Error('boom')) };
    const ro = await createTestApp({ dir: t.dir, migrations: [...MIGRATIONS, broken] });
    try {
      const key = (await ro.ctx.apiKeys.list())[0]!;
      expect(key).toBeDefined();
      const client = new KnowledgeClient({ ...ro, key: t.key });
      expect((await client.hits({ query: 'supernova' }))[0]?.sectionPath).toBe('Astronomy > Stars');
      const upload = await client.upload('x.txt', 'x');
      expect(upload.json()).toMatchObject({ statusCode: 503, code: 'READ_ONLY_MODE' });
      const del = await ro.app.inject({
        method: 'DELETE',
        url: client.url(`/documents/${ids['cooking.md']!}`),
        headers: bearer(t.key),
      });
      expect(del.json()).toMatchObject({ statusCode: 503, code: 'READ_ONLY_MODE' });
    } finally {
      await ro.close();
    }
  });
});
