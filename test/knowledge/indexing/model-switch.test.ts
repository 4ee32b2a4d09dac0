/**
 * Switching the embedding model on a live knowledge base: the model the documents were embedded
 * with keeps answering semantic searches (new documents get its vectors too) while the stale ones
 * are re-indexed from their stored markdown; once the new model's vectors cover every chunk it
 * answers, and the old vectors are dropped. Runs on SQLite, and on PostgreSQL with
 * TEST_DATABASE_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelSwitch } from '../../../src/knowledge/embeddings/model-switch.js';
import { MODEL_NAME as STATIC_MODEL } from '../../../src/knowledge/embeddings/static/cache.js';
import { checkAlsoVectors } from '../../../src/knowledge/search/chunk-store.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { bearer } from '../../helpers.js';
import { TEST_DATABASE_URL } from '../../postgres/pg.js';
import { KnowledgeClient, knowledgeApp, startEmbeddingServer, storeOf } from '../helpers.js';

let embeddings: Awaited<ReturnType<typeof startEmbeddingServer>>;
beforeAll(async () => {
  embeddings = await startEmbeddingServer();
});
afterAll(() => embeddings.close());

const TEXTS = {
  walrus: '# Walruses\n\nWalruses rest on floating ice in the Arctic sea.',
  penguin: '# Penguins\n\nPenguins huddle together through the long southern winter.',
  // Past SMALL_COMMIT chunks: SQLite stages it in slices (each model's vectors in each slice).
  heron: [
    '# Herons\n\nHerons stand still in shallow water and wait for fish.',
    ...Array.from({ length: 45 }, (_, i) => `# Note ${i}\n\nA ledger line number ${i} of sums.`),
  ].join('\n\n'),
};
const quiet = { info: () => undefined, warn: () => undefined };

describe('switching the embedding model', () => {
  it('keeps the old model answering until the new one covers every chunk, then switches and drops the old vectors', async () => {
    const { t: first, k: k1 } = await knowledgeApp();
    const walrus = await k1.uploadOk('walrus.md', TEXTS.walrus);
    const penguin = await k1.uploadOk('penguin.md', TEXTS.penguin);
    await k1.indexOk(walrus.id);
    await k1.indexOk(penguin.id);
    await first.close(true);

    const openai = {
      EMBEDDING_PROVIDER: 'openai',
      EMBEDDING_MODEL: 'test-model',
      EMBEDDING_BASE_URL: embeddings.url,
    };
    const { t } = await knowledgeApp(openai, first.dir);
    const k = new KnowledgeClient({ ...t, key: first.key });
    const target = 'openai:test-model';
    try {
      await t.ctx.knowledge.start({ recover: false });
      expect((await k.get('/status')).json()).toMatchObject({
        embeddingModel: target,
        servingModel: STATIC_MODEL,
        switch: { chunks: 2, covered: 0 },
        documents: { stale: 2 },
      });
      // Semantic search still answers, with the old model's vectors.
      const before = await k.hits({ query: 'walruses on the arctic ice', mode: 'semantic' });
      expect(before[0]).toMatchObject({ documentId: walrus.id, model: STATIC_MODEL });

      // A document indexed meanwhile gets both models' vectors: found by the old one now (a
      // hit's `model` stays its chunk's own, the new one).
      const heron = await k.uploadOk('heron.md', TEXTS.heron);
      expect((await k.indexOk(heron.id)).embeddingModel).toBe(target);
      const herons = await k.hits({ query: 'herons waiting in shallow water', mode: 'semantic' });
      expect(herons[0]).toMatchObject({ documentId: heron.id, model: target });
      expect(herons.map((h) => h.documentId)).toContain(walrus.id);
      const store = await storeOf(t.ctx);
      const midway = await store.vectorCoverage(target);
      const heronChunks = (await k.get(`/documents/${heron.id}/chunks`)).json<{
        items: unknown[];
      }>().items.length;
      expect(heronChunks).toBeGreaterThan(32);
      const all = heronChunks + 2;
      expect(midway.chunks).toBe(all);
      expect(Object.fromEntries(midway.byModel)).toEqual({
        [STATIC_MODEL]: all,
        [target]: heronChunks,
      });

      // The stale documents re-indexed in the background, from their stored markdown.
      const queued = await t.app.inject({
        method: 'POST',
        url: k.url('/documents/reindex'),
        headers: bearer(first.key),
        payload: { stale: true },
      });
      expect(queued.statusCode, queued.body).toBe(202);
      expect(queued.json()).toEqual({ queued: 2 });
      for (const doc of [walrus, penguin]) {
        const done = await k.waitFor(doc.id, ['indexed', 'failed']);
        expect(done).toMatchObject({ status: 'indexed', embeddingModel: target });
        expect(done.converterMeta).toMatchObject({ markdownReused: true });
      }
      await t.ctx.knowledge.models.refresh();
      expect((await k.get('/status')).json()).toMatchObject({
        servingModel: target,
        switch: null,
        documents: { stale: 0 },
      });
      for (const [query, doc] of [
        ['walruses on the arctic ice', walrus],
        ['penguins huddle in winter', penguin],
        ['herons waiting in shallow water', heron],
      ] as const) {
        const hits = await k.hits({ query, mode: 'semantic' });
        expect(hits[0]).toMatchObject({ documentId: doc.id, model: target });
      }

      // Complete: the next count past the grace drops the old model's vectors (everywhere).
      const complete = await store.vectorCoverage(target);
      expect(Object.fromEntries(complete.byModel)).toEqual({ [STATIC_MODEL]: all, [target]: all });
      const dropping = new ModelSwitch(t.ctx.knowledge.embedder, store, () => null, quiet, {
        refreshMs: 60_000,
        dropAfterMs: 0,
      });
      await dropping.refresh();
      await dropping.close();
      expect(Object.fromEntries((await store.vectorCoverage(target)).byModel)).toEqual({
        [target]: all,
      });
      // Nothing of the old model is searched any more; both modes still answer.
      const semantic = await k.hits({ query: 'herons waiting in shallow water', mode: 'semantic' });
      expect(semantic[0]).toMatchObject({ documentId: heron.id, model: target });
      expect((await k.hits({ query: 'walruses', mode: 'keyword' }))[0]?.documentId).toBe(walrus.id);
      expect(await store.dropVectors(target)).toEqual([]);
      await store.close?.();
    } finally {
      await t.close();
    }
  });
});

describe('the vectors of a model no longer used', () => {
  it('refuses alsoVectors that do not fit the commit, before anything is written', () => {
    const commit = {
      documentId: 'd',
      indexToken: 't',
      model: 'new',
      dimensions: 2,
      chunks: [{ vector: Float32Array.of(1, 0) }, { vector: Float32Array.of(0, 1) }] as never[],
      document: { markdown_path: null, converter_command: null, converter_meta: null },
    };
    const also = (model: string, dimensions: number, n: number) => ({
      model,
      dimensions,
      vectors: Array.from({ length: n }, () => new Float32Array(dimensions)),
    });
    expect(() => {
      checkAlsoVectors({ ...commit, alsoVectors: [also('old', 3, 2)] });
    }).not.toThrow();
    expect(() => {
      checkAlsoVectors({ ...commit, alsoVectors: [also('new', 2, 2)] });
    }).toThrow(/repeats/);
    expect(() => {
      checkAlsoVectors({ ...commit, alsoVectors: [also('old', 3, 1)] });
    }).toThrow(/1 vectors for 2 chunks/);
    const short = { ...also('old', 3, 2), vectors: [new Float32Array(3), new Float32Array(2)] };
    expect(() => {
      checkAlsoVectors({ ...commit, alsoVectors: [short] });
    }).toThrow(/3 dimensions/);
  });

  it.skipIf(TEST_DATABASE_URL !== undefined)(
    'SQLite: a drop cut short leaves an unregistered table that the next start empties and drops',
    async () => {
      const { t, k } = await knowledgeApp();
      try {
        const doc = await k.uploadOk('many.md', TEXTS.heron);
        await k.indexOk(doc.id);
        const { database } = t.ctx;
        if (database.driver !== 'sqlite') throw new Error('SQLite only');
        const db = database.native;
        const store = new SqliteChunkStore(db);
        const tables = () =>
          db
            .prepare(
              `select name from sqlite_master where name glob 'knowledge_vec_*' or name glob 'knowledge_vecdrop_*'`,
            )
            .pluck()
            .all();
        expect(tables()).toHaveLength(1);
        // Stopped at once: unregistered, its rows still there.
        expect(await store.dropVectors('another-model', () => true)).toEqual([STATIC_MODEL]);
        expect(tables()).toHaveLength(1);
        expect(db.prepare('select count(*) from knowledge_vector_tables').pluck().get()).toBe(0);
        // The app's own store no longer searches it (the schema changed under it).
        expect(await k.hits({ query: 'herons in shallow water', mode: 'semantic' })).toEqual([]);
        expect((await k.hits({ query: 'herons', mode: 'keyword' }))[0]?.documentId).toBe(doc.id);
        await store.purgeLeftovers();
        expect(tables()).toEqual([]);
        await store.close();
      } finally {
        await t.close();
      }
    },
  );
});
