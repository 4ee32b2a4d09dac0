import { CLI } from '../../../src/audit/actor.js';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../../helpers.js';
import {
  knowledgeApp,
  multipart,
  storedFileExists,
  type DocumentBody,
  type KnowledgeClient,
} from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
beforeAll(async () => {
  ({ t, k } = await knowledgeApp({ UPLOAD_MAX_BYTES: '4096' }));
});
afterAll(() => t.close());

/** Scratch entries on disk (uploads being received) and stored files, on any storage driver. */
const files = async (sub: 'tmp' | 'documents') =>
  sub === 'tmp'
    ? existsSync(join(t.dir, sub))
      ? readdirSync(join(t.dir, sub))
      : []
    : t.ctx.knowledge.storage.list(sub);

describe('upload', () => {
  it('creates a document (201) with the spec fields, fields sent after the file', async () => {
    const content = '# Notes\n\nHello knowledge base.';
    const doc = await k.uploadOk('notes.md', content, { projectId: 'p1', source: 'console' });
    expect(doc).toMatchObject({
      name: 'notes.md',
      fileType: 'md',
      source: 'console',
      projectId: 'p1',
      version: 1,
      status: 'uploaded',
      checksum: createHash('sha256').update(content).digest('hex'),
      markdownPath: null,
      converterCommand: null,
      errorMessage: null,
    });
    expect(doc.filePath).toBe(`documents/${doc.id}/source.md`);
    expect(await storedFileExists(t, doc.filePath)).toBe(true);
    expect(Date.parse((doc as unknown as { createdAt: string }).createdAt)).not.toBeNaN();
  });

  it('reads fields sent before the file too, and defaults source to upload', async () => {
    const body = multipart([
      { name: 'projectId', value: 'p-before' },
      { name: 'file', filename: 'a.txt', content: 'fields before the file' },
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/upload'),
      headers: { ...bearer(t.key), ...body.headers },
      payload: body.payload,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ projectId: 'p-before', source: 'upload', fileType: 'txt' });
  });

  it('returns the existing document (200) for the same bytes in the same project', async () => {
    const first = await k.uploadOk('dup.txt', 'same bytes', { projectId: 'dup' });
    const again = await k.upload('other-name.txt', 'same bytes', { projectId: 'dup' });
    expect(again.statusCode).toBe(200);
    expect(again.json<DocumentBody>().id).toBe(first.id);
    const elsewhere = await k.upload('dup.txt', 'same bytes', { projectId: 'dup-2' });
    expect(elsewhere.statusCode).toBe(201);
    expect(await files('tmp')).toEqual([]);
  });

  it('detects the type from the content, not the name or the client header', async () => {
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a1d70000000049454e44ae426082',
      'hex',
    );
    const doc = await k.uploadOk('holiday.txt', png);
    expect(doc.fileType).toBe('png');
    expect(doc.filePath).toMatch(/source\.png$/);
  });

  it('sanitises path-traversal file names; files stay inside the data directory', async () => {
    for (const name of [
      '../../../../etc/passwd',
      '..\\..\\evil.txt',
      '/abs/path.txt',
      '....//x.txt',
      '\u0000nul.txt',
    ]) {
      const doc = await k.uploadOk(name, `traversal attempt ${name.length}`);
      expect(doc.name).not.toMatch(/[/\\]/);
      expect(doc.name).not.toContain(String.fromCharCode(0));
      expect(doc.name.startsWith('.')).toBe(false);
      expect(doc.filePath).toBe(`documents/${doc.id}/source.txt`);
    }
    expect(existsSync('/etc/passwd.txt')).toBe(false);
  });

  it('rejects: no file → 400, empty file → 400, not multipart → 415, too large → 413; nothing left behind', async () => {
    const before = {
      docs: (await files('documents')).length,
      list: (await k.get('/documents')).json<{ items: unknown[] }>().items.length,
    };
    const noFile = multipart([{ name: 'projectId', value: 'x' }]);
    const res1 = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/upload'),
      headers: { ...bearer(t.key), ...noFile.headers },
      payload: noFile.payload,
    });
    expect(res1.json()).toMatchObject({ statusCode: 400, code: 'KNOWLEDGE_DOCUMENT_REQUIRED' });
    expect((await k.upload('empty.txt', '')).json()).toMatchObject({
      statusCode: 400,
      code: 'KNOWLEDGE_DOCUMENT_EMPTY',
    });
    const json = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/upload'),
      headers: bearer(t.key),
      payload: { file: 'x' },
    });
    expect(json.json()).toMatchObject({ statusCode: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
    const big = await k.upload('big.txt', 'x'.repeat(5000));
    expect(big.json()).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(await files('tmp')).toEqual([]);
    expect(await files('documents')).toHaveLength(before.docs);
    expect((await k.get('/documents')).json<{ items: unknown[] }>().items).toHaveLength(
      before.list,
    );
  });

  it('only the upload routes take multipart forms: a JSON route answers one 415', async () => {
    const form = multipart([{ name: 'query', value: 'x' }]);
    const res = await t.app.inject({
      method: 'POST',
      url: k.url('/retrieve'),
      headers: { ...bearer(t.key), ...form.headers },
      payload: form.payload,
    });
    expect(res.json()).toMatchObject({ statusCode: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  });
});

describe('malformed uploads', () => {
  it('answer 400, never 500: broken multipart, two files; empty fields count as absent', async () => {
    const broken = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/upload'),
      headers: { ...bearer(t.key), 'content-type': 'multipart/form-data; boundary=xyz' },
      payload:
        '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nunterminated',
    });
    expect(broken.json()).toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    const two = multipart([
      { name: 'file', filename: 'a.txt', content: 'first file' },
      { name: 'file2', filename: 'b.txt', content: 'second file' },
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/upload'),
      headers: { ...bearer(t.key), ...two.headers },
      payload: two.payload,
    });
    expect(res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_ERROR' });
    const empty = await k.upload('e.txt', 'empty fields', { projectId: '', source: '' });
    expect(empty.statusCode).toBe(201);
    expect(empty.json()).toMatchObject({ projectId: null, source: 'upload' });
    expect(await files('tmp')).toEqual([]);
    expect(
      (await t.app.inject({ method: 'GET', url: `${k.url('/commands')}/`, headers: bearer(t.key) }))
        .statusCode,
    ).toBe(404);
  });
});

describe('aborted upload', () => {
  it('a client that disconnects mid-file leaves no file and no record', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    const before = (await k.get('/documents')).json<{ items: unknown[] }>().items.length;
    const boundary = 'abortboundary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.txt"\r\nContent-Type: text/plain\r\n\r\n`;
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST ${k.url('/documents/upload')} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 100000\r\n\r\n${head}${'x'.repeat(2000)}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 300));
    expect(await files('tmp')).toEqual([]);
    expect((await k.get('/documents')).json<{ items: unknown[] }>().items).toHaveLength(before);
  });
});

describe('list and get', () => {
  it('filters by projectId and status, newest first, bounded limit', async () => {
    const a = await k.uploadOk('l1.txt', 'list one', { projectId: 'list' });
    const b = await k.uploadOk('l2.txt', 'list two', { projectId: 'list' });
    const items = (await k.get('/documents?projectId=list')).json<{ items: DocumentBody[] }>()
      .items;
    expect(items.map((d) => d.id)).toEqual([b.id, a.id]);
    expect(
      (await k.get('/documents?projectId=list&limit=1'))
        .json<{ items: DocumentBody[] }>()
        .items.map((d) => d.id),
    ).toEqual([b.id]);
    expect(
      (await k.get('/documents?status=indexed&projectId=list')).json<{ items: unknown[] }>().items,
    ).toEqual([]);
    for (const bad of ['limit=0', 'limit=1001', 'limit=abc', 'status=done', 'projectId=']) {
      const res = await k.get(`/documents?${bad}`);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    expect((await k.get(`/documents/${a.id}`)).json()).toMatchObject({ id: a.id, name: 'l1.txt' });
    expect((await k.get('/documents/nope')).json()).toMatchObject({
      statusCode: 404,
      code: 'KNOWLEDGE_DOCUMENT_NOT_FOUND',
    });
    expect((await k.get('/documents/nope/chunks')).json()).toMatchObject({
      statusCode: 404,
      code: 'KNOWLEDGE_DOCUMENT_NOT_FOUND',
    });
  });

  it('needs level L0', async () => {
    const worker = await t.ctx.apiKeys.create({
      name: 'w',
      level: 'L1',
      actor: CLI,
      origin: 'cli',
    });
    const res = await t.app.inject({
      method: 'GET',
      url: k.url('/documents'),
      headers: bearer(worker.rawKey),
    });
    expect(res.json()).toMatchObject({ statusCode: 403, code: 'AUTH_FORBIDDEN' });
    expect((await t.app.inject({ method: 'GET', url: k.url('/commands') })).statusCode).toBe(401);
  });
});

describe('commands and converter status', () => {
  it('lists the built-in commands and resolves the bundled converter', async () => {
    const commands = (await k.get('/commands')).json<{
      items: { id: string; description: string }[];
    }>().items;
    expect(commands.map((c) => c.id)).toEqual(expect.arrayContaining(['auto', 'text']));
    for (const c of commands) expect(c.description.length).toBeGreaterThan(10);
    const status = (await k.get('/converter/status')).json<{ installed: boolean; path: string }>();
    expect(status.installed).toBe(true);
    expect(status.path).toMatch(/^\/.*cli\.js$/);
  });

  it('reports a configured converter that does not exist', async () => {
    const { t: other, k: ko } = await knowledgeApp({
      KNOWLEDGE_CONVERTER_PATH: '/nonexistent/aps-convert',
    });
    try {
      expect((await ko.get('/converter/status')).json()).toEqual({
        installed: false,
        path: null,
      });
      const doc = await ko.uploadOk('a.txt', 'text');
      const res = await ko.index(doc.id);
      expect(res.json()).toMatchObject({
        statusCode: 500,
        code: 'KNOWLEDGE_CONVERTER_BINARY_MISSING',
      });
      expect((await ko.get(`/documents/${doc.id}`)).json()).toMatchObject({
        status: 'failed',
        errorMessage: expect.any(String),
      });
    } finally {
      await other.close();
    }
  });
});
