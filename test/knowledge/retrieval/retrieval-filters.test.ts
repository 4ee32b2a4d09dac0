/**
 * Retrieval with `filter` and `documentId` arrays: applied before ranking, so a filtered
 * ranking is the unfiltered one restricted to the matching documents (never fewer than topK
 * when enough match), and equals the ranking of a corpus that holds only those documents.
 * Runs on SQLite, and on PostgreSQL with TEST_DATABASE_URL (npm run test:postgres).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchesFilter } from '../../../src/knowledge/filter/evaluate.js';
import { parseFilter } from '../../../src/knowledge/filter/filter.js';
import { lcgRandom, type TestApp } from '../../helpers.js';
import { knowledgeApp, type KnowledgeClient } from '../helpers.js';

const WORDS = (
  'river mountain forest desert ocean glacier volcano canyon meadow island harbor bridge ' +
  'castle library market garden engine signal planet comet winter summer storm thunder'
).split(' ');
const LANGS = ['en', 'de', 'fr'];

interface CorpusDoc {
  name: string;
  text: string;
  metadata: Record<string, unknown>;
}

const CORPUS: CorpusDoc[] = (() => {
  const next = lcgRandom(14); // seeded: the same corpus on every run and engine
  const pick = () => WORDS[Math.floor(next() * WORDS.length)] ?? 'river';
  return Array.from({ length: 22 }, (_, i) => {
    const sections = Array.from({ length: 1 + (i % 3) }, (_, s) => {
      const sentence = () => Array.from({ length: 8 }, pick).join(' ');
      return `## Part ${s}\n\n${sentence()}. ${sentence()}. ${sentence()}.`;
    });
    return {
      name: `doc-${i}.${i % 4 === 0 ? 'txt' : 'md'}`,
      text: `# Doc ${i}\n\n${sections.join('\n\n')}`,
      metadata: {
        ...(i % 6 === 5 ? {} : { lang: LANGS[i % 3] }),
        year: 2010 + (i % 8),
        tags: i % 2 === 0 ? ['even', `t${i % 5}`] : [`t${i % 5}`],
        published: `20${10 + (i % 8)}-0${1 + (i % 9)}-15`,
      },
    };
  });
})();

interface Hit {
  id: string;
  documentId: string;
  documentName: string;
  chunkIndex: number;
  score: number;
}
interface Doc {
  id: string;
  name: string;
  fileType: string;
  source: string;
  createdAt: string;
  metadata: Record<string, unknown>;
}

async function corpusApp(docs: CorpusDoc[]) {
  const { t, k } = await knowledgeApp();
  const ids = new Map<string, string>();
  for (const d of docs) {
    const res = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: { authorization: `Bearer ${t.key}` },
      payload: { name: d.name, text: d.text, metadata: d.metadata, projectId: 'corpus' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json<{ id: string }>().id;
    await k.indexOk(id, { maxChars: 200, overlapChars: 0 });
    ids.set(d.name, id);
  }
  const docs2 = (await k.get('/documents?limit=1000')).json<{ items: Doc[] }>().items;
  return { t, k, ids, docs: docs2 };
}

let t: TestApp;
let k: KnowledgeClient;
let docs: Doc[];
beforeAll(async () => {
  ({ t, k, docs } = await corpusApp(CORPUS));
}, 180_000);
afterAll(() => t.close());

const hits = async (body: Record<string, unknown>) => (await k.hits(body)) as unknown as Hit[];
const matching = (filter: unknown) =>
  new Set(docs.filter((d) => matchesFilter(parseFilter(filter), d)).map((d) => d.id));

const leaf = fc.oneof(
  fc.constantFrom(...LANGS).map((v) => ({ 'metadata.lang': v })),
  fc.constantFrom(...LANGS).map((v) => ({ 'metadata.lang': { $ne: v } })),
  fc
    .tuple(fc.constantFrom('$gt', '$gte', '$lt', '$lte'), fc.integer({ min: 2009, max: 2018 }))
    .map(([op, v]) => ({ 'metadata.year': { [op]: v } })),
  fc.constantFrom('even', 't0', 't1', 't2', 't3').map((v) => ({ 'metadata.tags': v })),
  fc
    .array(fc.constantFrom('t0', 't1', 't2', 't3', 't4'), { minLength: 1, maxLength: 2 })
    .map((v) => ({ 'metadata.tags': { $nin: v } })),
  fc.constantFrom('md', 'txt').map((v) => ({ fileType: v })),
  fc.boolean().map((v) => ({ 'metadata.lang': { $exists: v } })),
  fc
    .tuple(fc.constantFrom('$gt', '$lt'), fc.constantFrom('2013-01-01', '2015-06-01T00:00:00Z'))
    .map(([op, v]) => ({ 'metadata.published': { [op]: v } })),
);
const filterArb = fc.oneof(
  leaf,
  fc.array(leaf, { minLength: 2, maxLength: 3 }).map((nodes) => ({ $and: nodes })),
  fc.array(leaf, { minLength: 2, maxLength: 3 }).map((nodes) => ({ $or: nodes })),
);
const queryArb = fc
  .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 })
  .map((w) => w.join(' '));

describe('filtered retrieval', () => {
  it('is the unfiltered ranking restricted to the matching documents, topK kept (property)', async () => {
    // Runs where the filter removed some of the top hits and still left hits: not vacuous.
    let telling = 0;
    await fc.assert(
      fc.asyncProperty(
        filterArb,
        queryArb,
        fc.constantFrom('keyword', 'semantic', 'hybrid'),
        fc.integer({ min: 1, max: 8 }),
        async (filter, query, mode, topK) => {
          const allowed = matching(filter);
          // The corpus has fewer than 100 chunks: topK 100 is the whole unfiltered ranking. Every
          // hit with evidence (a minScore): the padding cut is relative to the best hit in scope,
          // which a filter may remove.
          const minScore = 1e-9;
          const full = await hits({ query, mode, topK: 100, minScore });
          const expected = full.filter((h) => allowed.has(h.documentId)).slice(0, topK);
          const got = await hits({ query, mode, topK, filter, minScore });
          const unfiltered = full.slice(0, topK).map((h) => h.id);
          if (got.length > 0 && got.some((h, i) => h.id !== unfiltered[i])) telling++;
          expect(got.every((h) => allowed.has(h.documentId))).toBe(true);
          expect(got.length).toBe(expected.length);
          // Hybrid scores depend on the query's best keyword match among the candidates, which a
          // filter may remove; keyword and semantic scores do not depend on the scope.
          if (mode !== 'hybrid') {
            expect(got.map((h) => h.id)).toEqual(expected.map((h) => h.id));
            got.forEach((h, i) => {
              expect(h.score).toBeCloseTo(expected[i]?.score ?? NaN, 9);
            });
          }
        },
      ),
      { numRuns: 40 },
    );
    expect(telling).toBeGreaterThan(10);
  }, 120_000);

  it('equals the ranking of a corpus holding only the matching documents', async () => {
    const filters = [
      { 'metadata.lang': 'de' },
      { $or: [{ 'metadata.year': { $gte: 2015 } }, { fileType: 'txt' }] },
    ];
    for (const filter of filters) {
      const names = new Set(
        CORPUS.filter((d) => {
          const doc = docs.find((x) => x.name === d.name);
          return doc !== undefined && matchesFilter(parseFilter(filter), doc);
        }).map((d) => d.name),
      );
      expect(names.size).toBeGreaterThan(2);
      const only = await corpusApp(CORPUS.filter((d) => names.has(d.name)));
      try {
        for (const query of ['river mountain', 'storm planet winter', 'library']) {
          const key = (h: Hit) => `${h.documentName}#${h.chunkIndex}`;
          const other = (body: Record<string, unknown>) =>
            only.k.hits(body) as unknown as Promise<Hit[]>;
          // Semantic: the same chunks, order and scores (cosine does not depend on the corpus).
          const semantic = await hits({ query, mode: 'semantic', topK: 10, filter });
          const semanticOnly = await other({ query, mode: 'semantic', topK: 10 });
          expect(semantic.map(key)).toEqual(semanticOnly.map(key));
          semantic.forEach((h, i) => {
            expect(h.score).toBeCloseTo(semanticOnly[i]?.score ?? NaN, 6);
          });
          // Keyword: the same chunks. BM25 statistics (idf, average length) stay those of the
          // whole index, as Lucene's filters keep them: a chunk scores the same whatever the
          // filter, so minScore means the same with and without one; the order may differ.
          // (minScore 0 keeps every match: the padding cut compares BM25s, which differ here.)
          const keyword = await hits({ query, mode: 'keyword', topK: 100, minScore: 0, filter });
          const keywordOnly = await other({ query, mode: 'keyword', topK: 100, minScore: 0 });
          expect(keyword.map(key).sort()).toEqual(keywordOnly.map(key).sort());
        }
      } finally {
        await only.t.close();
      }
    }
  }, 240_000);

  it('never gives fewer than topK when enough chunks match, however low they rank', async () => {
    const query = 'river';
    const full = await hits({ query, mode: 'semantic', topK: 100 });
    // The documents of the bottom half of the ranking only.
    const bottom = [...new Set(full.slice(Math.floor(full.length / 2)).map((h) => h.documentId))];
    const top = new Set(full.slice(0, 10).map((h) => h.documentId));
    const low = bottom.filter((id) => !top.has(id)).slice(0, 3);
    expect(low.length).toBeGreaterThan(0);
    const names = low.map((id) => docs.find((d) => d.id === id)?.name ?? '');
    const available = full.filter((h) => low.includes(h.documentId)).length;
    for (const mode of ['semantic', 'hybrid', 'keyword']) {
      const got = await hits({ query, mode, topK: 3, filter: { name: { $in: names } } });
      const expected = (await hits({ query, mode, topK: 100 })).filter((h) =>
        low.includes(h.documentId),
      );
      expect(got.length, mode).toBe(Math.min(3, expected.length));
      if (mode === 'semantic') expect(got.length).toBe(Math.min(3, available));
    }
  });

  it('documentId takes one id or an array; projectId, documentId and filter combine', async () => {
    const [a, b, c] = docs;
    if (a === undefined || b === undefined || c === undefined) throw new Error('corpus');
    const one = await hits({ query: 'river storm', mode: 'semantic', topK: 20, documentId: a.id });
    expect(new Set(one.map((h) => h.documentId))).toEqual(new Set([a.id]));
    const two = await hits({
      query: 'river storm',
      mode: 'semantic',
      topK: 50,
      documentId: [a.id, b.id],
    });
    expect(new Set(two.map((h) => h.documentId))).toEqual(new Set([a.id, b.id]));
    const fileType = b.fileType;
    const combined = await hits({
      query: 'river storm',
      mode: 'hybrid',
      topK: 50,
      projectId: 'corpus',
      documentId: [a.id, b.id, c.id],
      filter: { fileType },
    });
    const expected = [a, b, c].filter((d) => d.fileType === fileType).map((d) => d.id);
    expect([...new Set(combined.map((h) => h.documentId))].sort()).toEqual(expected.sort());
    expect(await hits({ query: 'river', projectId: 'elsewhere', filter: { fileType } })).toEqual(
      [],
    );
    expect(await hits({ query: 'river', filter: { 'metadata.lang': 'xx' } })).toEqual([]);
    for (const bad of [[], Array.from({ length: 101 }, (_, i) => `d${i}`), ['']]) {
      const res = await k.retrieve({ query: 'river', documentId: bad });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
    }
  });

  it('an invalid filter is a 400 naming the bad part', async () => {
    for (const [filter, message] of [
      [
        { 'metadata.year': { $gt: 'soon' } },
        'filter.metadata.year.$gt must be a number or an ISO date',
      ],
      [{ year: { $lt: [2020] } }, 'filter.year.$lt must be a number or an ISO date'],
      [
        { $or: [{ 'metadata.a': { $in: 'x' } }] },
        'filter.$or[0].metadata.a.$in must be a non-empty array',
      ],
      ['en', 'filter must be a JSON object'],
    ] as const) {
      const res = await k.retrieve({ query: 'river', filter });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'VALIDATION_ERROR',
        message: expect.stringContaining(message),
      });
    }
  });
});
