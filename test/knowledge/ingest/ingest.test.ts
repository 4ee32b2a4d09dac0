/** One-step upload-and-index, batch uploads and text documents (SQLite; PostgreSQL with TEST_DATABASE_URL). */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../../helpers.js';
import {
  fakeConverters,
  knowledgeApp,
  multipart,
  type DocumentBody,
  type KnowledgeClient,
  type Part,
} from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
beforeAll(async () => {
  const commandsFile = fakeConverters(mkdtempSync(join(tmpdir(), 'aps-ingest-')));
  ({ t, k } = await knowledgeApp({
    UPLOAD_MAX_BYTES: '4096',
    KNOWLEDGE_BATCH_MAX_FILES: '4',
    KNOWLEDGE_COMMANDS_FILE: commandsFile,
  }));
});
afterAll(() => t.close());

const scratch = () => (existsSync(join(t.dir, 'tmp')) ? readdirSync(join(t.dir, 'tmp')) : []);
const stored = () => t.ctx.knowledge.storage.list('documents');
const listed = async () =>
  (await k.get('/documents?limit=1000')).json<{ items: DocumentBody[] }>().items;

function post(path: string, parts: Part[]) {
  const body = multipart(parts);
  return t.app.inject({
    method: 'POST',
    url: k.url(path),
    headers: { ...bearer(t.key), ...body.headers },
    payload: body.payload,
  });
}

function postJson(path: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: k.url(path), headers: bearer(t.key), payload });
}

describe('upload with index=true', () => {
  it('answers 201 with the document indexing, and the run indexes it with the given settings', async () => {
    const doc = await k.uploadOk(
      'one-step.md',
      '# One step\n\nUploaded and indexed in one request.',
      {
        index: 'true',
        maxChars: '500',
        overlapChars: '50',
      },
    );
    expect(doc.status).toBe('indexing');
    const done = await k.waitFor(doc.id, ['indexed', 'failed']);
    expect(done.status, done.errorMessage ?? '').toBe('indexed');
    expect(done.converterMeta).toMatchObject({ chunking: { maxChars: 500 } });
  });

  it('rejects bad index fields with 400 before anything is stored', async () => {
    const before = { docs: (await stored()).length, list: (await listed()).length };
    const cases: [Record<string, string>, string][] = [
      [{ index: 'yes' }, 'VALIDATION_ERROR'],
      [{ index: 'true', maxChars: '10' }, 'VALIDATION_ERROR'],
      [{ index: 'true', maxChars: 'many' }, 'VALIDATION_ERROR'],
      [{ index: 'true', maxChars: '400', overlapChars: '400' }, 'VALIDATION_ERROR'],
      [{ index: 'true', commandId: 'nope' }, 'KNOWLEDGE_COMMAND_NOT_FOUND'],
      [{ metadata: '{"a":' }, 'VALIDATION_ERROR'],
      [{ metadata: '{"a":{"nested":1}}' }, 'VALIDATION_ERROR'],
    ];
    for (const [fields, code] of cases) {
      const res = await k.upload('bad-fields.txt', `bad fields ${JSON.stringify(fields)}`, fields);
      expect(res.json(), JSON.stringify(fields)).toMatchObject({ statusCode: 400, code });
    }
    expect(scratch()).toEqual([]);
    expect(await stored()).toHaveLength(before.docs);
    expect(await listed()).toHaveLength(before.list);
  });

  it('a duplicate is queued again (200); one being indexed already is answered as it is', async () => {
    const first = await k.uploadOk('dup-index.txt', 'duplicate and index');
    const again = await k.upload('dup-index.txt', 'duplicate and index', {
      index: 'true',
      commandId: 'slow',
    });
    expect(again.statusCode).toBe(200);
    expect(again.json<DocumentBody>()).toMatchObject({ id: first.id, status: 'indexing' });
    // The slow converter takes 0.7 s: a third upload meets the run under way.
    const third = await k.upload('dup-index.txt', 'duplicate and index', { index: 'true' });
    expect(third.statusCode).toBe(200);
    expect(third.json<DocumentBody>()).toMatchObject({ id: first.id, status: 'indexing' });
    const done = await k.waitFor(first.id, ['indexed', 'failed']);
    expect(done).toMatchObject({ status: 'indexed', converterCommand: 'slow' });
  });
});

describe('batch', () => {
  it('answers one item per part in order: created, empty, too large, duplicate; nothing of a refused file kept', async () => {
    const before = { docs: (await stored()).length, list: (await listed()).length };
    const res = await post('/documents/batch', [
      { name: 'file', filename: 'b1.txt', content: 'batch file one' },
      { name: 'file', filename: 'b2.txt', content: '' },
      { name: 'file', filename: 'b3.txt', content: 'x'.repeat(5000) },
      { name: 'file', filename: 'b4.txt', content: 'batch file one' },
      { name: 'projectId', value: 'batch' },
      { name: 'source', value: 'sync' },
      { name: 'metadata', value: '{"team":"docs"}' },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const { items } = res.json<{
      items: { name: string; status: number; document?: DocumentBody; error?: unknown }[];
    }>();
    expect(items.map((i) => [i.name, i.status])).toEqual([
      ['b1.txt', 201],
      ['b2.txt', 400],
      ['b3.txt', 413],
      ['b4.txt', 200],
    ]);
    expect(items[0]?.document).toMatchObject({
      projectId: 'batch',
      source: 'sync',
      status: 'uploaded',
      metadata: { team: 'docs' },
    });
    expect(items[3]?.document?.id).toBe(items[0]?.document?.id);
    expect(items[1]?.error).toEqual({
      statusCode: 400,
      code: 'KNOWLEDGE_DOCUMENT_EMPTY',
      message: expect.any(String),
    });
    expect(items[2]?.error).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(items[1]?.document).toBeUndefined();
    expect(scratch()).toEqual([]);
    expect(await stored()).toHaveLength(before.docs + 1);
    expect(await listed()).toHaveLength(before.list + 1);
  });

  it('with index=true queues each new file', async () => {
    const res = await post('/documents/batch', [
      { name: 'index', value: 'true' },
      { name: 'file', filename: 'bi1.md', content: '# First\n\nBatch indexed alpha.' },
      { name: 'file', filename: 'bi2.md', content: '# Second\n\nBatch indexed beta.' },
    ]);
    const { items } = res.json<{ items: { status: number; document: DocumentBody }[] }>();
    expect(items.map((i) => [i.status, i.document.status])).toEqual([
      [201, 'indexing'],
      [201, 'indexing'],
    ]);
    for (const item of items) {
      expect((await k.waitFor(item.document.id, ['indexed', 'failed'])).status).toBe('indexed');
    }
  });

  it('refuses the whole batch, keeping nothing: too many files (413), bad fields (400), no file (400), not multipart (415)', async () => {
    const before = { docs: (await stored()).length, list: (await listed()).length };
    const five = [1, 2, 3, 4, 5].map((n) => ({
      name: 'file',
      filename: `many${n}.txt`,
      content: `too many files ${n}`,
    }));
    expect((await post('/documents/batch', five)).json()).toMatchObject({
      statusCode: 413,
      code: 'PAYLOAD_TOO_LARGE',
    });
    const badField = await post('/documents/batch', [
      { name: 'file', filename: 'ok.txt', content: 'a fine file with a bad field' },
      { name: 'maxChars', value: '5' },
    ]);
    expect(badField.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_ERROR' });
    const none = await post('/documents/batch', [{ name: 'projectId', value: 'x' }]);
    expect(none.json()).toMatchObject({ statusCode: 400, code: 'KNOWLEDGE_DOCUMENT_REQUIRED' });
    const json = await postJson('/documents/batch', { file: 'x' });
    expect(json.json()).toMatchObject({ statusCode: 415 });
    expect(scratch()).toEqual([]);
    expect(await stored()).toHaveLength(before.docs);
    expect(await listed()).toHaveLength(before.list);
  });
});

describe('text', () => {
  it('creates md or txt by the name, de-duplicates, and can index', async () => {
    const md = await postJson('/documents/text', {
      name: 'Notes.MD',
      text: '# Title\n\nText ingest about <b>walruses</b>.',
      projectId: 'text',
      metadata: { lang: 'en' },
    });
    expect(md.statusCode, md.body).toBe(201);
    expect(md.json()).toMatchObject({
      name: 'Notes.MD',
      fileType: 'md',
      mimeType: 'text/markdown',
      source: 'text',
      projectId: 'text',
      status: 'uploaded',
      metadata: { lang: 'en' },
    });
    // HTML-looking text named .html is still text: the name decides md or txt only.
    const txt = await postJson('/documents/text', {
      name: 'page.html',
      text: '<html><body>Plain after all</body></html>',
      source: 'paste',
      index: true,
    });
    expect(txt.statusCode).toBe(201);
    expect(txt.json()).toMatchObject({ fileType: 'txt', source: 'paste', status: 'indexing' });
    const again = await postJson('/documents/text', {
      name: 'other.md',
      text: '# Title\n\nText ingest about <b>walruses</b>.',
      projectId: 'text',
    });
    expect(again.statusCode).toBe(200);
    expect(again.json<DocumentBody>().id).toBe(md.json<DocumentBody>().id);
    const indexed = await k.waitFor(txt.json<DocumentBody>().id, ['indexed', 'failed']);
    expect(indexed.status).toBe('indexed');
  });

  it('refuses text over the upload limit (413), empty text (400), bad bodies (400); nothing kept', async () => {
    const before = (await listed()).length;
    const big = await postJson('/documents/text', { name: 'big.txt', text: 'é'.repeat(2049) });
    expect(big.json()).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
    const empty = await postJson('/documents/text', { name: 'e.txt', text: '' });
    expect(empty.json()).toMatchObject({ statusCode: 400, code: 'KNOWLEDGE_DOCUMENT_EMPTY' });
    for (const body of [
      { text: 'no name' },
      { name: 'x.txt', text: 'extra', extra: 1 },
      { name: 'x.txt', text: 'meta', metadata: { list: [1, 2] } },
    ]) {
      expect((await postJson('/documents/text', body)).statusCode).toBe(400);
    }
    expect(scratch()).toEqual([]);
    expect(await listed()).toHaveLength(before);
  });
});

describe('OpenAPI', () => {
  it('documents the forms, bodies and errors of the new routes', async () => {
    type Op = {
      requestBody?: {
        content: Record<string, { schema: { properties?: Record<string, unknown> } }>;
      };
      responses: Record<string, unknown>;
    };
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<string, Record<string, Op>>;
    }>();
    const op = (method: string, path: string) =>
      doc.paths[`${t.prefix}/knowledge${path}`]?.[method];
    const batch = op('post', '/documents/batch');
    expect(batch?.requestBody?.content['multipart/form-data']?.schema.properties).toMatchObject({
      file: { type: 'array', items: { type: 'string', format: 'binary' } },
      index: { enum: ['true', 'false'] },
      metadata: { type: 'string' },
    });
    expect(Object.keys(batch?.responses ?? {})).toEqual(expect.arrayContaining(['200', '413']));
    const upload = op('post', '/documents/upload');
    expect(upload?.requestBody?.content['multipart/form-data']?.schema.properties).toHaveProperty(
      'maxChars',
    );
    expect(Object.keys(op('post', '/documents/url')?.responses ?? {})).toEqual(
      expect.arrayContaining(['201', '200', '400', '403', '413', '502']),
    );
    expect(op('post', '/documents/text')?.requestBody?.content['application/json']).toBeDefined();
    expect(Object.keys(op('patch', '/documents/{id}')?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '404']),
    );
  });
});
