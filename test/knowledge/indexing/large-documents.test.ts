/**
 * Large documents without stalls: a commit in slices keeps the old chunks searchable
 * until one flip replaces them; a crash mid-staging leaves nothing visible and its rows are
 * purged at the next start; a delete hides the document at once and a restart finishes its purge.
 * Runs on SQLite, and on PostgreSQL with TEST_DATABASE_URL.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppContext } from '../../../src/context.js';
import { DocumentsRepository } from '../../../src/knowledge/documents/documents.repository.js';
import type { ChunkStore, NewChunk } from '../../../src/knowledge/search/chunk-store.js';
import {
  indexRowCount,
  knowledgeApp,
  KnowledgeClient,
  storedFileExists,
  storeOf,
} from '../helpers.js';

const MODEL = 'test-model';

/** `n` chunks saying `word`, with vector `axis`. */
function chunks(n: number, word: string, axis: number, indexes?: (i: number) => number) {
  return Array.from({ length: n }, (_, i): NewChunk => ({
    id: randomUUID(),
    chunkIndex: indexes?.(i) ?? i,
    sectionPath: '',
    page: null,
    content: `${word} penguins huddle number ${i}`,
    tokenEstimate: 5,
    metadata: {},
    contentHash: `${word}-${i}`,
    vector: Float32Array.from({ length: 4 }, (_, j) => (j === axis ? 1 : 0.01)),
  }));
}

/** What a keyword and a vector search return: the version of the chunks each one saw. */
async function versions(store: ChunkStore, documentId: string | undefined): Promise<string[]> {
  const seen: string[] = [];
  for (const [text, vector] of [
    ['penguins', null],
    [null, Float32Array.of(0, 1, 0, 0)],
  ] as const) {
    const ranked = await store.search(
      {
        text,
        vector,
        model: MODEL,
        filter: documentId === undefined ? {} : { documentId },
        limit: 20,
      },
      { rank: (evidence) => (text === null ? evidence.semantic : evidence.keyword) },
    );
    const found = [...new Set(ranked.map((hit) => hit.chunk.content.split(' ')[0] ?? ''))];
    // One whole version: 20 hits of one version; anything else is reported as is.
    seen.push(
      ranked.length === 20 && found.length === 1 ? (found[0] ?? '') : JSON.stringify(found),
    );
  }
  return seen;
}

async function commitVersion(
  repo: DocumentsRepository,
  store: ChunkStore,
  documentId: string,
  list: NewChunk[],
) {
  const token = randomUUID();
  expect(await repo.beginIndex(documentId, token, '{}')).toBe(true);
  return {
    token,
    commit: store.commitIndex({
      documentId,
      indexToken: token,
      model: MODEL,
      dimensions: 4,
      chunks: list,
      document: { markdown_path: null, converter_command: 'test', converter_meta: null },
    }),
  };
}

async function chunksOfRun(ctx: AppContext, documentId: string, token: string) {
  const rows = await sql<{ n: number | string }>`select count(*) as n from knowledge_chunks
    where document_id = ${documentId} and run_token = ${token}`.execute(ctx.database.db);
  return Number(rows.rows[0]?.n ?? 0);
}

describe('large documents', () => {
  const apps: { close(keep?: boolean): Promise<void> }[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it('a search during a large commit sees the old chunks, never a mix, never nothing', async () => {
    const { t, k } = await knowledgeApp();
    apps.push(t);
    const repo = new DocumentsRepository(t.ctx.database.db);
    const store = await storeOf(t.ctx);
    const doc = await k.uploadOk('big.txt', 'placeholder');
    await (
      await commitVersion(repo, store, doc.id, chunks(300, 'oldversion', 0))
    ).commit;
    expect(await versions(store, doc.id)).toEqual(['oldversion', 'oldversion']);

    const { commit } = await commitVersion(repo, store, doc.id, chunks(3000, 'newversion', 1));
    const state = { pending: true };
    void commit.finally(() => (state.pending = false));
    // Every read in order: which whole version it saw (scoped and unscoped searches, the list).
    const seen: string[] = [];
    while (state.pending) {
      seen.push(...(await versions(store, doc.id)), ...(await versions(store, undefined)));
      const length = (await store.listChunks(doc.id)).length;
      seen.push(length === 300 ? 'oldversion' : length === 3000 ? 'newversion' : `${length}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await commit).toBe('committed');
    // Reads ran between the slices; each saw one whole version, the old one until the flip
    // (the commit then purges the replaced rows before it resolves), the new one after.
    const flip = seen.indexOf('newversion');
    const old = flip === -1 ? seen : seen.slice(0, flip);
    expect(old.length).toBeGreaterThan(t.ctx.database.driver === 'sqlite' ? 12 : 0);
    expect([...new Set(old)]).toEqual(['oldversion']);
    expect([...new Set(flip === -1 ? [] : seen.slice(flip))]).toEqual(
      flip === -1 ? [] : ['newversion'],
    );
    expect(await versions(store, doc.id)).toEqual(['newversion', 'newversion']);
    expect((await store.listChunks(doc.id)).length).toBe(3000);
    expect(await indexRowCount(t.ctx, doc.id)).toBe(
      t.ctx.database.driver === 'sqlite' ? 9000 : 6000,
    );
  });

  it('(SQLite) a crash mid-staging leaves the old version; the staged rows are purged after', async (ctx) => {
    const { t, k } = await knowledgeApp();
    apps.push(t);
    if (t.ctx.database.driver !== 'sqlite') return ctx.skip();
    const repo = new DocumentsRepository(t.ctx.database.db);
    const store = await storeOf(t.ctx);
    const doc = await k.uploadOk('big.txt', 'placeholder');
    await (
      await commitVersion(repo, store, doc.id, chunks(300, 'oldversion', 0))
    ).commit;
    // A duplicate chunk number fails the third slice: the state a crash there leaves.
    const broken = chunks(2000, 'newversion', 1, (i) => (i === 600 ? 599 : i));
    const { token, commit } = await commitVersion(repo, store, doc.id, broken);
    await expect(commit).rejects.toThrow(/UNIQUE/);
    expect(await chunksOfRun(t.ctx, doc.id, token)).toBeGreaterThan(0);
    expect(await versions(store, doc.id)).toEqual(['oldversion', 'oldversion']);

    // Restarted: the run's document was failed (or resumed under a new token) meanwhile.
    await repo.failIndex(doc.id, token, 'interrupted');
    const restarted = await storeOf(t.ctx);
    expect(await versions(restarted, doc.id)).toEqual(['[]', '[]']); // failed: not searched
    expect(await restarted.purgeLeftovers()).toEqual([]);
    expect(await chunksOfRun(t.ctx, doc.id, token)).toBe(0);
    expect((await restarted.listChunks(doc.id)).length).toBe(300);
    const again = await commitVersion(repo, restarted, doc.id, chunks(700, 'newversion', 1));
    expect(await again.commit).toBe('committed');
    expect(await versions(restarted, doc.id)).toEqual(['newversion', 'newversion']);
    expect(await indexRowCount(t.ctx, doc.id)).toBe(2100);
  });

  it('(SQLite) a small run commits in one step, after purging what a crashed run left', async (ctx) => {
    const { t, k } = await knowledgeApp();
    apps.push(t);
    if (t.ctx.database.driver !== 'sqlite') return ctx.skip();
    const repo = new DocumentsRepository(t.ctx.database.db);
    const store = await storeOf(t.ctx);
    const doc = await k.uploadOk('small.txt', 'placeholder');
    const first = await commitVersion(repo, store, doc.id, chunks(30, 'oldversion', 0));
    expect(await first.commit).toBe('committed');
    expect(await versions(store, doc.id)).toEqual(['oldversion', 'oldversion']);
    // A larger run crashes in its second slice: staged rows stay behind, invisible.
    const broken = chunks(300, 'brokenversion', 1, (i) => (i === 200 ? 199 : i));
    const crashed = await commitVersion(repo, store, doc.id, broken);
    await expect(crashed.commit).rejects.toThrow(/UNIQUE/);
    expect(await chunksOfRun(t.ctx, doc.id, crashed.token)).toBeGreaterThan(0);
    await repo.failIndex(doc.id, crashed.token, 'interrupted');
    // The next small run purges them first, then replaces the old version in one step.
    const second = await commitVersion(repo, store, doc.id, chunks(25, 'newversion', 1));
    expect(await second.commit).toBe('committed');
    expect(await versions(store, doc.id)).toEqual(['newversion', 'newversion']);
    expect(await chunksOfRun(t.ctx, doc.id, crashed.token)).toBe(0);
    expect(await chunksOfRun(t.ctx, doc.id, first.token)).toBe(0);
    expect(await indexRowCount(t.ctx, doc.id)).toBe(75);
    // And again with nothing to purge: the replaced version's rows go after the flip.
    const third = await commitVersion(repo, store, doc.id, chunks(22, 'thirdversion', 1));
    expect(await third.commit).toBe('committed');
    expect(await versions(store, doc.id)).toEqual(['thirdversion', 'thirdversion']);
    expect(await indexRowCount(t.ctx, doc.id)).toBe(66);
    expect((await repo.findById(doc.id))?.status).toBe('indexed');
  });

  it('a run whose token was taken over is discarded and writes nothing', async () => {
    const { t, k } = await knowledgeApp();
    apps.push(t);
    const repo = new DocumentsRepository(t.ctx.database.db);
    const store = await storeOf(t.ctx);
    const doc = await k.uploadOk('big.txt', 'placeholder');
    const token = randomUUID();
    expect(await repo.beginIndex(doc.id, token, '{}')).toBe(true);
    expect(await repo.takeOverIndex(doc.id, token, `${token}#2`)).toBe(true);
    expect(await repo.takeOverIndex(doc.id, token, `${token}#3`)).toBe(true);
    expect(await repo.takeOverIndex(doc.id, randomUUID(), 'other#2')).toBe(false);
    const outcome = await store.commitIndex({
      documentId: doc.id,
      indexToken: `${token}#2`,
      model: MODEL,
      dimensions: 4,
      chunks: chunks(600, 'stale', 0),
      document: { markdown_path: null, converter_command: 'test', converter_meta: null },
    });
    expect(outcome).toBe('discarded');
    // The same for a run small enough to commit in one step.
    const small = await store.commitIndex({
      documentId: doc.id,
      indexToken: `${token}#2`,
      model: MODEL,
      dimensions: 4,
      chunks: chunks(5, 'stale', 0),
      document: { markdown_path: null, converter_command: 'test', converter_meta: null },
    });
    expect(small).toBe('discarded');
    expect(await indexRowCount(t.ctx, doc.id)).toBe(0);
    expect((await repo.findById(doc.id))?.index_token).toBe(`${token}#3`);
  });

  it('delete hides the document at once; a restart finishes an interrupted purge', async () => {
    const { t: first, k: k1 } = await knowledgeApp();
    const doc = await k1.uploadOk('gone.md', '# Gone\n\nZebras graze on the savannah.');
    const other = await k1.uploadOk('kept.md', '# Kept\n\nZebras sleep standing.');
    await k1.indexOk(doc.id);
    await k1.indexOk(other.id);
    const rows = await indexRowCount(first.ctx, doc.id);
    expect(rows).toBeGreaterThan(0);
    // Hidden, then the process stops before the purge.
    expect(await (await storeOf(first.ctx)).hideDocument(doc.id)).toBe(true);
    expect((await k1.get(`/documents/${doc.id}`)).statusCode).toBe(404);
    const listed = (await k1.get('/documents')).json<{ items: { id: string }[] }>().items;
    expect(listed.map((d) => d.id)).toEqual([other.id]);
    expect((await k1.hits({ query: 'zebras' })).map((h) => h.documentId)).toEqual([other.id]);
    expect((await k1.delete(doc.id)).statusCode).toBe(404);
    // The same bytes can be uploaded again at once (the hidden row gave up its checksum).
    const again = await k1.upload('gone.md', '# Gone\n\nZebras graze on the savannah.');
    expect(again.statusCode).toBe(201);
    await first.close(true);

    const { t: second } = await knowledgeApp({}, first.dir);
    apps.push(second);
    const k2 = new KnowledgeClient({ ...second, key: first.key });
    expect(await indexRowCount(second.ctx, doc.id)).toBe(rows);
    expect(await second.ctx.knowledge.documents.resumePurges()).toBe(1);
    await second.ctx.knowledge.documents.settled();
    expect(await indexRowCount(second.ctx, doc.id)).toBe(0);
    expect(await second.ctx.knowledge.storage.list(`documents/${doc.id}`)).toEqual([]);
    expect(await storedFileExists(second, `documents/${other.id}/source.md`)).toBe(true);
    const left = await sql<{ n: number | string }>`select count(*) as n from knowledge_documents
      where id = ${doc.id}`.execute(second.ctx.database.db);
    expect(Number(left.rows[0]?.n)).toBe(0);
    expect((await k2.hits({ query: 'zebras' })).map((h) => h.documentId)).toEqual([other.id]);
  });
});
