/**
 * The approximate vector graph (src/knowledge/search/sqlite/ann-graph.ts) against the exact scan,
 * on the vectors of an existing SQLite database (e.g. one `bench:scale -- --keep --dir DIR` filled):
 *
 *   npm run bench:ann -- DIR/aps.sqlite [rows] [--text]
 *
 * Reports the graph's build time (one thread, no other work), search p50 / p95 of both (topK 10,
 * exact re-scoring included) and recall@10 of the graph against the scan, for 200 queries: near
 * stored vectors (a stored vector plus small noise), or with `--text` bench:scale's text queries
 * (its sentence generator, seed 42) embedded by the default model, which lie farther from the rows.
 */
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { createEmbeddingProvider } from '../src/knowledge/embeddings/index.js';
import { statementCache } from '../src/knowledge/search/sqlite/statements.js';
import { VectorIndex, type IndexRow } from '../src/knowledge/search/sqlite/vector-index.js';
import { tableVectors } from '../src/knowledge/search/sqlite/vector-tables.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';

const args = process.argv.slice(2);
const text = args.includes('--text');
const [file, rowsArg] = args.filter((a) => a !== '--text');
if (file === undefined) throw new Error('usage: bench:ann <database file> [rows] [--text]');
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
const approximate = new VectorIndex(dims, source, { annMin: 1 });
const started = performance.now();
approximate.add(rows);
while (approximate.buildGraph(1000));
const buildS = (performance.now() - started) / 1000;

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
const queries = text
  ? await textQueries()
  : Array.from({ length: 200 }, () => {
      const v = rows[Math.floor(random() * rows.length)]?.vector ?? new Float32Array(dims);
      return Float32Array.from(v, (x) => x + (random() - 0.5) * 0.05);
    });

function run(index: VectorIndex): { p50: number; p95: number; ids: string[][] } {
  const times: number[] = [];
  const ids: string[][] = [];
  for (const q of queries) {
    const t0 = performance.now();
    ids.push(index.search(q, {}, 10).map((c) => c.chunkId));
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[100] ?? 0, p95: times[190] ?? 0, ids };
}

run(exact); // warm-up
run(approximate);
const scan = run(exact);
const graph = run(approximate);
let found = 0;
graph.ids.forEach((ids, i) => {
  found += ids.filter((id) => scan.ids[i]?.includes(id)).length;
});
const ms = (x: number) => `${x.toFixed(2)} ms`;
console.log(
  `${rows.length} vectors of ${dims} dimensions; ${text ? 'text queries' : 'queries near rows'}`,
);
console.log(`graph build: ${buildS.toFixed(1)} s`);
console.log(`scan p50 / p95: ${ms(scan.p50)} / ${ms(scan.p95)}`);
console.log(`graph p50 / p95: ${ms(graph.p50)} / ${ms(graph.p95)}`);
console.log(`recall@10 of the graph vs the scan: ${(found / (10 * queries.length)).toFixed(4)}`);
const report = approximate.memoryReport();
console.log(
  `graph bytes per vector: ${((report['vector graph (estimate) + keys'] ?? 0) / rows.length).toFixed(0)}`,
);
db.close();
