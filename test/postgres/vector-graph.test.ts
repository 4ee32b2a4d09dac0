/**
 * The centred HNSW graph of a PostgreSQL vector table (vector-graph.ts): built once the table
 * holds more chunks than are searched exactly, centred on their mean, walked by every instance
 * from its next search; a graph over the raw vectors (a table made before) replaced and dropped;
 * a build cut short (shutdown) cancelled at once and built again by the next pass. Runs only
 * when TEST_DATABASE_URL is set.
 */
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../src/db/database.js';
import { seededRandom } from '../../src/knowledge/embeddings/static/sif.js';
import type { NewChunk } from '../../src/knowledge/search/chunk-store.js';
import { PostgresChunkStore } from '../../src/knowledge/search/postgres/postgres-chunk-store.js';
import {
  centreFunction,
  GraphBuilds,
  graphOrder,
  graphQuery,
  parseCentre,
} from '../../src/knowledge/search/postgres/vector/vector-graph.js';
import { addDocument, chunk, commit, cosine, ids, near, request, semanticOnly } from './chunks.js';
import {
  freshDatabase,
  instrumentedPool,
  migratedDatabase,
  openMigrated,
  TEST_DATABASE_URL,
} from './pg.js';

const D = 16;

describe.skipIf(TEST_DATABASE_URL === undefined)('the centred HNSW graph', () => {
  const fresh = migratedDatabase();
  let database: PostgresDatabase;
  let pool: pg.Pool;
  const random = seededRandom(11);
  // Vectors around a common direction, as a static model's are: the mean is far from zero.
  const base = near(new Float32Array(D).fill(1), random, 0);
  const vectors = (n: number) => Array.from({ length: n }, () => near(base, random, 1.2));

  beforeAll(() => {
    ({ database } = fresh);
    pool = database.pool;
  });

  const recorded = async (model: string) =>
    (
      await pool.query<{ table_name: string; centre: string | null }>(
        'select table_name, centre from knowledge_vector_tables where model = $1',
        [model],
      )
    ).rows[0]!;
  /** The table's indexes by name, each with whether it is valid. */
  const graphs = async (table: string) =>
    Object.fromEntries(
      (
        await pool.query<{ name: string; valid: boolean }>(
          `select c.relname as name, i.indisvalid as valid from pg_index i
           join pg_class c on c.oid = i.indexrelid
           where i.indrelid = $1::regclass and c.relname like '%hnsw%'`,
          [table],
        )
      ).rows.map((r) => [r.name, r.valid]),
    );
  /** A vector table of `rows` random vectors (all components positive), listed for `model`. */
  const vectorTable = async (table: string, model: string, dims: number, rows: number) => {
    await pool.query(
      `create table ${table} (chunk_id text primary key, embedding vector(${dims}))`,
    );
    await pool.query(
      `insert into ${table}
       select g::text, (select array_agg(random() + 0.5)::real[] from generate_series(1, ${dims})
                        where g > 0)::vector(${dims})
       from generate_series(1, ${rows}) g`,
    );
    await pool.query(
      'insert into knowledge_vector_tables (model, dimensions, table_name) values ($1, $2, $3)',
      [model, dims, table],
    );
  };
  const exactTop = (all: NewChunk[], q: Float32Array, k: number) =>
    [...all]
      .sort((a, b) => cosine(q, b.vector) - cosine(q, a.vector))
      .slice(0, k)
      .map((c) => c.id);

  it('is built past exactSearchMax chunks, centred on their mean, and walked by another instance from its next search', async () => {
    const model = 'graph-model';
    const a = new PostgresChunkStore(pool, { exactSearchMax: 300 });
    const statements: string[] = [];
    const other = new pg.Pool({ connectionString: fresh.url, max: 2 });
    try {
      const b = new PostgresChunkStore(
        instrumentedPool(other, (sql) => {
          statements.push(sql);
        }),
        { exactSearchMax: 300 },
      );
      const first = vectors(200).map((v, i) => chunk(`first ${i}`, v));
      expect(await commit(a, await addDocument(database.db, 'first.md'), first, model, D)).toBe(
        'committed',
      );
      await a.buildGraphs();
      const { table_name: table, centre: none } = await recorded(model);
      expect(none).toBeNull();
      expect(await graphs(table)).toEqual({});
      const q = near(base, random, 1.2);
      // B reads the table (no centre yet) and searches its 200 chunks exactly.
      expect(ids(await b.search(request({ vector: q, model, limit: 10 }), semanticOnly))).toEqual(
        exactTop(first, q, 10),
      );

      const second = vectors(200).map((v, i) => chunk(`second ${i}`, v));
      expect(await commit(a, await addDocument(database.db, 'second.md'), second, model, D)).toBe(
        'committed',
      );
      await a.buildGraphs();
      expect(await graphs(table)).toEqual({ [`${table}_hnsw_centred`]: true });
      const centre = parseCentre((await recorded(model)).centre)!;
      const all = [...first, ...second];
      for (let j = 0; j < D; j++) {
        const mean = all.reduce((sum, c) => sum + c.vector[j]!, 0) / all.length;
        expect(centre[j]).toBeCloseTo(mean, 5);
      }

      statements.length = 0;
      const hits = await b.search(request({ vector: q, model, limit: 10 }), semanticOnly);
      expect(ids(hits)).toEqual(exactTop(all, q, 10));
      // B walked the centred graph: its search ordered by the vectors minus the centre.
      expect(statements.some((s) => s.includes(`${centreFunction(table)}()`))).toBe(true);
    } finally {
      await other.end();
    }
  });

  it('replaces the graph over the raw vectors of a table made before, then drops it', async () => {
    const model = 'raw-model';
    const all = vectors(400).map((v, i) => chunk(`raw ${i}`, v));
    // Committed by a store that would build no graph; then the graph such a table used to get.
    const before = new PostgresChunkStore(pool);
    expect(await commit(before, await addDocument(database.db, 'raw.md'), all, model, D)).toBe(
      'committed',
    );
    const { table_name: table } = await recorded(model);
    await pool.query(
      `create index ${table}_hnsw on ${table} using hnsw (embedding vector_cosine_ops)`,
    );
    const store = new PostgresChunkStore(pool, { exactSearchMax: 300 });
    const q = near(base, random, 1.2);
    const search = () => store.search(request({ vector: q, model, limit: 10 }), semanticOnly);
    expect(ids(await search())).toEqual(exactTop(all, q, 10));

    // A restart (not read-only) starts the pass, in the background.
    expect(await store.purgeLeftovers()).toEqual([]);
    while ((await recorded(model)).centre === null) {
      await new Promise((done) => setTimeout(done, 50));
    }
    await store.buildGraphs(); // waits for that pass (the old graph dropped last)
    expect(await graphs(table)).toEqual({ [`${table}_hnsw_centred`]: true });
    expect(ids(await search())).toEqual(exactTop(all, q, 10));
  });

  it('a database without the centre column (read-only after an earlier migration failed) still answers searches', async () => {
    const other = await freshDatabase();
    const opened = await openMigrated(other.url);
    try {
      await opened.pool.query('alter table knowledge_vector_tables drop column centre');
      const store = new PostgresChunkStore(opened.pool);
      const all = vectors(50).map((v, i) => chunk(`old ${i}`, v));
      const doc = await addDocument(opened.db, 'old.md');
      expect(await commit(store, doc, all, 'old-model', D)).toBe('committed');
      const q = near(base, random, 1.2);
      const hits = await store.search(
        request({ vector: q, model: 'old-model', limit: 10 }),
        semanticOnly,
      );
      expect(ids(hits)).toEqual(exactTop(all, q, 10));
      await store.close();
    } finally {
      await opened.close();
      await other.drop();
    }
  });

  it('two tables due together get their graphs one after the other', async () => {
    const tables = ['graph_pair_a', 'graph_pair_b'];
    for (const [i, table] of tables.entries()) {
      await vectorTable(table, `pair-${i}`, 16, 3000);
    }
    const builds = new GraphBuilds(pool, 1000);
    for (const table of tables) builds.schedule({ name: table, dimensions: 16 });
    // One build at a time: together, each would hold its memory and wait for the other's end.
    let most = 0;
    const state = { settled: false };
    const done = builds.settled().finally(() => (state.settled = true));
    while (!state.settled) {
      const { rows } = await pool.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_progress_create_index p
         join pg_class c on c.oid = p.relid where c.relname like 'graph_pair_%'`,
      );
      most = Math.max(most, rows[0]!.n);
      await new Promise((r) => setTimeout(r, 20));
    }
    await done;
    expect(most).toBe(1);
    for (const table of tables) {
      expect(await graphs(table)).toEqual({ [`${table}_hnsw_centred`]: true });
    }
  }, 120_000);

  it('past 2,000 dimensions the graph is over half-precision copies, and a search walks it', async () => {
    const table = 'graph_wide_vectors';
    const dims = 2100;
    await vectorTable(table, 'wide', dims, 1200);
    const builds = new GraphBuilds(pool, 1000);
    builds.schedule({ name: table, dimensions: dims });
    await builds.settled();
    expect(await graphs(table)).toEqual({ [`${table}_hnsw_centred`]: true });
    const graph = {
      name: table,
      dimensions: dims,
      centre: parseCentre((await recorded('wide')).centre),
    };
    const q = Float32Array.from({ length: dims }, () => random());
    // At 1,200 rows the planner would rather sort them all: the graph is what is asked about.
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query('set local enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `explain select chunk_id from ${table} order by ${graphOrder(graph, 'embedding', '$1')} limit 10`,
        [`[${graphQuery(graph, q).join(',')}]`],
      );
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain(`${table}_hnsw_centred`);
      await client.query('rollback');
    } finally {
      client.release();
    }
  }, 120_000);

  it('a build cut short by shutdown is cancelled at once, and the next pass builds it again', async () => {
    const table = 'graph_cut_vectors';
    await vectorTable(table, 'cut', 32, 12000);
    const first = new GraphBuilds(pool, 1000);
    first.schedule({ name: table, dimensions: 32 });
    // Waits for the index build to be running, then shuts down.
    for (;;) {
      const running = await pool.query(
        `select 1 from pg_stat_activity where query like 'create index concurrently ${table}%'`,
      );
      if (running.rowCount !== 0) break;
      await new Promise((done) => setTimeout(done, 20));
    }
    await first.close();
    const cut = await pool.query<{ centre: string | null }>(
      'select centre from knowledge_vector_tables where table_name = $1',
      [table],
    );
    expect(cut.rows[0]!.centre).toBeNull();
    // Cancelled before it finished: no graph, or an invalid one left.
    expect(Object.values(await graphs(table))).not.toContain(true);
    first.schedule({ name: table, dimensions: 32 }); // closed: no new pass
    await first.settled();

    const next = new GraphBuilds(pool, 1000);
    next.schedule({ name: table, dimensions: 32 });
    await next.settled();
    expect(await graphs(table)).toEqual({ [`${table}_hnsw_centred`]: true });
    const centre = await pool.query<{ centre: string | null }>(
      'select centre from knowledge_vector_tables where table_name = $1',
      [table],
    );
    expect(parseCentre(centre.rows[0]!.centre)).toHaveLength(32);
  }, 120_000);
});
