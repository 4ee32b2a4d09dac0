/** Changing the embedding model: stale documents are reported, still found by keywords, re-embedded. */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresEnv, TEST_EMBEDDING_CACHE } from '../../helpers.js';
import { KnowledgeClient, knowledgeApp, startEmbeddingServer } from '../helpers.js';

const CLI = resolve(import.meta.dirname, '../../../dist/cli.js');
let embeddings: Awaited<ReturnType<typeof startEmbeddingServer>>;
beforeAll(async () => {
  embeddings = await startEmbeddingServer();
});
afterAll(() => embeddings.close());

describe('re-embedding', () => {
  it('reports stale documents, keeps them searchable by keywords, and re-embeds them with aps reindex --stale', async () => {
    const { t: first, k: k1 } = await knowledgeApp();
    const doc = await k1.uploadOk(
      'walrus.md',
      '# Walruses\n\nWalruses rest on floating ice in the Arctic.\n\n# Penguins\n\nPenguins live in the south.',
    );
    const indexed = await k1.indexOk(doc.id);
    expect(indexed.document.converterMeta).toMatchObject({ embedding: { cachedChunks: 0 } });
    // Re-indexing unchanged text reuses every stored vector.
    const again = await k1.indexOk(doc.id);
    expect(again.document.converterMeta).toMatchObject({
      embedding: { cachedChunks: again.chunkCount },
    });
    expect((await k1.get('/status')).json()).toMatchObject({
      documents: { total: 1, indexed: 1, stale: 0 },
    });
    await first.close(true);

    const openai = {
      EMBEDDING_PROVIDER: 'openai',
      EMBEDDING_MODEL: 'test-model',
      EMBEDDING_BASE_URL: embeddings.url,
    };
    const { t: second } = await knowledgeApp(openai, first.dir);
    const k2 = new KnowledgeClient({ ...second, key: first.key });
    try {
      expect((await k2.get('/status')).json()).toMatchObject({
        embeddingModel: 'openai:test-model',
        embeddingDimensions: null,
        documents: { stale: 1 },
      });
      expect(
        (await k2.get('/documents?stale=true'))
          .json<{ items: { id: string }[] }>()
          .items.map((d) => d.id),
      ).toEqual([doc.id]);
      expect((await k2.hits({ query: 'walruses arctic ice' }))[0]?.documentId).toBe(doc.id);
      expect(await k2.hits({ query: 'walruses arctic ice', mode: 'semantic' })).toEqual([]);
      // Known once the provider has answered.
      expect((await k2.get('/status')).json()).toMatchObject({ embeddingDimensions: 64 });
    } finally {
      await second.close(true);
    }

    const env = {
      PATH: process.env.PATH,
      DATA_DIR: first.dir,
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
      ...(await postgresEnv(first.dir)),
      ...openai,
    };
    const run = await promisify(execFile)(process.execPath, [CLI, 'reindex', '--stale'], {
      env,
      cwd: first.dir,
    });
    expect(run.stdout).toContain('re-embedded 1 of 1 stale documents with openai:test-model');
    expect(run.stderr).toMatch(/^reindexing 1\/1 walrus\.md$/m);

    const { t: third } = await knowledgeApp(openai, first.dir);
    const k3 = new KnowledgeClient({ ...third, key: first.key });
    try {
      expect((await k3.get('/status')).json()).toMatchObject({
        documents: { stale: 0, indexed: 1 },
      });
      const semantic = await k3.hits({ query: 'walruses arctic ice', mode: 'semantic' });
      expect(semantic[0]).toMatchObject({
        documentId: doc.id,
        model: 'openai:test-model',
        sectionPath: 'Walruses',
      });
    } finally {
      await third.close();
    }
  });
});
