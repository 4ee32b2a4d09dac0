import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingError } from '../../../src/knowledge/embeddings/provider.js';
import { cosine, embedText } from '../../../src/knowledge/embeddings/static/embed.js';
import { spawnEmbeddingWorker } from '../../../src/knowledge/embeddings/static/spawn.js';
import { StaticEmbeddingProvider } from '../../../src/knowledge/embeddings/static/static-provider.js';
import {
  BUILD_TIMEOUT_MS,
  sharedStaticModel,
  STATIC_TEST_CACHE_DIR,
  writeSyntheticSource,
} from './static-cache-dir.js';

const sentences = [
  'Alterations of the architecture of cerebral white matter in the developing brain.',
  'A line scan diffusion-weighted magnetic resonance imaging sequence was applied.',
  'Stock markets fell sharply today.',
  '',
  'qwxzvbq',
];
const many = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${sentences[i % 5]} ${i}`);

describe('StaticEmbeddingProvider (worker thread, real vectors)', () => {
  const provider = new StaticEmbeddingProvider({ cacheDir: STATIC_TEST_CACHE_DIR });
  beforeAll(async () => {
    await provider.ready();
  }, BUILD_TIMEOUT_MS);
  afterAll(async () => {
    await provider.close();
  });

  it('runs in another thread and describes itself', () => {
    expect(provider.model).toBe('glove-sif-100d');
    expect(provider.dimensions).toBe(100);
    const info = provider.workerInfo!;
    expect(info.threadId).not.toBe(threadId);
    expect(info.threadId).toBeGreaterThan(0);
    expect(info.vocabSize).toBe(150_000);
  });

  it('returns, in order, exactly what the in-thread embedding computes', async () => {
    const model = await sharedStaticModel();
    const texts = many(300); // several worker slices
    const vectors = await provider.embedDocuments(texts);
    expect(vectors).toHaveLength(300);
    vectors.forEach((v, i) => {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.buffer.byteLength).toBe(400); // each its own buffer
      expect(v).toEqual(embedText(model, texts[i]!));
    });
    expect(await provider.embedDocuments([])).toEqual([]);
  });

  it('embeds queries: similar sentences score higher, unknown text is still a unit vector', async () => {
    const [cat, kitten, stocks, empty] = await Promise.all(
      [
        'a cat sat on the mat',
        'a kitten rested on the rug',
        'stock markets fell sharply today',
        '',
      ].map((t) => provider.embedQuery(t)),
    );
    expect(cosine(cat!, kitten!)).toBeGreaterThan(cosine(cat!, stocks!));
    expect(Math.hypot(...empty!)).toBeCloseTo(1, 5);
    expect(empty!.every(Number.isFinite)).toBe(true);
  });

  it('lets queries overtake bulk indexing, and keeps the event loop free', async () => {
    const order: string[] = [];
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const bulk = provider.embedDocuments(many(5000)).then(() => order.push('bulk'));
    const query = provider.embedQuery('white matter imaging').then(() => order.push('query'));
    await Promise.all([bulk, query]);
    clearInterval(timer);
    expect(order).toEqual(['query', 'bulk']);
    expect(ticks).toBeGreaterThan(0);
  });

  it('aborts pending batches with an AbortError and stays usable', async () => {
    const pre = new AbortController();
    pre.abort();
    await expect(provider.embedDocuments(['x'], pre.signal)).rejects.toMatchObject({
      name: 'AbortError',
    });

    const controller = new AbortController();
    const pending = provider.embedDocuments(many(5000), controller.signal);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect(provider.embedQuery('still alive')).resolves.toHaveLength(100);

    const done = new AbortController();
    const ok = await provider.embedDocuments(['finished first'], done.signal);
    done.abort(); // too late: nothing happens
    expect(ok).toHaveLength(1);
  });
});

describe('StaticEmbeddingProvider lifecycle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aps-static-provider-'));
  const source = join(dir, 'source.json');
  beforeAll(() => {
    writeSyntheticSource(
      source,
      100,
      Array.from({ length: 400 }, (_, i) => `word${i}x`),
    );
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('builds the cache inside the worker on first use, then reuses it', async () => {
    const cacheDir = join(dir, 'cache');
    const first = new StaticEmbeddingProvider({ cacheDir, sourcePath: source });
    await first.ready();
    expect(first.workerInfo).toMatchObject({ built: true, vocabSize: 400 });
    expect(existsSync(first.workerInfo!.cacheFile)).toBe(true);
    await first.close();
    const second = new StaticEmbeddingProvider({ cacheDir, sourcePath: source });
    await second.ready();
    expect(second.workerInfo?.built).toBe(false);
    await second.close();
  });

  it('rejects pending calls when the worker crashes, and recovers on the next call', async () => {
    const provider = new StaticEmbeddingProvider({
      cacheDir: join(dir, 'cache'),
      sourcePath: source,
    });
    await provider.ready();
    const before = provider.workerInfo!.threadId;
    const pending = provider.embedDocuments(
      Array.from({ length: 20_000 }, (_, i) => `word${i % 400}x`),
    );
    provider.crashWorkerForTests();
    await expect(pending).rejects.toBeInstanceOf(EmbeddingError);
    expect(provider.workerInfo).toBeNull();
    await expect(provider.embedQuery('word1x')).resolves.toHaveLength(100);
    expect(provider.workerInfo!.threadId).not.toBe(before);
    await provider.close();
  });

  it('fails clearly on a missing or incompatible source, and retries on the next call', async () => {
    const missing = new StaticEmbeddingProvider({
      cacheDir: join(dir, 'm'),
      sourcePath: join(dir, 'nope.json'),
    });
    await expect(missing.ready()).rejects.toBeInstanceOf(EmbeddingError);
    await expect(missing.embedQuery('x')).rejects.toBeInstanceOf(EmbeddingError);
    await missing.close();

    const small = join(dir, 'small.json');
    writeSyntheticSource(small, 12, ['alpha', 'beta']);
    const wrongDims = new StaticEmbeddingProvider({ cacheDir: join(dir, 's'), sourcePath: small });
    await expect(wrongDims.ready()).rejects.toThrow(/12 dimensions/);
    await wrongDims.close();
  });

  it('rejects pending and later calls once closed', async () => {
    const provider = new StaticEmbeddingProvider({
      cacheDir: join(dir, 'cache'),
      sourcePath: source,
    });
    const pending = expect(provider.embedDocuments(['word1x'])).rejects.toBeInstanceOf(
      EmbeddingError,
    );
    await provider.close();
    await pending;
    await expect(provider.embedQuery('word1x')).rejects.toBeInstanceOf(EmbeddingError);
    await expect(provider.ready()).rejects.toBeInstanceOf(EmbeddingError);
  });
});

describe('worker entry points', () => {
  it('runs the TypeScript sources in the worker when there is no compiled worker.js', async () => {
    const { worker, mode } = spawnEmbeddingWorker();
    expect(mode).toBe('typescript'); // vitest runs src/: nothing compiled next to it
    await worker.terminate();
  });

  // `npm test` builds dist first (pretest); a bare `npx vitest` may not have it.
  const dist = fileURLToPath(
    new URL('../../../dist/knowledge/embeddings/static/', import.meta.url),
  );
  it.skipIf(!existsSync(join(dist, 'worker.js')))(
    'runs the compiled worker.js from dist',
    async () => {
      type SpawnModule = typeof import('../../../src/knowledge/embeddings/static/spawn.js');
      type ProviderModule =
        typeof import('../../../src/knowledge/embeddings/static/static-provider.js');
      const spawn = (await import(join(dist, 'spawn.js'))) as SpawnModule;
      const { worker, mode } = spawn.spawnEmbeddingWorker();
      expect(mode).toBe('compiled');
      await worker.terminate();

      const compiled = (await import(join(dist, 'static-provider.js'))) as ProviderModule;
      const provider = new compiled.StaticEmbeddingProvider({ cacheDir: STATIC_TEST_CACHE_DIR });
      try {
        const text = 'a kitten rested on the rug';
        expect(await provider.embedQuery(text)).toEqual(embedText(await sharedStaticModel(), text));
        expect(provider.workerInfo!.threadId).not.toBe(threadId);
      } finally {
        await provider.close();
      }
    },
    BUILD_TIMEOUT_MS,
  );
});
