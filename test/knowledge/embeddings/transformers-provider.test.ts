import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingError } from '../../../src/knowledge/embeddings/provider.js';
import {
  choosePooling,
  TransformersEmbeddingProvider,
  type TransformersEmbeddingConfig,
  type TransformersEmbeddingOptions,
} from '../../../src/knowledge/embeddings/transformers/transformers-provider.js';
import {
  TINY_MODEL_DIMENSIONS,
  TINY_MODEL_MAX_TOKENS,
  writeTinyModel,
} from './fixtures/tiny-model.js';

const MODEL = 'tiny/test-model';
const BUSY_LAYERS = 160;
/** 15 known words: with [CLS] they fill the tiny model's 16-token window exactly. */
const LONG_TEXT = 'sun moon star sky rain cloud river mountain tree leaf red blue green fast slow';
let root: string;
const providers: TransformersEmbeddingProvider[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'transformers-provider-'));
  await writeTinyModel(root, MODEL);
});

afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function provider(
  config: Partial<TransformersEmbeddingConfig> = {},
  options: TransformersEmbeddingOptions = {},
): TransformersEmbeddingProvider {
  const p = new TransformersEmbeddingProvider(
    { model: MODEL, modelDir: root, allowDownload: false, batchSize: 64, ...config },
    options,
  );
  providers.push(p);
  return p;
}

const dot = (a: Float32Array, b: Float32Array): number =>
  a.reduce((sum, x, i) => sum + x * b[i]!, 0);

function expectClose(actual: Float32Array, expected: Float32Array): void {
  expect(actual).toHaveLength(expected.length);
  expected.forEach((x, j) => {
    expect(actual[j]).toBeCloseTo(x, 5);
  });
}

/** Runs `work` while a 5 ms interval measures the longest gap between its ticks. */
async function longestStall(
  work: () => Promise<unknown>,
): Promise<{ took: number; stall: number }> {
  let last = performance.now();
  let stall = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  await work();
  const took = performance.now() - started;
  clearInterval(timer);
  stall = Math.max(stall, performance.now() - last);
  return { took, stall };
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(
    () => expect.fail('expected a rejection'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

describe('TransformersEmbeddingProvider on a tiny ONNX model built by the test', () => {
  it('loads offline from modelDir, learns dimensions and returns unit vectors', async () => {
    const p = provider();
    expect(p.model).toBe(`transformers:${MODEL}`);
    expect(p.dimensions).toBe(0);
    await p.ready();
    expect(p.dimensions).toBe(TINY_MODEL_DIMENSIONS);
    const vectors = await p.embedDocuments(['the cat sat on the mat', 'database index query']);
    expect(vectors).toHaveLength(2);
    for (const v of vectors) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v).toHaveLength(TINY_MODEL_DIMENSIONS);
      expect(Math.sqrt(dot(v, v))).toBeCloseTo(1, 5);
      expect(v.buffer.byteLength).toBe(TINY_MODEL_DIMENSIONS * 4); // owns its buffer
    }
  });

  it('makes texts that share words more similar than unrelated ones', async () => {
    const p = provider();
    const [cat, cats, sky] = await p.embedDocuments([
      'The cat sat on the mat',
      'the dog and the cat sat in the park',
      'red sun blue sky',
    ]);
    const query = await p.embedQuery('cat on a mat');
    // [CLS]/[SEP] are common to all texts, so unrelated ones still score ~0.2–0.5 here.
    expect(dot(cat!, cats!)).toBeGreaterThan(dot(cat!, sky!) + 0.1);
    expect(dot(cat!, cats!)).toBeGreaterThan(dot(cats!, sky!) + 0.1);
    expect(dot(query, cat!)).toBeGreaterThan(dot(query, sky!) + 0.1);
  });

  it('batches by batchSize without changing any vector (padding is masked out)', async () => {
    const texts = ['sun', 'the quiet river and the big mountain', 'sql', 'fast blue dog', 'tree'];
    const batched = await provider({ batchSize: 2 }).embedDocuments(texts);
    const p = provider();
    for (const [i, text] of texts.entries()) {
      const alone = await p.embedQuery(text);
      expectClose(batched[i]!, alone);
    }
  });

  it('truncates long texts to the tokenizer limit', async () => {
    // [CLS] + these 15 words fill the 16-token window; whatever follows must not matter.
    const head = LONG_TEXT;
    expect(head.split(' ')).toHaveLength(TINY_MODEL_MAX_TOKENS - 1);
    const p = provider();
    const [a, b] = await p.embedDocuments([
      `${head} ${'database '.repeat(2_000)}`,
      `${head} ${'cat '.repeat(500)}`,
    ]);
    expectClose(b!, a!);
    const differentHead = await p.embedQuery(`sql ${head} ${'cat '.repeat(500)}`);
    expect(dot(a!, differentHead)).toBeLessThan(0.99); // the window itself does count
  });

  it('keeps the event loop responsive while the model computes', async () => {
    await writeTinyModel(root, 'tiny/busy-model', { busyLayers: BUSY_LAYERS });
    const texts = Array.from({ length: 64 }, (_, i) => `${LONG_TEXT} ${i}`);

    // Baseline, premise of the worker: the same inference on this thread stalls the loop.
    const lib = await import('@huggingface/transformers');
    Object.assign(lib.env, { allowRemoteModels: false, localModelPath: root });
    const inline = await lib.pipeline('feature-extraction', 'tiny/busy-model');
    const blocked = await longestStall(() => inline(texts, { pooling: 'mean', normalize: true }));
    await inline.dispose();
    expect(blocked.took).toBeGreaterThan(100); // enough work for a stall to be visible
    expect(blocked.stall).toBeGreaterThan(blocked.took * 0.7);

    const p = provider({ model: 'tiny/busy-model' });
    await p.ready();
    const free = await longestStall(() => p.embedDocuments(texts));
    expect(free.took).toBeGreaterThan(100);
    expect(free.stall).toBeLessThan(free.took * 0.25);
  });

  it('honours the pooling option: CLS pooling gives every text the [CLS] vector', async () => {
    const p = provider({}, { pooling: 'cls' });
    const [a, b] = await p.embedDocuments(['cat', 'database index']);
    expect(dot(a!, b!)).toBeCloseTo(1, 5);
  });

  it('reads the pooling from a sentence-transformers 1_Pooling/config.json', async () => {
    await writeTinyModel(root, 'tiny/cls-model');
    await mkdir(join(root, 'tiny/cls-model/1_Pooling'));
    await writeFile(
      join(root, 'tiny/cls-model/1_Pooling/config.json'),
      JSON.stringify({ pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }),
    );
    expect(await choosePooling('tiny/cls-model', root)).toBe('cls');
    const [a, b] = await provider({ model: 'tiny/cls-model' }).embedDocuments(['cat', 'sky']);
    expect(dot(a!, b!)).toBeCloseTo(1, 5);
  });

  it('falls back to the model family for pooling', async () => {
    expect(await choosePooling('Xenova/bge-small-en-v1.5', null)).toBe('cls');
    expect(await choosePooling('mixedbread-ai/mxbai-embed-large-v1', root)).toBe('cls');
    expect(await choosePooling('Xenova/all-MiniLM-L6-v2', null)).toBe('mean');
    expect(await choosePooling(MODEL, root)).toBe('mean');
  });

  it('tells the operator what to set when the model is missing and downloads are off', async () => {
    const err = await failure(provider({ model: 'tiny/missing-model' }).ready());
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toContain('"tiny/missing-model" was not found');
    expect(err.message).toContain(join(root, 'tiny/missing-model'));
    expect(err.message).toContain('EMBEDDING_MODEL_DIR');
    expect(err.message).toContain('EMBEDDING_ALLOW_DOWNLOAD=true');
  });

  it('retries loading after a failure, e.g. once the operator added the model', async () => {
    const p = provider({ model: 'tiny/late-model' });
    await failure(p.ready());
    await writeTinyModel(root, 'tiny/late-model');
    await p.ready();
    expect(p.dimensions).toBe(TINY_MODEL_DIMENSIONS);
  });

  it('reports a missing @huggingface/transformers clearly', async () => {
    const p = provider({}, { moduleSpecifier: '@huggingface/transformers-not-installed' });
    const err = await failure(p.embedQuery('cat'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(
      /optional dependency .* not installed: run `npm install @huggingface\/transformers`/,
    );
  });

  it('requires EMBEDDING_MODEL', () => {
    expect(() => provider({ model: null })).toThrow(/EMBEDDING_MODEL is required/);
  });

  it('rejects an aborted call without embedding, and refuses work after close()', async () => {
    const p = provider();
    const controller = new AbortController();
    controller.abort();
    expect((await failure(p.embedQuery('cat', controller.signal))).name).toBe('AbortError');
    await p.ready();
    await p.close();
    const err = await failure(p.embedQuery('cat'));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toMatch(/closed/);
  });

  it('returns [] for no texts without loading the model', async () => {
    const p = provider({ model: 'tiny/never-loaded' });
    expect(await p.embedDocuments([])).toEqual([]);
    expect(p.dimensions).toBe(0);
  });
});
