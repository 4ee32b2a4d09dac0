/**
 * Document lists: `filter` (the same language as retrieval, on SQLite and PostgreSQL alike: the
 * lists are compared with the JS evaluator), `q`, `order`, cursor paging past 1,000 documents,
 * and GET /knowledge/projects.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchesFilter } from '../../../src/knowledge/filter/evaluate.js';
import { parseFilter } from '../../../src/knowledge/filter/filter.js';
import type { TestApp } from '../../helpers.js';
import { knowledgeApp, type KnowledgeClient } from '../helpers.js';

interface Doc {
  id: string;
  name: string;
  fileType: string;
  source: string;
  projectId: string | null;
  createdAt: string;
  updatedAt: string;
  metadata: Record<string, unknown>;
}
interface Page {
  items: Doc[];
  nextCursor: string | null;
}

let t: TestApp;
let k: KnowledgeClient;
beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
});
afterAll(() => t.close());

const list = async (params: Record<string, string | number>) => {
  const query = new URLSearchParams(
    Object.entries(params).map(([a, b]): [string, string] => [a, String(b)]),
  );
  return k.get(`/documents?${query.toString()}`);
};
const listOk = async (params: Record<string, string | number>) => {
  const res = await list(params);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Page>();
};

const LANGS = ['en', 'de', 'fr'];
const DATES = [
  '2023-01-15',
  '2023-06-01T10:00:00Z',
  '2024-02-29',
  '2024-05-01T12:30:00+02:00',
  'not a date',
];

/** Rows written straight to the table: 1,000+ documents in well under a second. */
async function insertDocuments(
  count: number,
  prefix: string,
  project: string | null,
  meta: (i: number) => Record<string, unknown>,
) {
  const base = Date.UTC(2024, 0, 1);
  const rows = Array.from({ length: count }, (_, i) => {
    const id = `${prefix}-${String(i).padStart(5, '0')}`;
    const at = new Date(base + (i % 7) * 60_000).toISOString(); // ties on purpose
    return {
      id,
      name: `${prefix} Dokument ${i % 50}.${i % 3 === 0 ? 'pdf' : 'md'}`,
      file_type: i % 3 === 0 ? 'pdf' : 'md',
      mime_type: 'text/markdown',
      source: i % 4 === 0 ? 'url' : 'upload',
      project_id: project,
      project_key: project ?? '',
      version: 1,
      status: 'uploaded' as const,
      checksum: id,
      size_bytes: 1,
      file_path: `documents/${id}`,
      markdown_path: null,
      converter_command: null,
      converter_meta: null,
      error_message: null,
      embedding_model: null,
      index_token: null,
      index_params: null,
      metadata: JSON.stringify(meta(i)),
      progress: null,
      created_at: at,
      updated_at: at,
    };
  });
  for (let i = 0; i < rows.length; i += 200) {
    await t.ctx.database.db
      .insertInto('knowledge_documents')
      .values(rows.slice(i, i + 200))
      .execute();
  }
}

describe('filters on lists (the same meaning on both engines)', () => {
  let all: Doc[] = [];
  beforeAll(async () => {
    await insertDocuments(60, 'f', 'filters', (i) => ({
      ...(i % 5 === 0 ? {} : { lang: LANGS[i % 3] }),
      year: 2015 + (i % 10),
      ...(i % 4 === 0 ? { year: String(2015 + (i % 10)) } : {}),
      draft: i % 2 === 0,
      tags: i % 3 === 1 ? ['alpha', 'beta'] : ['gamma'],
      published: DATES[i % DATES.length],
      score: (i % 7) / 2,
    }));
    all = (await listOk({ projectId: 'filters', limit: 1000 })).items;
    expect(all).toHaveLength(60);
  });

  const expectSame = async (filter: unknown) => {
    const expected = all
      .filter((d) => matchesFilter(parseFilter(filter), d))
      .map((d) => d.id)
      .sort();
    const got = (
      await listOk({ projectId: 'filters', limit: 1000, filter: JSON.stringify(filter) })
    ).items
      .map((d) => d.id)
      .sort();
    expect(got, JSON.stringify(filter)).toEqual(expected);
    return got.length;
  };

  it('answers documented examples as the evaluator does', async () => {
    const examples: unknown[] = [
      { 'metadata.lang': 'en' },
      { lang: 'en' },
      { lang: 'en', year: { $gte: 2018 } },
      { 'metadata.lang': { $ne: 'en' } },
      { 'metadata.lang': { $exists: false } },
      { 'metadata.year': { $gte: 2018, $lt: 2021 } },
      { 'metadata.year': '2019' },
      { 'metadata.tags': 'beta' },
      { 'metadata.tags': { $nin: ['alpha'] } },
      { 'metadata.draft': true },
      { 'metadata.score': 1.5 },
      { 'metadata.score': { $gt: 1.25 } },
      { 'metadata.published': { $gte: '2023-06-01T10:00Z' } },
      { 'metadata.published': { $lt: '2024-05-01T10:30:00Z' } },
      { 'metadata.published': { $lte: '2024-05-01T10:30:00Z' } },
      { fileType: 'pdf', source: { $in: ['url'] } },
      { createdAt: { $gte: '2024-01-01T00:03:00Z' } },
      { createdAt: '2024-01-01T01:02:00+01:00' },
      { $or: [{ 'metadata.lang': 'fr' }, { 'metadata.tags': { $in: ['alpha'] } }] },
      {
        $and: [
          { 'metadata.draft': false },
          { $or: [{ fileType: 'md' }, { 'metadata.year': { $lte: 2016 } }] },
        ],
      },
    ];
    let matched = 0;
    for (const filter of examples) if ((await expectSame(filter)) > 0) matched++;
    expect(matched).toBeGreaterThan(14); // the examples are not vacuous
  });

  it('random filters: the engine and the evaluator agree', async () => {
    const key = fc.constantFrom(
      'metadata.lang',
      'metadata.year',
      'metadata.tags',
      'metadata.draft',
      'metadata.published',
      'metadata.score',
      'metadata.none',
      'lang',
      'year',
    );
    const value = fc.oneof(
      fc.constantFrom(...LANGS, 'alpha', 'beta', 'gamma', '2019', ...DATES.slice(0, 4)),
      fc.integer({ min: 2014, max: 2025 }),
      fc.constantFrom(0, 0.5, 1.5, 3),
      fc.boolean(),
    );
    const bound = fc.oneof(
      fc.integer({ min: 2014, max: 2025 }),
      fc.constantFrom(1, 2.5, ...DATES.slice(0, 4), '2023-06-01T12:00:00+02:00'),
    );
    const leaf = fc.oneof(
      fc.record({ k: key, v: value }).map(({ k: f, v }) => ({ [f]: v })),
      fc
        .record({ k: key, op: fc.constantFrom('$ne', '$eq'), v: value })
        .map(({ k: f, op, v }) => ({ [f]: { [op]: v } })),
      fc
        .record({
          k: key,
          op: fc.constantFrom('$in', '$nin'),
          v: fc.array(value, { minLength: 1, maxLength: 3 }),
        })
        .map(({ k: f, op, v }) => ({ [f]: { [op]: v } })),
      fc
        .record({ k: key, op: fc.constantFrom('$gt', '$gte', '$lt', '$lte'), v: bound })
        .map(({ k: f, op, v }) => ({ [f]: { [op]: v } })),
      fc.record({ k: key, v: fc.boolean() }).map(({ k: f, v }) => ({ [f]: { $exists: v } })),
    );
    const filter = fc.letrec<{ node: Record<string, unknown> }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc
          .record({
            op: fc.constantFrom('$and', '$or'),
            nodes: fc.array(tie('node'), { minLength: 1, maxLength: 3 }),
          })
          .map(({ op, nodes }) => ({ [op]: nodes })),
      ),
    })).node;
    await fc.assert(
      fc.asyncProperty(filter, async (f) => {
        await expectSame(f);
      }),
      { numRuns: 80 },
    );
  });

  it('q: the name contains it, in any case', async () => {
    const got = (await listOk({ projectId: 'filters', limit: 1000, q: 'DOKUMENT 1' })).items;
    expect(got.length).toBeGreaterThan(0);
    expect(got.map((d) => d.id).sort()).toEqual(
      all
        .filter((d) => d.name.toLowerCase().includes('dokument 1'))
        .map((d) => d.id)
        .sort(),
    );
    const pct = (await listOk({ projectId: 'filters', q: '%' })).items;
    expect(pct).toEqual([]); // no LIKE wildcard
  });

  it('an invalid filter, order or cursor is a 400 naming it', async () => {
    for (const [params, message] of [
      [
        { filter: '{"metadata.year":{"$gt":"soon"}}' },
        'filter.metadata.year.$gt must be a number or an ISO date',
      ],
      [{ filter: '{"lang":{"$exists":1}}' }, 'filter.lang.$exists must be true or false'],
      [{ filter: 'nope' }, 'filter must be a JSON object'],
      [{ cursor: 'garbage' }, 'cursor is not a cursor this list returned'],
      [{ order: 'size' }, 'order'],
    ] as const) {
      const res = await list(params);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'VALIDATION_ERROR',
        message: expect.stringContaining(message),
      });
    }
    const first = await listOk({ projectId: 'filters', limit: 5, order: 'name' });
    const res = await list({ projectId: 'filters', limit: 5, cursor: first.nextCursor ?? '' });
    expect(res.json()).toMatchObject({
      statusCode: 400,
      message: 'cursor belongs to order=name, not order=-createdAt',
    });
  });
});

describe('paging', () => {
  const pageThrough = async (
    params: Record<string, string | number>,
    between?: (page: number) => Promise<void>,
  ) => {
    const seen: Doc[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = await listOk({ ...params, ...(cursor === null ? {} : { cursor }) });
      seen.push(...page.items);
      cursor = page.nextCursor;
      pages++;
      if (between !== undefined) await between(pages);
    } while (cursor !== null);
    return { seen, pages };
  };

  it('lists 1,050 documents in pages, each exactly once, while documents are added', async () => {
    await insertDocuments(1050, 'p', 'paging', (i) => ({ n: i }));
    const added: string[] = [];
    for (const order of ['-createdAt', 'createdAt', 'name', '-name', 'updatedAt', '-updatedAt']) {
      const { seen, pages } = await pageThrough(
        { projectId: 'paging', limit: 100, order },
        async (page) => {
          const res = await t.app.inject({
            method: 'POST',
            url: k.url('/documents/text'),
            headers: { authorization: `Bearer ${t.key}` },
            payload: {
              name: `added ${order} ${page}.md`,
              text: `added ${order} ${page}`,
              projectId: 'paging',
            },
          });
          expect(res.statusCode, res.body).toBe(201);
          added.push(res.json<Doc>().id);
        },
      );
      expect(pages).toBeGreaterThanOrEqual(11);
      const ids = seen.map((d) => d.id);
      expect(new Set(ids).size, order).toBe(ids.length); // never twice
      const originals = ids.filter((id) => id.startsWith('p-'));
      expect(originals.length, order).toBe(1050); // every one
      // In the order asked for (ties by id).
      const { column, desc } = {
        column: order.replace('-', '') as 'createdAt' | 'updatedAt' | 'name',
        desc: order.startsWith('-'),
      };
      const sorted = [...seen].sort((a, b) => {
        const c =
          a[column] < b[column]
            ? -1
            : a[column] > b[column]
              ? 1
              : a.id < b.id
                ? -1
                : a.id > b.id
                  ? 1
                  : 0;
        return desc ? -c : c;
      });
      if (column !== 'name') expect(seen.map((d) => d.id)).toEqual(sorted.map((d) => d.id));
    }
    // The default limit and bounds stay: 100 by default, 1..1000.
    expect((await listOk({ projectId: 'paging' })).items).toHaveLength(100);
    expect((await list({ limit: 1001 })).statusCode).toBe(400);
    const whole = await listOk({ projectId: 'paging', limit: 1000 });
    expect(whole.items).toHaveLength(1000);
    expect(whole.nextCursor).not.toBeNull();
  });

  it('pages combine with a filter', async () => {
    const { seen } = await pageThrough({
      projectId: 'paging',
      limit: 7,
      filter: JSON.stringify({ 'metadata.n': { $lt: 40 } }),
    });
    expect(seen.map((d) => d.metadata.n).sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 40 }, (_, i) => i),
    );
  });
});

describe('GET /knowledge/projects', () => {
  it('lists project ids with document and chunk counts and the newest update; no project is its own row', async () => {
    const a = await k.uploadOk('one.md', '# One\n\nalpha text about rivers', {
      projectId: 'proj-a',
    });
    await k.indexOk(a.id);
    const b = await k.uploadOk('two.md', '# Two\n\nbeta text about mountains', {
      projectId: 'proj-a',
    });
    const loose = await k.uploadOk('loose.md', '# Loose\n\nno project here');
    await k.indexOk(loose.id);
    const res = await k.get('/projects');
    expect(res.statusCode, res.body).toBe(200);
    const items = res.json<{
      items: {
        projectId: string | null;
        documentCount: number;
        chunkCount: number;
        updatedAt: string;
      }[];
    }>().items;
    expect(items[0]?.projectId).toBeNull();
    const byId = new Map(items.map((p) => [p.projectId, p]));
    const chunksOf = async (id: string) =>
      (await k.get(`/documents/${id}/chunks`)).json<{ items: unknown[] }>().items.length;
    expect(byId.get('proj-a')).toMatchObject({
      documentCount: 2,
      chunkCount: await chunksOf(a.id),
    });
    expect(byId.get(null)).toMatchObject({
      documentCount: 1,
      chunkCount: await chunksOf(loose.id),
    });
    const docs = (await listOk({ projectId: 'proj-a' })).items;
    expect(byId.get('proj-a')?.updatedAt).toBe(
      docs
        .map((d) => d.updatedAt)
        .sort()
        .at(-1),
    );
    // A deleted document no longer counts.
    expect((await k.delete(b.id)).statusCode).toBe(200);
    const after = (await k.get('/projects')).json<{
      items: { projectId: string | null; documentCount: number }[];
    }>().items;
    expect(after.find((p) => p.projectId === 'proj-a')?.documentCount).toBe(1);
  }, 90_000); // the first index loads the embedding model
});
