/**
 * PostgreSQL's HNSW recall at a million vectors, without filling a million chunks
 * through the store (~100 chunks/s on this machine: ~3 h): the vectors of a SQLite database that
 * bench:scale filled are copied into a vector table listed in `knowledge_vector_tables` (a
 * migrated database), the store's own graph is built over them by the store's own code
 * (`GraphBuilds`: centred on their mean, `create index concurrently`), and the recall/latency
 * curve is measured as bench:retrieval measures it at 100k (`hnswCurveOf`): recall@10 against an
 * exact scan of the same table, for bench:scale's text queries embedded by the default model.
 *
 *   npm run bench:pg-hnsw -- --from <bench:scale dir>/aps.sqlite [--queries 100]
 *                            [--ef 100,200,400,800,1000] [--url postgres://…] [--keep] [--raw]
 *                            [--limit N]
 *
 * Without `--url` (or BENCH_DATABASE_URL) a throwaway cluster is started. The table is kept in
 * the database with `--keep` and reused when it is there (the graph takes the longest).
 *
 * `--limit N`: the first N vectors only (a table of its own).
 * `--raw`: also the curve of a graph over the raw, uncentred vectors (what an older table keeps
 * until its centred graph replaces it).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { createEmbeddingProvider } from '../src/knowledge/embeddings/index.js';
import { openDatabase } from '../src/db/database.js';
import { MIGRATIONS } from '../src/db/migrations/index.js';
import { migrate } from '../src/db/migrator.js';
import {
  GraphBuilds,
  HNSW_BUILD,
  parseCentre,
} from '../src/knowledge/search/postgres/vector/vector-graph.js';
import { EXACT_SEARCH_MAX } from '../src/knowledge/search/postgres/vector/vector-tables.js';
import { hnswCurveOf, startPostgres } from './retrieval/postgres.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    queries: { type: 'string', default: '100' },
    ef: { type: 'string', default: '100,200,400,800,1000' },
    url: { type: 'string' },
    keep: { type: 'boolean', default: false },
    raw: { type: 'boolean', default: false },
    limit: { type: 'string' },
    seed: { type: 'string', default: '42' },
  },
});
if (values.from === undefined) throw new Error('--from <bench:scale dir>/aps.sqlite is required');
const log = (line: string) => process.stderr.write(`${line}\n`);
const limit = values.limit === undefined ? undefined : Number(values.limit);
/** One table per size (`--limit`): each kept with its graphs. */
const TABLE = limit === undefined ? 'bench_hnsw_scale' : `bench_hnsw_scale_${limit}`;
const BATCH = 2000;

const sqlite = new Database(resolve(values.from), { readonly: true });
const config = loadConfig({ PORT: '0' }, resolve(values.from, '..'));
const embedder = createEmbeddingProvider(config.embedding);
await embedder.ready();
const source = sqlite
  .prepare('select table_name, dimensions from knowledge_vector_tables where model = ?')
  .raw()
  .get(embedder.model) as [string, number] | undefined;
if (source === undefined) throw new Error(`${values.from}: no vector table of ${embedder.model}`);
const [sourceTable, dims] = source;
const total = Math.min(
  limit ?? Number.POSITIVE_INFINITY,
  sqlite.prepare(`select count(*) from ${sourceTable}`).pluck().get() as number,
);

const server = values.url === undefined ? startPostgres(log) : undefined;
const url = values.url ?? (await server!.keptDatabase('aps_bench_hnsw_scale')).url;
// A graph build of a million rows wants its graph in memory (pgvector's advice), one session.
for (const setting of [`maintenance_work_mem = '4GB'`, 'max_parallel_maintenance_workers = 1']) {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`alter database ${new URL(url).pathname.slice(1)} set ${setting}`);
  await admin.end();
}
const database = await openDatabase({
  driver: 'postgres',
  url,
  poolMax: 4,
  statementTimeoutMs: 0,
  connectTimeoutMs: 5000,
});
if (database.driver !== 'postgres') throw new Error('expected PostgreSQL');
const migrated = await migrate(database, MIGRATIONS);
if (migrated.status !== 'ok') throw new Error(`migrations failed: ${migrated.errorMessage}`);
const pool = database.pool;

/** A graph over the raw vectors (`HNSW_BUILD`, cosine), unless it is there. */
async function buildRawGraph(): Promise<void> {
  const index = `${TABLE}_raw_graph`;
  const indexed = await pool.query(`select 1 from pg_indexes where indexname = $1`, [index]);
  if (indexed.rowCount !== 0) return;
  log(`building a graph over the raw vectors (${HNSW_BUILD})`);
  const t0 = performance.now();
  await pool.query(
    `create index ${index} on ${TABLE} using hnsw (embedding vector_cosine_ops) ${HNSW_BUILD}`,
  );
  log(`built in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** The store's graph over the table, built by the store's code unless it is there. */
async function storeGraph() {
  const builds = new GraphBuilds(pool, EXACT_SEARCH_MAX, {
    info: (fields, message) => log(`${message} ${JSON.stringify(fields)}`),
    warn: (fields, message) => log(`${message} ${String((fields as { err?: unknown }).err)}`),
  });
  builds.schedule({ name: TABLE, dimensions: dims });
  await builds.settled();
  const { rows } = await pool.query<{ centre: string | null }>(
    'select centre from knowledge_vector_tables where table_name = $1',
    [TABLE],
  );
  const centre = parseCentre(rows[0]?.centre);
  if (centre === null) throw new Error('the store built no graph');
  return { name: TABLE, dimensions: dims, centre };
}

try {
  await pool.query('create extension if not exists vector');
  const existing = await pool.query<{ n: string | number }>(
    `select count(*) as n from pg_class where relname = $1`,
    [TABLE],
  );
  const filled =
    Number(existing.rows[0]?.n) === 1 &&
    Number((await pool.query<{ n: string }>(`select count(*) as n from ${TABLE}`)).rows[0]?.n) ===
      total;
  if (!filled) {
    await pool.query(`drop table if exists ${TABLE}`);
    await pool.query('delete from knowledge_vector_tables where table_name = $1', [TABLE]);
    await pool.query(
      `create table ${TABLE} (chunk_id text primary key, embedding vector(${dims}) not null)`,
    );
    await pool.query(
      `insert into knowledge_vector_tables (model, dimensions, table_name) values ($1, $2, $3)`,
      [TABLE, dims, TABLE],
    );
    log(`copying ${total} vectors of ${dims} dimensions`);
    const t0 = performance.now();
    const rows = sqlite
      .prepare(`select chunk_id, embedding from ${sourceTable} limit ${total}`)
      .raw()
      .iterate() as IterableIterator<[string, Buffer]>;
    let ids: string[] = [];
    let vectors: string[] = [];
    const flush = async () => {
      await pool.query(
        `insert into ${TABLE} (chunk_id, embedding) select * from unnest($1::text[], $2::vector[])`,
        [ids, vectors],
      );
      ids = [];
      vectors = [];
    };
    for (const [id, blob] of rows) {
      const v = new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
      ids.push(id);
      vectors.push(`[${Array.from(v).join(',')}]`);
      if (ids.length === BATCH) await flush();
    }
    if (ids.length > 0) await flush();
    log(`copied in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  const graph = await storeGraph();
  if (values.raw) await buildRawGraph();
  const generator = new SentenceGenerator(
    loadParaphrase().docs.map((d) => d.markdown),
    rng(Number(values.seed)),
  );
  const queries: Float32Array[] = [];
  for (let i = 0; i < Number(values.queries); i++) {
    queries.push(await embedder.embedQuery(generator.query()));
  }
  const efs = values.ef.split(',').map(Number);
  log('measuring the curve');
  const curve = await hnswCurveOf(pool, TABLE, queries, efs, graph);
  const raw = values.raw ? await hnswCurveOf(pool, TABLE, queries, efs) : [];
  console.log(
    `\nbench:pg-hnsw, ${total} vectors (${dims} dimensions), ${queries.length} queries\n`,
  );
  for (const line of curve) console.log(`- the store's graph (centred), ${line}`);
  for (const line of raw) console.log(`- a graph over the raw vectors, ${line}`);
  if (!values.keep) {
    await pool.query(`drop table if exists ${TABLE}`);
    await pool.query('delete from knowledge_vector_tables where table_name = $1', [TABLE]);
  }
} finally {
  await database.close();
  await embedder.close();
  sqlite.close();
  if (!values.keep) server?.stop();
}
