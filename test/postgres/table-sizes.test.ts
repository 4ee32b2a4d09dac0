/**
 * A vector table's size as PostgreSQL estimates it (table-sizes.ts), and what a search does with
 * it: the HNSW beam of its size band, and no count of an unfiltered scope once the table is
 * estimated past `exactSearchMax`. Runs only when TEST_DATABASE_URL is set.
 */
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../src/db/database.js';
import { seededRandom } from '../../src/knowledge/embeddings/static/sif.js';
import type { NewChunk } from '../../src/knowledge/search/chunk-store.js';
import { PostgresChunkStore } from '../../src/knowledge/search/postgres/postgres-chunk-store.js';
import { TableSizes } from '../../src/knowledge/search/postgres/vector/table-sizes.js';
import { addDocument, chunk, commit, cosine, ids, near, request, semanticOnly } from './chunks.js';
import { instrumentedPool, migratedDatabase, TEST_DATABASE_URL } from './pg.js';

const D = 16;

describe.skipIf(TEST_DATABASE_URL === undefined)('vector table sizes', () => {
  const fresh = migratedDatabase();
  let database: PostgresDatabase;
  let pool: pg.Pool;
  const random = seededRandom(23);
  const base = near(new Float32Array(D).fill(1), random, 0);

  beforeAll(() => {
    ({ database } = fresh);
    pool = database.pool;
  });

  it('estimates a table from the statistics, asks again once old, and forgets a dropped one', async () => {
    await pool.query('create table sized (id int primary key)');
    await pool.query('insert into sized select generate_series(1, 1234)');
    await pool.query('analyze sized');
    let now = 0;
    const sizes = new TableSizes(pool, 1000, () => now);
    expect(sizes.rows('sized')).toBeUndefined();
    await sizes.settled();
    expect(sizes.rows('sized')).toBe(1234);

    await pool.query('insert into sized select generate_series(1235, 3000)');
    await pool.query('analyze sized');
    now = 999;
    expect(sizes.rows('sized')).toBe(1234);
    await sizes.settled();
    expect(sizes.rows('sized')).toBe(1234); // not old yet: not asked again
    now = 2000;
    expect(sizes.rows('sized')).toBe(1234); // old: the last estimate, and a newer one asked for
    await sizes.settled();
    expect(sizes.rows('sized')).toBe(3000);

    await pool.query('drop table sized');
    now = 4000;
    sizes.rows('sized');
    await sizes.settled();
    expect(sizes.rows('sized')).toBeUndefined();
  });

  it('a search takes the beam of the table’s size band, and counts no unfiltered scope past the threshold', async () => {
    const model = 'sized-model';
    const statements: string[] = [];
    const other = new pg.Pool({ connectionString: fresh.url, max: 2 });
    try {
      const store = new PostgresChunkStore(
        instrumentedPool(other, (sql) => {
          statements.push(sql);
        }),
        { exactSearchMax: 300 },
      );
      const all: NewChunk[] = [];
      for (const project of ['a', 'b']) {
        const chunks = Array.from({ length: 200 }, (_, i) =>
          chunk(`${project} ${i}`, near(base, random, 1.2)),
        );
        const doc = await addDocument(database.db, `${project}.md`, project);
        expect(await commit(store, doc, chunks, model, D)).toBe('committed');
        all.push(...chunks);
      }
      await store.buildGraphs();
      const { rows } = await pool.query<{ table_name: string }>(
        'select table_name from knowledge_vector_tables where model = $1',
        [model],
      );
      await pool.query(`analyze ${rows[0]!.table_name}`);
      const q = near(base, random, 1.2);
      const exactTop = (chunks: NewChunk[]) =>
        [...chunks]
          .sort((x, y) => cosine(q, y.vector) - cosine(q, x.vector))
          .slice(0, 10)
          .map((c) => c.id);
      const search = async (projectId?: string) => {
        statements.length = 0;
        const filter = projectId === undefined ? {} : { projectId };
        const hits = await store.search(
          request({ vector: q, model, limit: 10, filter }),
          semanticOnly,
        );
        return {
          ids: ids(hits),
          efSearch: /hnsw\.ef_search = (\d+)/.exec(statements.join('\n'))?.[1],
          counted: statements.some((s) => /select count\(\*\)/.test(s)),
        };
      };

      // The first search has no estimate: the widest beam, and the scope counted.
      expect(await search()).toEqual({ ids: exactTop(all), efSearch: '400', counted: true });
      await store.settled();
      // 400 chunks: the smallest band's beam, and the table is past the threshold uncounted.
      expect(await search()).toEqual({ ids: exactTop(all), efSearch: '100', counted: false });
      // A project's scope is still counted (200 chunks: searched exactly).
      const inA = all.filter((c) => c.content.startsWith('a '));
      expect(await search('a')).toEqual({ ids: exactTop(inA), efSearch: '100', counted: true });
    } finally {
      await other.end();
    }
  });
});
