/**
 * `--db postgres` for bench/retrieval.ts: a PostgreSQL server (BENCH_DATABASE_URL, or a throwaway
 * cluster started with scripts/postgres/cluster.sh), a fresh database per bench server, and the
 * recall of the store's vector search (HNSW) against exact search.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { PostgresDatabase } from '../../src/db/database.js';
import type { ChunkStore } from '../../src/knowledge/search/chunk-store.js';
import {
  graphOrder,
  graphQuery,
  parseCentre,
  type VectorTable,
} from '../../src/knowledge/search/postgres/vector/vector-graph.js';
import { EXACT_SEARCH_MAX } from '../../src/knowledge/search/postgres/vector/vector-tables.js';

const CLUSTER = resolve(import.meta.dirname, '../../scripts/postgres/cluster.sh');

export interface PostgresServer {
  adminUrl: string;
  /** A new empty database (with pgvector, from the template) for one bench server. */
  createDatabase(label: string): Promise<{ url: string; drop: () => Promise<void> }>;
  /** The database `name`, created when missing (`created`); never dropped by the bench. */
  keptDatabase(name: string): Promise<{ url: string; created: boolean }>;
  stop(): void;
}

async function admin(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

export function startPostgres(log: (line: string) => void): PostgresServer {
  let adminUrl = process.env.BENCH_DATABASE_URL;
  let clusterDir: string | undefined;
  if (adminUrl === undefined) {
    clusterDir = join(mkdtempSync(join(tmpdir(), 'aps-bench-pg-')), 'cluster');
    execFileSync('bash', [join(CLUSTER, '../install-pgvector.sh')], { stdio: 'inherit' });
    adminUrl = execFileSync('bash', [CLUSTER, 'start', clusterDir], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
    log(`PostgreSQL: throwaway cluster at ${adminUrl}`);
  }
  const url = adminUrl;
  return {
    adminUrl: url,
    async keptDatabase(name) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      let created = false;
      try {
        const found = await client.query('select 1 from pg_database where datname = $1', [name]);
        if (found.rowCount === 0) {
          await client.query(`create database ${client.escapeIdentifier(name)}`);
          created = true;
        }
      } finally {
        await client.end();
      }
      const target = new URL(url);
      target.pathname = `/${name}`;
      return { url: target.toString(), created };
    },
    async createDatabase(label) {
      const name = `aps_bench_${label.replace(/\W/g, '_')}_${randomUUID().slice(0, 8)}`;
      await admin(url, `create database ${name}`);
      const target = new URL(url);
      target.pathname = `/${name}`;
      return {
        url: target.toString(),
        drop: () => admin(url, `drop database if exists ${name} with (force)`),
      };
    },
    stop() {
      if (clusterDir !== undefined) execFileSync('bash', [CLUSTER, 'stop', clusterDir]);
    },
  };
}

/**
 * Recall@10 of the store's vector search (what retrieval uses: HNSW on PostgreSQL) against an
 * exact scan of the same vectors, over the given query vectors.
 */
export async function hnswRecall(
  database: PostgresDatabase,
  store: ChunkStore,
  model: string,
  vectors: Float32Array[],
): Promise<number> {
  const tables = await database.pool.query<{ table_name: string }>(
    'select table_name from knowledge_vector_tables where model = $1 and dimensions = $2',
    [model, vectors[0]?.length ?? 0],
  );
  const table = tables.rows[0]?.table_name;
  if (table === undefined) throw new Error(`no vector table for ${model}`);
  let found = 0;
  let total = 0;
  for (const vector of vectors) {
    const approx = await store.search(
      { text: null, vector, model, filter: {}, limit: 10 },
      { rank: (e) => e.semantic.slice(0, 10) },
    );
    const client = await database.pool.connect();
    let exact: string[];
    try {
      await client.query('begin');
      await client.query('set local enable_indexscan = off');
      await client.query('set local enable_bitmapscan = off');
      const rows = await client.query<{ chunk_id: string }>(
        `select chunk_id from ${table} order by embedding <=> $1::vector limit 10`,
        [`[${Array.from(vector).join(',')}]`],
      );
      exact = rows.rows.map((r) => r.chunk_id);
      await client.query('commit');
    } finally {
      client.release();
    }
    const got = new Set(approx.map((h) => h.chunk.id));
    found += exact.filter((id) => got.has(id)).length;
    total += exact.length;
  }
  return total === 0 ? 1 : found / total;
}

/**
 * The recall/latency curve of the HNSW index: for each `hnsw.ef_search`, recall@10 against the
 * exact top 10 and the latency of the graph scan alone (iterative scan, as the store runs it),
 * over the given query vectors.
 */
export async function hnswCurve(
  database: PostgresDatabase,
  model: string,
  vectors: Float32Array[],
  efs: readonly number[],
): Promise<string[]> {
  const graph = await storeGraph(database.pool, model, vectors[0]?.length ?? 0);
  if (graph === null) return [];
  return hnswCurveOf(database.pool, graph.name, vectors, efs, graph);
}

/**
 * The store's vector table of `model`, once its graph is built: a server builds it in the
 * background when the table passes `EXACT_SEARCH_MAX` chunks (vector-graph.ts); waited for here.
 */
export async function storeGraph(
  pool: pg.Pool,
  model: string,
  dimensions: number,
): Promise<VectorTable | null> {
  for (;;) {
    const { rows } = await pool.query<{ table_name: string; centre: string | null }>(
      `select table_name, centre from knowledge_vector_tables
       where model = $1 and dimensions = $2`,
      [model, dimensions],
    );
    const row = rows[0];
    if (row === undefined) return null;
    const table = { name: row.table_name, dimensions, centre: parseCentre(row.centre) };
    if (table.centre !== null) return table;
    const counted = await pool.query<{ n: number }>(
      `select count(*)::int as n from (select 1 from ${table.name} limit ${EXACT_SEARCH_MAX + 1}) s`,
    );
    if ((counted.rows[0]?.n ?? 0) <= EXACT_SEARCH_MAX) return table; // no graph: exact search
    await new Promise((done) => setTimeout(done, 1000));
  }
}

/**
 * hnswCurve over the vector table `table` (column `embedding`, chunk ids in `chunk_id`), walking
 * the graph of `graph` (the store's: over the vectors minus its centre, with the query minus it;
 * without, a graph over `embedding` itself), its candidates re-ranked by their cosine with the
 * query, as the store does.
 */
export async function hnswCurveOf(
  pool: pg.Pool,
  table: string,
  vectors: Float32Array[],
  efs: readonly number[],
  graph?: VectorTable,
): Promise<string[]> {
  const literal = (v: Float32Array) => `[${Array.from(v).join(',')}]`;
  const client = await pool.connect();
  try {
    const exact: string[][] = [];
    await client.query('begin');
    await client.query('set local enable_indexscan = off');
    await client.query('set local enable_bitmapscan = off');
    for (const v of vectors) {
      const { rows } = await client.query<{ chunk_id: string }>(
        `select chunk_id from ${table} order by embedding <=> $1::vector limit 10`,
        [literal(v)],
      );
      exact.push(rows.map((r) => r.chunk_id));
    }
    await client.query('commit');
    const lines: string[] = [];
    for (const ef of efs) {
      await client.query('begin');
      await client.query(`set local hnsw.ef_search = ${ef}`);
      await client.query('set local hnsw.iterative_scan = relaxed_order');
      let found = 0;
      const ms: number[] = [];
      for (const [i, v] of vectors.entries()) {
        const t0 = performance.now();
        const walk =
          graph === undefined ? 'embedding <=> $1::vector' : graphOrder(graph, 'embedding', '$2');
        const params = [literal(v)];
        if (graph !== undefined) params.push(literal(graphQuery(graph, v)));
        const { rows } = await client.query<{ chunk_id: string }>(
          `select chunk_id from (
             select chunk_id, embedding <=> $1::vector as d from ${table}
             order by ${walk} limit 42
           ) s order by d limit 10`,
          params,
        );
        ms.push(performance.now() - t0);
        const want = new Set(exact[i]);
        found += rows.filter((r) => want.has(r.chunk_id)).length;
      }
      await client.query('commit');
      ms.sort((a, b) => a - b);
      const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0;
      const total = exact.reduce((n, e) => n + e.length, 0);
      lines.push(
        `ef_search ${ef}: recall@10 ${(total === 0 ? 1 : found / total).toFixed(3)}, graph scan p50 ${at(0.5).toFixed(1)} / p95 ${at(0.95).toFixed(1)} ms`,
      );
    }
    return lines;
  } finally {
    client.release();
  }
}
