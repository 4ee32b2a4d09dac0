/**
 * When a retrieval's search starts (retrieval.service.ts, event-loop-turns.ts): on an idle server at once,
 * with no timer hop between the query's embedding and its search; behind work already waiting for
 * a fair turn, in arrival order. Timers are faked, so a search that waits for a timer does not
 * run until the test lets the timers run.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { StaticEmbeddingProvider } from '../../../src/knowledge/embeddings/static/static-provider.js';
import { RetrievalService } from '../../../src/knowledge/retrieval/retrieval.service.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { fairTurn } from '../../../src/event-loop-turns.js';
import { tempDir } from '../../helpers.js';
import { STATIC_TEST_CACHE_DIR } from '../embeddings/static-cache-dir.js';
import { commitDocument } from '../helpers.js';

const TEXTS = [
  'The glacier carved a deep fjord into the basalt cliffs.',
  'Volcanic ash settled over the amber fields after the eruption.',
  'A lighthouse keeper logged every storm that crossed the harbour.',
];

const database = openSqlite(join(tempDir(), 'aps.sqlite'));
const embedder = new StaticEmbeddingProvider({ cacheDir: STATIC_TEST_CACHE_DIR });
const store = new SqliteChunkStore(database.native, {});
const service = new RetrievalService(store, embedder, pino({ level: 'silent' }));

beforeAll(async () => {
  expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
  await embedder.ready();
  const vectors = await embedder.embedDocuments(TEXTS);
  await commitDocument(
    store,
    database.native,
    { model: embedder.model, dimensions: vectors[0]?.length ?? 0 },
    () =>
      TEXTS.map((content, i) => ({
        id: randomUUID(),
        chunkIndex: i,
        sectionPath: 'section',
        page: null,
        content,
        tokenEstimate: 12,
        metadata: {},
        contentHash: `h${i}`,
        vector: vectors[i] ?? new Float32Array(),
      })),
  );
  await store.warm(embedder.model);
}, 60_000);

afterEach(() => {
  vi.useRealTimers();
});

afterAll(async () => {
  await embedder.close();
  await database.close();
});

/** Lets pending I/O, immediates and microtasks run (a real setImmediate: only timers are fake). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('a retrieval on an idle server', () => {
  it.each(['keyword', 'semantic'] as const)(
    'searches at once in %s mode (no timer)',
    async (mode) => {
      await settle(); // a fresh turn of the event loop
      vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] });
      const result = await service.retrieve({ query: 'basalt fjord glacier', mode, topK: 3 });
      expect(vi.getTimerCount()).toBe(0);
      expect(result.items.length).toBeGreaterThan(0);
      expect(result.items[0]?.content).toContain('fjord');
    },
  );
});

describe('a retrieval behind work waiting for a fair turn', () => {
  it('waits for its turn, then searches after that work (arrival order)', async () => {
    await settle();
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] });
    const order: string[] = [];
    const earlier = fairTurn().then(() => order.push('earlier work'));
    const retrieval = service
      .retrieve({ query: 'lighthouse storm', mode: 'keyword', topK: 3 })
      .then((result) => {
        order.push('retrieval');
        return result;
      });
    for (let i = 0; i < 5; i++) await settle();
    expect(order).toEqual([]); // both wait for the fair turn's timer
    await vi.runAllTimersAsync();
    const result = await retrieval;
    await earlier;
    expect(order).toEqual(['earlier work', 'retrieval']);
    expect(result.items[0]?.content).toContain('lighthouse');
  });
});
