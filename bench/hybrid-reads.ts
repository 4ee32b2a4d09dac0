/**
 * What a hybrid search reads from the database, in process. On an existing data directory (e.g. one
 * `bench:scale -- --keep --dir DIR` filled), the store loads its indexes as a server does
 * (snapshots, vector graph) and answers generated questions in hybrid mode, topK 10, asked as the
 * retrieval service asks them. Reported: p50 / p95 / mean of the store's search, the time per
 * search spent in SQLite statements, and the float32 vectors read per search.
 *
 *   npm run bench:hybrid-reads -- DIR [--queries 300] [--seed 42] [--build DIST] [--limit 100]
 *
 * `--limit`: the hybrid candidates asked for (SEARCH_HYBRID_CANDIDATES; the service asks at
 * least topK × 4).
 *
 * `--build`: a compiled server to measure instead of this tree's source (e.g. an older checkout's
 * dist/). To compare two builds, run each with its own `--seed`: the reads are what differs, and
 * questions the other run asked would find their pages in the page cache.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { latencySummary } from './retrieval/metrics.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';
import { benchEnv } from './scale/fill.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    queries: { type: 'string', default: '300' },
    seed: { type: 'string', default: '42' },
    build: { type: 'string' },
    limit: { type: 'string', default: '100' },
  },
});
const dir = positionals[0];
if (dir === undefined) throw new Error('usage: bench:hybrid-reads <data directory> [--queries N]');
const from = (path: string) =>
  values.build === undefined ? `../src/${path}.js` : `${resolve(values.build)}/${path}.js`;

type Modules = [
  typeof import('../src/config.js'),
  typeof import('../src/knowledge/embeddings/index.js'),
  typeof import('../src/knowledge/search/sqlite/sqlite-chunk-store.js'),
  typeof import('../src/knowledge/retrieval/ranking.js'),
];
const [{ loadConfig }, { createEmbeddingProvider }, { SqliteChunkStore }, { rankingFor }] =
  (await Promise.all(
    [
      'config',
      'knowledge/embeddings/index',
      'knowledge/search/sqlite/sqlite-chunk-store',
      'knowledge/retrieval/ranking',
    ].map((path) => import(from(path))),
  )) as Modules;

const config = loadConfig(
  { ...benchEnv(dir, 'aps_bench_hybrid_reads_0123456789abcdef'), PORT: '0' },
  dir,
);
const embedder = createEmbeddingProvider(config.embedding);
await embedder.ready();
const file = resolve(dir, 'aps.sqlite');
const db = new Database(file);

// Every statement's time, and the rows of those that read vectors (`embedding` from a vector table).
const spent = { ms: 0, vectors: 0 };
const statement = Object.getPrototypeOf(db.prepare('select 1')) as Record<string, unknown>;
for (const method of ['all', 'get']) {
  const original = statement[method] as (...args: unknown[]) => unknown;
  statement[method] = function (this: { source: string }, ...args: unknown[]) {
    const started = performance.now();
    const result = original.apply(this, args);
    spent.ms += performance.now() - started;
    if (Array.isArray(result) && this.source.includes(' embedding from ')) {
      spent.vectors += result.length;
    }
    return result;
  };
}

const store = new SqliteChunkStore(db, {
  snapshots: { databaseFile: file, delayMs: 3_600_000 },
  vectors: { annMin: config.knowledge.searchAnnMinVectors ?? Number.POSITIVE_INFINITY },
});
const loadStarted = performance.now();
await store.warm(embedder.model);
console.log(`indexes loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

const generator = new SentenceGenerator(
  loadParaphrase().docs.map((d) => d.markdown),
  rng(Number(values.seed)),
);
const questions = Array.from({ length: Number(values.queries) }, () => generator.query());
const body = { mode: 'hybrid' as const, topK: 10, minScore: undefined };
const search = async (query: string) => {
  const embedding = await embedder.embedSearchQuery(query);
  const started = performance.now();
  const before = { ...spent };
  await store.search(
    {
      text: query,
      vector: embedding.vector,
      model: embedder.model,
      filter: {},
      limit: Number(values.limit),
    },
    rankingFor(body, embedding),
  );
  return {
    ms: performance.now() - started,
    sqliteMs: spent.ms - before.ms,
    vectors: spent.vectors - before.vectors,
  };
};

// A few questions of another seed first: the graph's worker and the statements warm up.
const warmup = new SentenceGenerator(
  loadParaphrase().docs.map((d) => d.markdown),
  rng(7),
);
for (let i = 0; i < 10; i++) await search(warmup.query());
const results: { ms: number; sqliteMs: number; vectors: number }[] = [];
for (const q of questions) results.push(await search(q));
const l = latencySummary(results.map((r) => r.ms));
const mean = (f: (r: (typeof results)[number]) => number) =>
  results.reduce((sum, r) => sum + f(r), 0) / results.length;
console.log(
  `\n${results.length} hybrid searches (seed ${values.seed}, limit ${values.limit}), ${values.build ?? 'source'}\n`,
);
console.log('| p50 ms | p95 ms | mean ms | SQLite ms per search | vectors read per search |');
console.log('| --- | --- | --- | --- | --- |');
console.log(
  `| ${l.p50.toFixed(2)} | ${l.p95.toFixed(2)} | ${mean((r) => r.ms).toFixed(2)} | ${mean((r) => r.sqliteMs).toFixed(2)} | ${mean((r) => r.vectors).toFixed(1)} |`,
);
await store.close();
db.close();
await embedder.close();
