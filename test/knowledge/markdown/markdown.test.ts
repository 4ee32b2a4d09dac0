/** GET …/documents/:id/markdown: whole, page ranges, chunk ranges, budgets and refusals. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../../helpers.js';
import { KnowledgeClient } from '../helpers.js';

const PAGED = [
  'Cover text.',
  '<!-- page: 2 -->',
  '## Two',
  'alpha beta gamma',
  '<!-- page: 3 -->',
  '## Three',
  'delta epsilon',
].join('\n\n');

let t: TestApp;
let k: KnowledgeClient;
let paged: string;
let plain: string;
let notIndexed: string;

async function addText(name: string, text: string, index: boolean): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: k.url('/documents/text'),
    headers: bearer(t.key),
    payload: { name, text, index },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>().id;
}

beforeAll(async () => {
  t = await createTestApp();
  k = new KnowledgeClient(t);
  paged = await addText('paged.md', PAGED, true);
  plain = await addText('plain.txt', 'word '.repeat(1200).trim(), false);
  await k.indexOk(plain, { maxChars: 400, overlapChars: 100 });
  notIndexed = await addText('later.md', 'not yet', false);
  await k.waitFor(paged, ['indexed'], 60_000);
}, 90_000);
afterAll(() => t.close());

const read = (id: string, query = '') => k.get(`/documents/${id}/markdown${query}`);

describe('the markdown route', () => {
  it('answers the whole markdown with its page count', async () => {
    const res = await read(paged);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ markdown: string; totalChars: number }>();
    expect(body).toMatchObject({
      documentId: paged,
      name: 'paged.md',
      pages: 3,
      fromPage: null,
      truncated: false,
    });
    // The stored markdown is the converter's: the text, ending in a line end.
    expect(body.markdown.trimEnd()).toBe(PAGED);
    expect(body.totalChars).toBe(body.markdown.length);
  });

  it('answers a page range, markers included; past the end stops at the last page', async () => {
    const one = (await read(paged, '?fromPage=1')).json<{ markdown: string }>();
    expect(one.markdown).toBe('Cover text.\n\n');
    const body = (await read(paged, '?fromPage=2&toPage=9')).json<Record<string, unknown>>();
    expect(body).toMatchObject({ fromPage: 2, toPage: 3 });
    expect((body.markdown as string).trimEnd()).toBe(
      PAGED.slice(PAGED.indexOf('<!-- page: 2 -->')),
    );
  });

  it('answers a chunk range as the exact text, overlap counted once', async () => {
    const chunks = (await k.get(`/documents/${plain}/chunks`)).json<{
      items: { chunkIndex: number; content: string }[];
    }>().items;
    expect(chunks.length).toBeGreaterThan(3);
    const res = (await read(plain, '?fromChunk=1&toChunk=2')).json<{
      markdown: string;
      chunkCount: number;
    }>();
    expect(res.chunkCount).toBe(chunks.length);
    expect(res.markdown.startsWith(chunks[1]?.content ?? 'x')).toBe(true);
    expect(res.markdown.endsWith(chunks[2]?.content ?? 'x')).toBe(true);
    // Overlapping chunks: the range is shorter than the two contents together.
    expect(res.markdown.length).toBeLessThan(
      (chunks[1]?.content.length ?? 0) + (chunks[2]?.content.length ?? 0),
    );
  });

  it('cuts to maxChars at a word or line end', async () => {
    const res = (await read(plain, '?maxChars=50')).json<{
      markdown: string;
      truncated: boolean;
      totalChars: number;
    }>();
    expect(res.truncated).toBe(true);
    expect(res.markdown.length).toBeLessThanOrEqual(50);
    expect(res.markdown.endsWith('word')).toBe(true);
    expect(res.totalChars).toBeGreaterThanOrEqual(1200 * 5 - 1);
  });

  it('refuses what it cannot answer with catalogue errors', async () => {
    const cases: [string, string, number, string][] = [
      [paged, '?fromPage=1&fromChunk=0', 400, 'VALIDATION_ERROR'],
      [paged, '?fromPage=4', 400, 'BAD_REQUEST'],
      [paged, '?fromPage=3&toPage=2', 400, 'BAD_REQUEST'],
      [paged, '?fromPage=0', 400, 'VALIDATION_ERROR'],
      [plain, '?fromPage=1', 400, 'BAD_REQUEST'],
      [plain, '?fromChunk=999', 400, 'BAD_REQUEST'],
      [notIndexed, '', 409, 'KNOWLEDGE_DOCUMENT_NOT_INDEXED'],
      ['missing', '', 404, 'KNOWLEDGE_DOCUMENT_NOT_FOUND'],
    ];
    for (const [id, query, status, code] of cases) {
      const res = await read(id, query);
      expect(res.statusCode, `${id}${query}: ${res.body}`).toBe(status);
      expect(res.json()).toMatchObject({ statusCode: status, code });
    }
  });
});
