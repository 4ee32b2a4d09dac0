/**
 * The in-process keyword search with and without pruning (keyword-maxscore.ts), on an
 * existing SQLite database (e.g. one `bench:scale -- --keep --dir DIR` filled), in one process:
 *
 *   npm run bench:keyword -- DIR/aps.sqlite [--queries 600] [--limit 132] [--seed 42]
 *
 * The store loads its indexes as a server would (from the snapshots beside the database when
 * they may be used). Each of bench:scale's text queries (its sentence generator) is searched
 * twice, pruned and scoring every row, in random order, through the store's keyword search with
 * the candidates a retrieval asks for (`--limit`: topK 10 asks max(100, 4·topK) + 32); the two
 * answers must be the same chunks with the same scores. Reports p50 / p95 / mean of each.
 */
import { parseArgs } from 'node:util';
import { openSqlite } from '../src/db/sqlite.js';
import type { KeywordIndex } from '../src/knowledge/search/sqlite/keyword/keyword-index.js';
import { SqliteChunkStore } from '../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { latencySummary } from './retrieval/metrics.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    queries: { type: 'string', default: '600' },
    limit: { type: 'string', default: '132' },
    seed: { type: 'string', default: '42' },
  },
});
const file = positionals[0];
if (file === undefined) throw new Error('usage: bench:keyword <database file> [--queries N]');
const limit = Number(values.limit);

const database = openSqlite(file);
const store = new SqliteChunkStore(database.native, {
  snapshots: { databaseFile: database.native.name, delayMs: 3_600_000 },
});
const model = database.native
  .prepare('select model from knowledge_vector_tables limit 1')
  .pluck()
  .get() as string;
const t0 = performance.now();
const rows = await store.warm(model);
console.log(`${rows} keyword rows loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
// As a server would after building them: the next run reads them.
await store.saveIndexes();
const index = (store as unknown as { indexes: { keyword: { index: KeywordIndex } } }).indexes
  .keyword.index;

const generator = new SentenceGenerator(
  loadParaphrase().docs.map((d) => d.markdown),
  rng(Number(values.seed)),
);
const queries = Array.from({ length: Number(values.queries) }, () => generator.query());
const random = rng(7);
const times = { pruned: [] as number[], every: [] as number[] };
let differ = 0;
const search = (query: string, prune: boolean) => {
  index.prune = prune;
  const started = performance.now();
  const found = store.keywordSearch(query, {}, limit);
  return { found, ms: performance.now() - started };
};
// Warm-up (the skip entries of the common words' lists are made at their first look-up).
for (const q of queries.slice(0, 20)) for (const prune of [true, false]) search(q, prune);
for (const query of queries) {
  const first = random() < 0.5;
  const a = search(query, first);
  const b = search(query, !first);
  const [pruned, every] = first ? [a, b] : [b, a];
  times.pruned.push(pruned.ms);
  times.every.push(every.ms);
  if (JSON.stringify(pruned.found) !== JSON.stringify(every.found)) differ++;
}
const line = (name: string, ms: number[]) => {
  const l = latencySummary(ms);
  const mean = ms.reduce((s, x) => s + x, 0) / ms.length;
  return `| ${name} | ${l.p50.toFixed(2)} | ${l.p95.toFixed(2)} | ${mean.toFixed(2)} |`;
};
console.log(`\n${queries.length} queries, limit ${limit}; answers that differ: ${differ}\n`);
console.log('| keyword search | p50 ms | p95 ms | mean ms |\n| --- | --- | --- | --- |');
console.log(line('every matching row scored', times.every));
console.log(line('pruned (MaxScore)', times.pruned));
const report = store.memoryReport();
console.log(`\nskip entries: ${((report['keyword skip entries'] ?? 0) / 1024).toFixed(0)} KiB`);
await store.close();
await database.db.destroy();
