/**
 * The approximate vector graph (src/knowledge/search/sqlite/vector/ann-graph.ts) against the exact
 * scan, on the vectors of an existing SQLite database (e.g. one `bench:scale -- --keep --dir DIR`
 * filled):
 *
 *   npm run bench:ann -- DIR/aps.sqlite [rows] [--text] [--limit 10] [--lists 320,640]
 *                        [--graph FILE] [--links 32]
 *
 * Reports the graph's build time (in its worker thread, nothing else running), then per search list
 * (the graph's ef, `--lists`) search p50 / p95 (exact re-scoring from the table included) and
 * recall@10 against the scan, for 200 queries asking `--limit` candidates each (a retrieval of topK
 * 10 asks 132): near stored vectors (a stored vector plus small noise), or with `--text`
 * bench:scale's text queries (its sentence generator, seed 42) embedded by the default model, which
 * lie farther from the rows. `--graph FILE` keeps the built graph there and uses it on the next run
 * (the same database and rows: the graph is a function of them), since a million rows take half an
 * hour.
 */
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { createEmbeddingProvider } from '../src/knowledge/embeddings/index.js';
import { statementCache } from '../src/knowledge/search/sqlite/statements.js';
import { VectorIndex, type IndexRow } from '../src/knowledge/search/sqlite/vector/vector-index.js';
import { tableVectors } from '../src/knowledge/search/sqlite/vector/vector-tables.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    text: { type: 'boolean', default: false },
    limit: { type: 'string', default: '10' },
    lists: { type: 'string', default: '320' },
    graph: { type: 'string' },
    links: { type: 'string', default: '32' },
  },
});
const [file, rowsArg] = positionals;
if (file === undefined) throw new Error('usage: bench:ann <database file> [rows] [--text]');
const limit = Number(values.limit);
const lists = values.lists.split(',').map(Number);
const db = new Database(file, { readonly: true });
const [table, dims] = db
  .prepare('select table_name, dimensions from knowledge_vector_tables')
  .raw()
  .get() as [string, number];
const select = db.prepare(`select chunk_id, embedding, document_id from ${table} limit ?`).raw();
const rows: IndexRow[] = (select.all(Number(rowsArg ?? 1e9)) as [string, Buffer, string][]).map(
  ([chunkId, blob, documentId]) => ({
    chunkId,
    documentId,
    projectKey: '',
    vector: new Float32Array(new Uint8Array(blob).buffer),
  }),
);

// The indexes re-score their candidates from the table, as the store's do.
const source = tableVectors(statementCache(db), table);
const exact = new VectorIndex(dims, source);
exact.add(rows);
const connectivity = Number(values.links);
const built = new VectorIndex(dims, source, { annMin: 1, annGraph: { connectivity } });
built.add(rows);
let buildS = Number.NaN;
const graphFile = values.graph;
const cached = graphFile !== undefined && existsSync(graphFile);
const state = built.state().graph!;
if (cached) {
  await built.restoreGraph(graphFile, { ...state, covered: rows.length });
} else {
  const started = performance.now();
  // Sent to the graph's worker, which builds it on a thread of its own.
  while (built.buildGraph(1000)) await new Promise((resolve) => setTimeout(resolve, 5));
  buildS = (performance.now() - started) / 1000;
  if (graphFile !== undefined) await built.graph?.save(graphFile);
}
rows.length = 0;

let seed = 3;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
async function textQueries(): Promise<Float32Array[]> {
  const generator = new SentenceGenerator(
    loadParaphrase().docs.map((d) => d.markdown),
    rng(42),
  );
  const embedder = createEmbeddingProvider(loadConfig({ PORT: '0' }, '.').embedding);
  await embedder.ready();
  const vectors: Float32Array[] = [];
  for (let i = 0; i < 200; i++) vectors.push(await embedder.embedQuery(generator.query()));
  await embedder.close();
  return vectors;
}
const near = () => {
  const count = exact.size;
  const sample = exact.state();
  return Array.from({ length: 200 }, () => {
    // A stored row (its int8 copy scaled back) plus noise.
    const r = Math.floor(random() * count);
    const q = sample.int8.subarray(r * Math.ceil(dims / 8) * 8, r * Math.ceil(dims / 8) * 8 + dims);
    return Float32Array.from(q, (x) => x * (sample.scales[r] ?? 0) + (random() - 0.5) * 0.05);
  });
};
const queries = values.text ? await textQueries() : near();

function run(index: VectorIndex): { p50: number; p95: number; ids: string[][] } {
  const times: number[] = [];
  const ids: string[][] = [];
  for (const q of queries) {
    const t0 = performance.now();
    ids.push(
      index
        .search(q, {}, limit)
        .slice(0, 10)
        .map((c) => c.chunkId),
    );
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[100] ?? 0, p95: times[190] ?? 0, ids };
}

const ms = (x: number) => `${x.toFixed(2)} ms`;
run(exact); // warm-up
const scan = run(exact);
console.log(
  `${exact.size} vectors of ${dims} dimensions; ${values.text ? 'text queries' : 'queries near rows'}, ${limit} candidates asked`,
);
console.log(
  cached
    ? `graph: loaded from ${graphFile}`
    : `graph build: ${buildS.toFixed(1)} s (its worker thread)`,
);
const report = built.memoryReport();
const graphBytes = report['vector graph (estimate) + keys'] ?? 0;
console.log(`graph bytes per vector: ${(graphBytes / exact.size).toFixed(0)}`);
console.log(`scan p50 / p95: ${ms(scan.p50)} / ${ms(scan.p95)}\n`);
console.log('| search list | graph p50 | graph p95 | recall@10 vs the scan |\n|---|---|---|---|');
const path = graphFile ?? join(tmpdir(), `ann-eval-${process.pid}.graph`);
if (graphFile === undefined) await built.graph?.save(path);
for (const list of lists) {
  const annGraph = { connectivity, searchList: list };
  const index = VectorIndex.fromState(built.state(), source, { annMin: 1, annGraph });
  await index.restoreGraph(path, { ...state, covered: exact.size });
  run(index); // warm-up
  const graph = run(index);
  let found = 0;
  graph.ids.forEach((ids, i) => {
    found += ids.filter((id) => scan.ids[i]?.includes(id)).length;
  });
  const recall = (found / (10 * queries.length)).toFixed(4);
  console.log(`| ${list} | ${ms(graph.p50)} | ${ms(graph.p95)} | ${recall} |`);
  index.close();
}
built.close();
if (graphFile === undefined) rmSync(path, { force: true });
db.close();
