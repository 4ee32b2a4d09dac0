/** Document metadata: set at upload, changed with PATCH (also renames), carried by retrieval hits. */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { bearer, createTestApp, tempDir, type TestApp } from '../../helpers.js';
import { knowledgeApp, type DocumentBody, type KnowledgeClient } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
});
afterAll(() => t.close());

const patch = (id: string, payload: Record<string, unknown>) =>
  t.app.inject({
    method: 'PATCH',
    url: k.url(`/documents/${id}`),
    headers: bearer(t.key),
    payload,
  });

type Doc = DocumentBody & { metadata: Record<string, unknown>; updatedAt: string };

describe('metadata', () => {
  it('defaults to {} and is set at upload from a JSON form field', async () => {
    const plain = await k.uploadOk('plain.txt', 'no metadata here');
    expect((plain as Doc).metadata).toEqual({});
    const meta = { author: 'Ada', year: 1843, draft: false, tags: ['math', 'engines'] };
    const doc = await k.uploadOk('meta.txt', 'with metadata', { metadata: JSON.stringify(meta) });
    expect((doc as Doc).metadata).toEqual(meta);
    expect((await k.get(`/documents/${doc.id}`)).json<Doc>().metadata).toEqual(meta);
  });

  it('PATCH renames and replaces the whole object; 404 unknown; 400 invalid', async () => {
    const doc = (await k.uploadOk('old-name.txt', 'to be patched', {
      metadata: '{"a":"1","b":2}',
    })) as Doc;
    const renamed = await patch(doc.id, { name: 'new-name.txt' });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'new-name.txt', metadata: { a: '1', b: 2 } });
    const replaced = await patch(doc.id, { metadata: { c: true } });
    expect(replaced.json<Doc>().metadata).toEqual({ c: true });
    expect(replaced.json<Doc>().name).toBe('new-name.txt');
    expect(Date.parse(replaced.json<Doc>().updatedAt)).toBeGreaterThanOrEqual(
      Date.parse(doc.updatedAt),
    );
    expect((await patch('nope', { name: 'x' })).json()).toMatchObject({
      statusCode: 404,
      code: 'KNOWLEDGE_DOCUMENT_NOT_FOUND',
    });
    const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    const sixtyFour = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
    for (const body of [
      { metadata: { nested: { no: 1 } } },
      { metadata: { list: [1, 2] } },
      { metadata: { nothing: null } },
      { metadata: tooMany },
      { metadata: { big: 'x'.repeat(16 * 1024) } },
      { metadata: [] },
      { name: '' },
      { other: 1 },
    ]) {
      expect((await patch(doc.id, body)).json(), JSON.stringify(body).slice(0, 80)).toMatchObject({
        statusCode: 400,
        code: 'VALIDATION_ERROR',
      });
    }
    expect((await patch(doc.id, { metadata: sixtyFour })).statusCode).toBe(200);
    expect((await k.get(`/documents/${doc.id}`)).json<Doc>().metadata).toEqual(sixtyFour);
  });

  it('every retrieval hit carries its document metadata as documentMetadata', async () => {
    const doc = await k.uploadOk('narwhals.md', '# Narwhals\n\nNarwhals have a long tusk.', {
      metadata: '{"topic":"whales"}',
    });
    await k.indexOk(doc.id);
    const other = await k.uploadOk('plain-narwhal.md', '# Plain\n\nA narwhal without metadata.');
    await k.indexOk(other.id);
    const hits = async () =>
      (await k.retrieve({ query: 'narwhal tusk', mode: 'keyword', topK: 10 })).json<{
        items: { documentId: string; documentMetadata: unknown }[];
      }>().items;
    const first = await hits();
    expect(first.find((h) => h.documentId === doc.id)?.documentMetadata).toEqual({
      topic: 'whales',
    });
    expect(first.find((h) => h.documentId === other.id)?.documentMetadata).toEqual({});
    await patch(doc.id, { metadata: { topic: 'tusks', level: 2 } });
    const after = await hits();
    expect(after.find((h) => h.documentId === doc.id)?.documentMetadata).toEqual({
      topic: 'tusks',
      level: 2,
    });
  });
});

describe('migration 0009', () => {
  it('gives documents that existed before it the metadata {}', async () => {
    const dir = tempDir();
    const old = await createTestApp({ dir, migrations: MIGRATIONS.slice(0, 8) });
    const now = new Date().toISOString();
    await sql`insert into knowledge_documents (id, name, file_type, mime_type, source, project_id,
      project_key, version, status, checksum, size_bytes, file_path, created_at, updated_at)
      values ('before-0009', 'old.txt', 'txt', 'text/plain', 'upload', null, '', 1, 'uploaded',
      'abc', 3, 'documents/before-0009/source.txt', ${now}, ${now})`.execute(old.ctx.database.db);
    await old.close(true);
    const current = await createTestApp({ dir });
    try {
      const res = await current.app.inject({
        method: 'GET',
        url: `${current.prefix}/knowledge/documents/before-0009`,
        // The key created by the first start (the same data directory and secrets).
        headers: bearer(old.key),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<Doc>()).toMatchObject({ name: 'old.txt', metadata: {} });
    } finally {
      await current.close();
    }
  });
});
