/**
 * PostgreSQL's HNSW recall at a million vectors (issue 13), without filling a million chunks
 * through the store (~100 chunks/s on this machine: ~3 h): the vectors of a SQLite database that
 * bench:scale filled are copied into a table of the store's vector column type, the store's own
 * HNSW index (`HNSW_BUILD`, cosine) is built over them in one `create index` (pgvector's bulk
 * build; the store builds it row by row as chunks commit), and the recall/latency curve is measured
 * as bench:retrieval measures it at 100k (`hnswCurve`): recall@10 against an exact scan of the same
 * table, for bench:scale's text queries embedded by the default model.
 *
 *   npm run bench:pg-hnsw -- --from <bench:scale dir>/aps.sqlite [--queries 100]
 *                            [--ef 100,200,400,800,1000] [--url postgres://…] [--keep]
 *
 * Without `--url` (or BENCH_DATABASE_URL) a throwaway cluster is started. The table is kept in
 * the database with `--keep` and reused when it is there (the index takes the longest).
 *
 * `--centred`: also the curve of a graph over the vectors minus their mean (a second column and
 * index), searched with the query minus the mean and re-ranked by the true cosine — what the
 * SQLite store's graph does (ann-graph.ts), measured here for PostgreSQL; not what the store does.
 * `--centred-only`: that curve alone.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { createEmbeddingProvider } from '../src/knowledge/embeddings/index.js';
import { HNSW_BUILD } from '../src/knowledge/search/postgres/vector-tables.js';
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
    centred: { type: 'boolean', default: false },
    'centred-only': { type: 'boolean', default: false },
    seed: { type: 'string', default: '42' },
  },
});
if (values.from === undefined) throw new Error('--from <bench:scale dir>/aps.sqlite is required');
const log = (line: string) => process.stderr.write(`${line}\n`);
const TABLE = 'bench_hnsw_scale';
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
const total = sqlite.prepare(`select count(*) from ${sourceTable}`).pluck().get() as number;

const server = values.url === undefined ? startPostgres(log) : undefined;
const url = values.url ?? (await server!.keptDatabase('aps_bench_hnsw_scale')).url;
const pool = new pg.Pool({ connectionString: url, max: 2 });

/** The store's HNSW index (`HNSW_BUILD`, cosine) over `table.column`, unless it is there. */
async function buildIndex(table: string, column: string): Promise<void> {
  const indexed = await pool.query(`select 1 from pg_indexes where indexname = $1`, [
    `${table}_hnsw`,
  ]);
  if (indexed.rowCount !== 0) return;
  log(`building the HNSW index of ${table}.${column} (${HNSW_BUILD})`);
  const t0 = performance.now();
  const client = await pool.connect();
  try {
    await client.query(`set maintenance_work_mem = '4GB'`);
    await client.query('set max_parallel_maintenance_workers = 1');
    await client.query(
      `create index ${table}_hnsw on ${table} using hnsw (${column} vector_cosine_ops) ${HNSW_BUILD}`,
    );
  } finally {
    client.release();
  }
  log(`index built in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/**
 * The curve of a graph over `embedding − mean`: a table of its own (made once, kept with the
 * other), since adding the column to the first would re-insert every row into its graph.
 */
async function centredCurve(queries: Float32Array[], efs: number[]): Promise<string[]> {
  const centred = `${TABLE}_centred`;
  const averaged = await pool.query<{ mean: string }>(
    `select avg(embedding)::text as mean from ${TABLE}`,
  );
  const mean = Float32Array.from(JSON.parse(averaged.rows[0]?.mean ?? '[]') as number[]);
  const made = await pool.query(`select 1 from pg_class where relname = $1`, [centred]);
  if (made.rowCount === 0) {
    log('centring the vectors');
    await pool.query(
      `create table ${centred} as
         select chunk_id, embedding, (embedding - $1::vector)::vector(${dims}) as centred
         from ${TABLE}`,
      [`[${Array.from(mean).join(',')}]`],
    );
  }
  await buildIndex(centred, 'centred');
  log('measuring the centred curve');
  return hnswCurveOf(pool, centred, queries, efs, mean);
}

try {
  await pool.query('create extension if not exists vector');
  const existing = await pool.query<{ n: string }>(
    `select count(*) as n from pg_class where relname = $1`,
    [TABLE],
  );
  const filled =
    existing.rows[0]?.n === '1' &&
    Number((await pool.query<{ n: string }>(`select count(*) as n from ${TABLE}`)).rows[0]?.n) ===
      total;
  if (!filled) {
    await pool.query(`drop table if exists ${TABLE}`);
    await pool.query(
      `create table ${TABLE} (chunk_id text primary key, embedding vector(${dims}) not null)`,
    );
    log(`copying ${total} vectors of ${dims} dimensions`);
    const t0 = performance.now();
    const rows = sqlite
      .prepare(`select chunk_id, embedding from ${sourceTable}`)
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
  await buildIndex(TABLE, 'embedding');
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
  const curve = values['centred-only'] ? [] : await hnswCurveOf(pool, TABLE, queries, efs);
  const centred = values.centred || values['centred-only'] ? await centredCurve(queries, efs) : [];
  console.log(
    `\nbench:pg-hnsw, ${total} vectors (${dims} dimensions), ${queries.length} queries\n`,
  );
  for (const line of curve) console.log(`- ${line}`);
  for (const line of centred) console.log(`- centred graph, ${line}`);
  if (!values.keep) await pool.query(`drop table if exists ${TABLE}, ${TABLE}_centred`);
} finally {
  await pool.end();
  await embedder.close();
  sqlite.close();
  if (!values.keep) server?.stop();
}
