import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, type TestApp } from '../../helpers.js';
import { fakeConverters, indexRowCount, KnowledgeClient, knowledgeApp } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
beforeAll(async () => {
  const dir = tempDir();
  ({ t, k } = await knowledgeApp(
    { KNOWLEDGE_COMMANDS_FILE: fakeConverters(dir), CONVERTER_TIMEOUT_MS: '1500' },
    dir,
  ));
});
afterAll(() => t.close());

const HTML = `<!doctype html><html><head><title>Fleet</title><script>var tracking = 1;</script></head><body>
<h1>Fleet handbook</h1>
<h2>Maintenance</h2>
<p>Every vehicle gets an oil change each 15,000 kilometres. Tyres are rotated at every second service.</p>
<h2>Costs</h2>
<table><thead><tr><th>Item</th><th>Price</th></tr></thead>
<tbody><tr><td>Oil change</td><td>80 EUR</td></tr><tr><td>Tyre rotation</td><td>40 EUR</td></tr></tbody></table>
</body></html>`;

type Chunk = {
  id: string;
  chunkIndex: number;
  sectionPath: string;
  page: number | null;
  content: string;
  tokenEstimate: number;
  metadata: Record<string, unknown>;
};

describe('index', () => {
  it('converts, chunks, embeds and records what ran; re-indexing bumps the version', async () => {
    const doc = await k.uploadOk('fleet.html', HTML, { projectId: 'fleet' });
    const result = await k.indexOk(doc.id, { maxChars: 400, overlapChars: 40 });
    expect(result.chunkCount).toBeGreaterThan(0);
    expect(result.embeddingModel).toBe(t.ctx.knowledge.embedder.model);
    expect(result.document).toMatchObject({
      id: doc.id,
      status: 'indexed',
      version: 2,
      converterCommand: 'auto',
      errorMessage: null,
    });
    expect(result.document.converterMeta).toMatchObject({
      command: 'auto',
      converter: 'aps-convert',
      converterVersion: expect.any(String),
      chunking: { maxChars: 400, overlapChars: 40, chunkCount: result.chunkCount },
      embedding: { model: result.embeddingModel, dimensions: t.ctx.knowledge.embedder.dimensions },
      timings: {
        convertMs: expect.any(Number),
        chunkMs: expect.any(Number),
        embedMs: expect.any(Number),
      },
    });
    const markdown = await t.ctx.knowledge.storage.readText(result.document.markdownPath!);
    expect(markdown).toContain('| Oil change | 80 EUR |');
    expect(markdown).not.toContain('tracking');

    const chunks = (await k.get(`/documents/${doc.id}/chunks`)).json<{ items: Chunk[] }>().items;
    expect(chunks).toHaveLength(result.chunkCount);
    expect(chunks.map((c) => c.chunkIndex)).toEqual(chunks.map((_, i) => i));
    expect(chunks.map((c) => c.sectionPath)).toContain('Fleet handbook > Costs');
    expect(
      chunks.every((c) => c.content.length <= 400 && c.page === null && c.tokenEstimate > 0),
    ).toBe(true);
    expect(chunks[0]!.metadata).toMatchObject({
      startOffset: expect.any(Number),
      endOffset: expect.any(Number),
    });

    const again = await k.indexOk(doc.id, { maxChars: 800 });
    expect(again.document.version).toBe(3);
    expect(again.document.converterMeta).toMatchObject({
      chunking: { maxChars: 800, overlapChars: 120 },
    });
    const after = (await k.get(`/documents/${doc.id}/chunks`)).json<{ items: Chunk[] }>().items;
    expect(after.some((c) => chunks.some((old) => old.id === c.id))).toBe(false);
    // The previous markdown file is replaced, not accumulated.
    expect(
      (await t.ctx.knowledge.storage.list(`documents/${doc.id}`)).filter((f) => f.endsWith('.md')),
    ).toHaveLength(1);
  });

  it('keeps the old chunks searchable while re-indexing', async () => {
    const doc = await k.uploadOk(
      'reindex.md',
      '# Owls\n\nBarn owls hunt mice at night over open fields.',
    );
    await k.indexOk(doc.id);
    const reindex = k.index(doc.id, { commandId: 'slow' });
    await k.waitFor(doc.id, ['indexing']);
    const during = await k.hits({ query: 'barn owls hunt mice', documentId: doc.id });
    expect(during[0]?.content).toContain('Barn owls');
    expect((await reindex).statusCode).toBe(201);
    const after = await k.hits({ query: 'slowly converted turtles', documentId: doc.id });
    expect(after[0]?.content).toContain('turtles');
    expect(
      await k.hits({ query: 'barn owls hunt mice', documentId: doc.id, mode: 'keyword' }),
    ).toEqual([]);
  });

  it('validates parameters without touching the document', async () => {
    const doc = await k.uploadOk('v.txt', 'validation text');
    for (const [body, code] of [
      [{ commandId: 'nope' }, 'KNOWLEDGE_COMMAND_NOT_FOUND'],
      [{ maxChars: 100 }, 'VALIDATION_ERROR'],
      [{ maxChars: 9000 }, 'VALIDATION_ERROR'],
      [{ maxChars: 1000, overlapChars: 1000 }, 'VALIDATION_ERROR'],
      [{ maxChars: 400, overlapChars: 1600 }, 'VALIDATION_ERROR'],
      [{ overlapChars: 1400 }, 'VALIDATION_ERROR'],
      [{ overlapChars: 8000 }, 'VALIDATION_ERROR'],
      [{ overlapChars: -1 }, 'VALIDATION_ERROR'],
    ] as const) {
      const res = await k.index(doc.id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toMatchObject({ code });
      if ('overlapChars' in body) {
        expect(res.json<{ message: string }>().message).toContain('body.overlapChars');
      }
    }
    expect((await k.get(`/documents/${doc.id}`)).json()).toMatchObject({
      status: 'uploaded',
      version: 1,
    });
    expect((await k.index('missing')).json()).toMatchObject({
      statusCode: 404,
      code: 'KNOWLEDGE_DOCUMENT_NOT_FOUND',
    });
  });

  it('accepts any overlap below maxChars, applies at most half and records both', async () => {
    const doc = await k.uploadOk('overlap.md', `# Overlap\n\n${'Words of prose. '.repeat(300)}`);
    // The reference console allows overlap up to min(1600, maxChars - 50).
    const result = await k.indexOk(doc.id, { maxChars: 1000, overlapChars: 600 });
    const meta = result.document.converterMeta as { chunking: object; warnings: string[] };
    expect(meta.chunking).toMatchObject({
      maxChars: 1000,
      requestedOverlapChars: 600,
      overlapChars: 500,
      chunkCount: result.chunkCount,
    });
    expect(meta.warnings).toEqual([expect.stringMatching(/overlapChars 600 .* 500/)]);
    const chunks = (await k.get(`/documents/${doc.id}/chunks`)).json<{ items: Chunk[] }>().items;
    expect(chunks.length).toBeGreaterThan(1);
    // Neighbours share at most the applied overlap.
    for (let i = 1; i < chunks.length; i++) {
      const prev = chunks[i - 1]!.metadata as { endOffset: number };
      const next = chunks[i]!.metadata as { startOffset: number };
      expect(prev.endOffset - next.startOffset).toBeLessThanOrEqual(500);
    }
    // A re-index keeps the request, so it records the same.
    const again = await t.ctx.knowledge.indexing.reindex(doc.id);
    expect(again.document.converterMeta).toMatchObject({
      chunking: { requestedOverlapChars: 600, overlapChars: 500 },
    });

    const plain = await k.indexOk(doc.id, { maxChars: 1000, overlapChars: 500 });
    expect(plain.document.converterMeta).toMatchObject({
      chunking: { requestedOverlapChars: 500, overlapChars: 500 },
      warnings: [],
    });
  });

  it('async: 202 at once with the document indexing, then indexed', async () => {
    const doc = await k.uploadOk('async.md', '# Async\n\nIndexed in the background.');
    const res = await k.index(doc.id, { async: true });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ document: { id: doc.id, status: 'indexing' } });
    expect((await k.waitFor(doc.id, ['indexed', 'failed'])).status).toBe('indexed');
  });

  it('a second index request while one runs → 409; the queue counts the job', async () => {
    const doc = await k.uploadOk('slow.txt', 'slow document');
    const first = k.index(doc.id, { commandId: 'slow' });
    await k.waitFor(doc.id, ['indexing']);
    const second = await k.index(doc.id);
    expect(second.json()).toMatchObject({ statusCode: 409, code: 'KNOWLEDGE_INDEX_IN_PROGRESS' });
    // A shared (PostgreSQL) queue's counts are refreshed in the background: poll.
    await expect
      .poll(
        async () =>
          (await t.app.inject({ method: 'GET', url: '/health' })).json<{
            queue: { byType: Record<string, { running: number }> };
          }>().queue.byType.knowledgeIndex!.running,
        { interval: 50, timeout: 600 },
      )
      .toBe(1);
    expect((await first).statusCode).toBe(201);
  });

  it('fails cleanly: unsupported format, hanging converter (killed), crashing converter', async () => {
    const sqliteFile = Buffer.concat([Buffer.from('SQLite format 3\u0000'), Buffer.alloc(100, 1)]);
    const image = await k.uploadOk('x.db', sqliteFile);
    const r1 = await k.index(image.id);
    expect(r1.json()).toMatchObject({ statusCode: 422, code: 'KNOWLEDGE_UNSUPPORTED_FORMAT' });
    expect((await k.get(`/documents/${image.id}`)).json()).toMatchObject({
      status: 'failed',
      errorMessage: expect.stringMatching(/sqlite|SQLite|not support/),
    });

    const doc = await k.uploadOk('h.txt', 'will hang');
    const r2 = await k.index(doc.id, { commandId: 'hang' });
    expect(r2.json()).toMatchObject({ statusCode: 504, code: 'KNOWLEDGE_CONVERTER_TIMEOUT' });
    expect((await k.get(`/documents/${doc.id}`)).json()).toMatchObject({
      status: 'failed',
      errorMessage: expect.stringMatching(/1(\.5)? s/),
    });

    const r3 = await k.index(doc.id, { commandId: 'crash' });
    expect(r3.json()).toMatchObject({ statusCode: 502, code: 'KNOWLEDGE_CONVERTER_FAILED' });
    // A failed document can be indexed again.
    expect((await k.indexOk(doc.id)).document.status).toBe('indexed');
    expect(readdirSync(join(t.dir, 'tmp')).filter((f) => f.startsWith('convert-'))).toEqual([]);
  });
});

describe('delete', () => {
  it('removes the record, chunks, index rows and files', async () => {
    const doc = await k.uploadOk(
      'gone.md',
      '# Gone\n\nZebras graze on the savannah near the river.',
      { projectId: 'del' },
    );
    await k.indexOk(doc.id);
    expect((await k.hits({ query: 'zebras savannah', projectId: 'del' })).length).toBeGreaterThan(
      0,
    );
    expect((await k.delete(doc.id)).json()).toEqual({ ok: true });
    // Hidden at once; its rows and files are purged in the background.
    expect((await k.get(`/documents/${doc.id}`)).statusCode).toBe(404);
    expect(await k.hits({ query: 'zebras savannah', projectId: 'del' })).toEqual([]);
    await t.ctx.knowledge.documents.settled();
    expect(await t.ctx.knowledge.storage.list(`documents/${doc.id}`)).toEqual([]);
    expect(await indexRowCount(t.ctx, doc.id)).toBe(0);
    expect((await k.delete(doc.id)).json()).toMatchObject({
      statusCode: 404,
      code: 'KNOWLEDGE_DOCUMENT_NOT_FOUND',
    });
  });

  it('during indexing: the run is cancelled and nothing of it survives', async () => {
    const doc = await k.uploadOk('turtles.txt', 'original turtles');
    const indexing = k.index(doc.id, { commandId: 'slow' });
    await k.waitFor(doc.id, ['indexing']);
    expect((await k.delete(doc.id)).json()).toEqual({ ok: true });
    const res = await indexing;
    expect(res.json()).toMatchObject({ statusCode: 409, code: 'KNOWLEDGE_INDEX_CANCELLED' });
    await new Promise((r) => setTimeout(r, 1000)); // past the slow converter's own timer
    expect(await t.ctx.knowledge.storage.list(`documents/${doc.id}`)).toEqual([]);
    expect(await k.hits({ query: 'slowly converted turtles', documentId: doc.id })).toEqual([]);
    expect(await indexRowCount(t.ctx, doc.id)).toBe(0);
  });
});

describe('restart', () => {
  it('re-queues a document left indexing by a crash and indexes it', async () => {
    const { t: first, k: k1 } = await knowledgeApp();
    const doc = await k1.uploadOk('restart.md', '# Restart\n\nPenguins survive the restart.');
    await first.ctx.database.db
      .updateTable('knowledge_documents')
      .set({
        status: 'indexing',
        // Left a while ago: on a shared (PostgreSQL) queue younger orphans get a grace period.
        updated_at: new Date(Date.now() - 5 * 60_000).toISOString(),
        index_token: 'dead-process',
        index_params: JSON.stringify({ commandId: 'auto', maxChars: 1400, overlapChars: 210 }),
      })
      .where('id', '=', doc.id)
      .execute();
    await first.close(true);
    const { t: second } = await knowledgeApp({}, first.dir);
    const k2 = new KnowledgeClient({ ...second, key: first.key });
    try {
      expect(await second.ctx.knowledge.indexing.recoverInterrupted()).toBe(1);
      expect((await k2.waitFor(doc.id, ['indexed', 'failed'])).status).toBe('indexed');
      expect((await k2.hits({ query: 'penguins' }))[0]?.documentId).toBe(doc.id);
    } finally {
      await second.close();
    }
  });
});
