/**
 * `npx vitest bench --run bench/embeddings.bench.ts`: the static provider's throughput on 1,000
 * SciFact passages, its query latency, and loading the binary cache against parsing the source
 * JSON (the baseline it replaces), measured in the same run.
 *
 * SciFact is read from /work/shared/datasets/scifact (CC BY-NC: evaluation only, never copied
 * into the repository); override with SCIFACT_CORPUS.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import {
  buildStaticCache,
  cacheFileFor,
  loadStaticCache,
} from '../src/knowledge/embeddings/static/cache.js';
import { embedText } from '../src/knowledge/embeddings/static/embed.js';
import { StaticEmbeddingProvider } from '../src/knowledge/embeddings/static/static-provider.js';
import {
  sharedStaticModel,
  STATIC_TEST_CACHE_DIR,
  WINK_SOURCE_PATH,
} from '../test/knowledge/embeddings/static-cache-dir.js';

const corpusPath = process.env.SCIFACT_CORPUS ?? '/work/shared/datasets/scifact/corpus.jsonl';
const haveCorpus = existsSync(corpusPath);
const passages: string[] = haveCorpus
  ? readFileSync(corpusPath, 'utf8')
      .split('\n')
      .slice(0, 1000)
      .map((line) => JSON.parse(line) as { title: string; text: string })
      .map((doc) => `${doc.title}\n${doc.text}`)
  : [];
const queries = [
  '0-dimensional biomaterials lack inductive properties.',
  'ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.',
  'Vitamin D deficiency is unrelated to birth weight.',
];

const model = await sharedStaticModel(); // builds the shared cache on a cold machine
const cacheFile = await cacheFileFor(STATIC_TEST_CACHE_DIR, WINK_SOURCE_PATH);
const provider = new StaticEmbeddingProvider({ cacheDir: STATIC_TEST_CACHE_DIR });
await provider.ready();
const scratch = mkdtempSync(join(tmpdir(), 'aps-embeddings-bench-'));

afterAll(async () => {
  await provider.close();
  rmSync(scratch, { recursive: true, force: true });
});

// Heavy one-shot measurements: a single timed run, no warm-up.
const once = { iterations: 1, time: 0, warmupIterations: 0, warmupTime: 0 };

describe.skipIf(!haveCorpus)('embed 1,000 SciFact passages (passages/s = hz × 1000)', () => {
  bench('StaticEmbeddingProvider.embedDocuments (worker thread)', async () => {
    await provider.embedDocuments(passages);
  });
  bench('embedText in this thread (compute only)', () => {
    for (const p of passages) embedText(model, p);
  });
});

describe('one query', () => {
  let i = 0;
  bench('StaticEmbeddingProvider.embedQuery (round trip to the worker)', async () => {
    await provider.embedQuery(queries[i++ % queries.length]!);
  });
  bench('embedText in this thread', () => {
    embedText(model, queries[i++ % queries.length]!);
  });
});

describe('startup: get the model into memory', () => {
  bench('load the binary cache (150k words, int8)', () => {
    loadStaticCache(cacheFile);
  });
  bench(
    'baseline: JSON.parse the 300 MB source',
    () => {
      JSON.parse(readFileSync(WINK_SOURCE_PATH, 'utf8'));
    },
    once,
  );
  bench(
    'one-off: build the cache from the source (streaming)',
    async () => {
      await buildStaticCache(WINK_SOURCE_PATH, join(scratch, `build-${Date.now()}.bin`));
    },
    once,
  );
});
