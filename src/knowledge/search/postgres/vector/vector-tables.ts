/**
 * Vectors on PostgreSQL: a pgvector table per (model, dimensions), listed in
 * `knowledge_vector_tables` and created on first use, race-safe between instances; and
 * nearest-neighbour search in it: exact for small scopes, through its HNSW graph (cosine, centred:
 * vector-graph.ts) otherwise.
 */
import type { Pool, PoolClient } from 'pg';
import {
  SEARCHABLE,
  vectorTableName,
  type Candidate,
  type SearchFilter,
} from '../../chunk-store.js';
import { vectorArrayBinary, vectorBinary } from '../encoding.js';
import { efSearchFor, TableSizes } from './table-sizes.js';
import { graphOrder, graphQuery, hasGraph, parseCentre, type VectorTable } from './vector-graph.js';

/** Advisory-lock class of vector-table creation ("aps" in ASCII, as the migration lock). */
export const LOCK_CLASS = 0x617073;

/**
 * Up to this many chunks in scope (filtered, or the whole collection), vector search is exact:
 * as fast as the graph at that size, and faster than walking it past chunks outside a scope. A
 * table gets its graph when it holds more (vector-graph.ts).
 */
export const EXACT_SEARCH_MAX = 10_000;

/** A cosine similarity from a cosine distance; a zero vector (NaN) has none, as on SQLite. */
function similarity(distance: number): number {
  return Number.isNaN(distance) ? 0 : 1 - distance;
}

/**
 * A nearest chunk, and the seq of its keyword row when asked for (null otherwise, or without one):
 * a hybrid search scores it by its keywords too (postgres-searches.ts), and needs no statement
 * of its own to find it.
 */
export interface NearestChunk extends Candidate {
  seq: number | null;
}

/** The seq of the keyword row of the chunk a nearest-chunk row names (`chunk_id`). */
const SEQ_OF = `(select f.seq::float8 from knowledge_chunks_fts f where f.chunk_id = s.chunk_id)`;

const nearestOf = (r: { chunkId: string; distance: number; seq: number | null }): NearestChunk => ({
  chunkId: r.chunkId,
  score: similarity(r.distance),
  seq: r.seq,
});

/**
 * `and …` conditions of the scope filters on a vector table `v`, parameters appended. With
 * `indexable` false they are written so that no B-tree index can serve them (`(…) is true`),
 * which leaves the planner the HNSW index as the only ordered path.
 */
function vectorScope(filter: SearchFilter, params: unknown[], indexable = true): string {
  const conditions: string[] = [];
  if (filter.projectId !== undefined) {
    params.push(filter.projectId);
    conditions.push(`v.project_key = $${params.length}`);
  }
  if (filter.documentId !== undefined) {
    params.push(filter.documentId);
    conditions.push(`v.document_id = $${params.length}`);
  }
  if (filter.documentIds !== undefined) {
    params.push(filter.documentIds);
    conditions.push(`v.document_id = any($${params.length}::text[])`);
  }
  return conditions.map((c) => (indexable ? ` and ${c}` : ` and (${c}) is true`)).join('');
}

/**
 * A table's centre, read so that a database without the column (read-only mode after a failed
 * earlier migration: 0017 not applied) still answers searches, exactly or by a graph made before.
 */
const CENTRE = `to_jsonb(t) ->> 'centre'`;

/** The key of a (model, dimensions) in the cache of tables. */
const tableKey = (model: string, dimensions: number) => `${model}\u0000${dimensions}`;

interface Features {
  /** pgvector 0.8+: `hnsw.iterative_scan` keeps scanning until the filters leave enough rows. */
  iterativeScan: boolean;
  vectorOid: number;
}

export class VectorTables {
  private readonly tables = new Map<string, VectorTable>();
  private features: Promise<Features> | null = null;
  /** Each table's rows as PostgreSQL estimates them: the beam, and whether to count a scope. */
  readonly sizes: TableSizes;

  constructor(
    private readonly pool: Pool,
    /** Scopes of up to this many chunks are searched exactly. */
    private readonly exactSearchMax = EXACT_SEARCH_MAX,
  ) {
    this.sizes = new TableSizes(pool);
  }

  /** What the installed pgvector offers, asked once (again after `forget`). */
  loadFeatures(): Promise<Features> {
    this.features ??= (async () => {
      // Casting loads pgvector's library, which defines its settings in this session.
      const { rows } = await this.pool.query<{ oid: number; iterative: boolean }>(
        `select 'vector'::regtype::oid::int as oid,
           '[1]'::vector is not null and exists (select 1 from pg_settings where name = 'hnsw.iterative_scan') as iterative`,
      );
      const row = rows[0];
      if (row === undefined) throw new Error('pgvector is not available');
      return { iterativeScan: row.iterative, vectorOid: row.oid };
    })().catch((error: unknown) => {
      this.features = null;
      throw error;
    });
    return this.features;
  }

  /** Forgets the tables found (some were dropped: a model switch, model-vectors.ts). */
  forgetTables(): void {
    this.tables.clear();
  }

  /** Forgets what was asked: after a failed commit, pgvector may have been re-created. */
  forget(): void {
    this.features = null;
  }

  /**
   * The `set local` settings of a search transaction of `limit` nearest vectors of a (model,
   * dimensions): an HNSW beam wider than the default 40, as wide as the table's size needs
   * (`efSearchFor`: from the last estimate of a table searched before; the widest without one);
   * with pgvector 0.8+ the scan goes on past filtered-out rows until `limit` pass (re-ordered by
   * exact distance).
   */
  searchSettings(features: Features, limit: number, model: string, dimensions: number): string {
    const table = this.tables.get(tableKey(model, dimensions));
    const rows = table === undefined ? undefined : this.sizes.rows(table.name);
    let settings = `; set local hnsw.ef_search = ${efSearchFor(rows, limit)}`;
    if (features.iterativeScan) {
      settings += '; set local hnsw.iterative_scan = relaxed_order';
      settings += `; set local hnsw.max_scan_tuples = ${Math.max(20_000, 200 * limit)}`;
    }
    return settings;
  }

  /** The vector table of a (model, dimensions): created (race-safe) when `create` is true. */
  async table(
    client: PoolClient | Pool,
    model: string,
    dimensions: number,
    create: boolean,
  ): Promise<VectorTable | null> {
    const key = tableKey(model, dimensions);
    const cached = this.tables.get(key);
    if (cached !== undefined) return cached;
    const find = async () =>
      (
        await client.query<{ table_name: string; centre: string | null }>(
          `select table_name, ${CENTRE} as centre from knowledge_vector_tables t
           where model = $1 and dimensions = $2`,
          [model, dimensions],
        )
      ).rows[0];
    let found = await find();
    let created = false;
    if (found === undefined && create) {
      const name = vectorTableName(model, dimensions);
      // Instances indexing their first document of a new model together: one creates the table,
      // the others wait here until it commits and then find it.
      await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, name]);
      found = await find();
      if (found === undefined) {
        created = true;
        // No graph yet: it is built once the table holds more than are searched exactly.
        await client.query(
          `create table if not exists ${name} (
             chunk_id text primary key references knowledge_chunks (id) on delete cascade,
             document_id text not null,
             project_key text not null,
             embedding vector(${dimensions}) not null
           )`,
        );
        await client.query(`create index if not exists ${name}_document on ${name} (document_id)`);
        await client.query(`create index if not exists ${name}_project on ${name} (project_key)`);
        await client.query(
          `insert into knowledge_vector_tables (model, dimensions, table_name) values ($1, $2, $3)
           on conflict do nothing`,
          [model, dimensions, name],
        );
        found = { table_name: name, centre: null };
      }
    }
    if (found === undefined) return null;
    const table = { name: found.table_name, dimensions, centre: parseCentre(found.centre) };
    // Not a table this transaction created: other searches must not use it before it commits.
    if (!created) this.tables.set(key, table);
    return table;
  }

  /**
   * The table with its centre as recorded now: a table without one may have had its centred graph
   * built since (by any instance), which searches walk from then on.
   */
  private async recentred(client: PoolClient, table: VectorTable): Promise<VectorTable> {
    if (table.centre !== null) return table;
    const { rows } = await client.query<{ centre: string | null }>(
      `select ${CENTRE} as centre from knowledge_vector_tables t where table_name = $1`,
      [table.name],
    );
    const centre = parseCentre(rows[0]?.centre);
    if (centre === null) return table;
    const updated = { ...table, centre };
    for (const [key, cached] of this.tables) if (cached === table) this.tables.set(key, updated);
    return updated;
  }

  /** Every vector table, of every model. */
  async all(client: PoolClient): Promise<string[]> {
    const { rows } = await client.query<{ table_name: string }>(
      'select table_name from knowledge_vector_tables order by table_name',
    );
    return rows.map((r) => r.table_name);
  }

  /**
   * Inserts vectors of a document's chunks (one statement). `features` were loaded before the
   * transaction began: a pool query while holding a client could wait for a free one forever.
   */
  async insert(
    client: PoolClient,
    features: Features,
    table: VectorTable,
    rows: { ids: string[]; documentId: string; projectKey: string; vectors: Float32Array[] },
  ): Promise<void> {
    await client.query(
      `insert into ${table.name} (chunk_id, document_id, project_key, embedding)
       select t.id, $2, $3, t.embedding from unnest($1::text[], $4::vector[]) as t(id, embedding)`,
      [
        rows.ids,
        rows.documentId,
        rows.projectKey,
        vectorArrayBinary(features.vectorOid, rows.vectors),
      ],
    );
  }

  /**
   * The `limit` nearest chunks of searchable documents in scope, by cosine similarity; with
   * `seqs`, each with its keyword row's seq (a hybrid search scores them by their keywords too).
   */
  async search(
    client: PoolClient,
    table: VectorTable,
    vector: Float32Array,
    filter: SearchFilter,
    limit: number,
    seqs = false,
  ): Promise<NearestChunk[]> {
    let exact = !hasGraph(table.dimensions);
    let inScope = 0;
    if (!exact) {
      // How many chunks are in scope (the whole table without filters), counted up to the
      // threshold: a small scope or collection is searched exactly (recall 1, and fast). At least
      // past what the graph scan fetches: `nearest` tells a short answer from a small scope.
      // Without filters, a table estimated past the threshold is not counted (a few ms of
      // scanning): an estimate too high only sends a search down the graph, which falls back.
      const countParams: unknown[] = [];
      const scope = vectorScope(filter, countParams);
      const estimate = this.sizes.rows(table.name);
      if (scope === '' && estimate !== undefined && estimate > this.exactSearchMax) {
        inScope = estimate;
      } else {
        const cap = Math.max(this.exactSearchMax, limit + 32) + 1;
        const { rows } = await client.query<{ n: number }>(
          `select count(*)::int as n from (
             select 1 from ${table.name} v where true${scope} limit ${cap}
           ) s`,
          countParams,
        );
        inScope = rows[0]?.n ?? 0;
      }
      exact = inScope <= this.exactSearchMax;
    }
    if (!exact) {
      const graph = await this.recentred(client, table);
      const ranked = await this.nearest(client, graph, vector, filter, limit, inScope, seqs);
      if (ranked !== null) return ranked;
    }
    // Exact: every chunk in scope, through a B-tree index on the filter (a narrow scope), or all
    // of them; and the fallback of `nearest`.
    const params: unknown[] = [vectorBinary(vector), limit];
    const { rows } = await client.query<{ chunkId: string; distance: number; seq: number | null }>(
      `with scoped as materialized (
         select v.chunk_id, v.embedding <=> $1::vector as distance
         from ${table.name} v join knowledge_documents d on d.id = v.document_id
         where ${SEARCHABLE}${vectorScope(filter, params)}
       ), nearest as (
         select chunk_id, distance from scoped
         where distance <> 'NaN' order by distance, chunk_id limit $2
       )
       select s.chunk_id as "chunkId", s.distance, ${seqs ? SEQ_OF : 'null'} as seq from nearest s
       order by s.distance, s.chunk_id`,
      params,
    );
    return rows.map(nearestOf);
  }

  /**
   * The nearest chunks in scope by the HNSW index (walked with the query minus the graph's centre;
   * with no graph yet, an exact scan in the same order): the scope filters apply inside the scan
   * (pgvector 0.8+ scans on until `limit` rows pass them), and the result is re-ordered by exact
   * distance, since the graph's order is the centred vectors' and relaxed_order may swap a few.
   * The status of the documents is checked after the scan, on `limit + 32` rows (as on SQLite):
   * null when too many were dropped to be sure of the top `limit`, or when the scan gave up
   * before `limit` rows passed a filter although the scope (`inScope` chunks, counted up to a
   * cap) holds more: the caller then searches exactly, so a filter never leaves fewer hits than
   * exist (pgvector before 0.8 has no iterative scan).
   */
  private async nearest(
    client: PoolClient,
    table: VectorTable,
    vector: Float32Array,
    filter: SearchFilter,
    limit: number,
    inScope: number,
    seqs: boolean,
  ): Promise<NearestChunk[] | null> {
    const fetch = limit + 32;
    const params: unknown[] = [
      vectorBinary(vector),
      fetch,
      vectorBinary(graphQuery(table, vector)),
    ];
    // Filters that no B-tree can serve, on the vector table alone (a join would offer the planner
    // a path by document), and no sequential scan: the planner is left with the graph, where it
    // would rather sort every chunk of a scope it estimates small (or has no statistics for).
    const scope = vectorScope(filter, params, false);
    if (scope !== '') await client.query('set local enable_seqscan = off');
    const { rows } = await client.query<{
      chunkId: string;
      distance: number;
      seq: number | null;
      searchable: boolean;
    }>(
      `select s.chunk_id as "chunkId", s.distance, ${seqs ? SEQ_OF : 'null'} as seq,
         ${SEARCHABLE} as searchable
       from (
         select v.chunk_id, v.document_id, v.embedding <=> $1::vector as distance
         from ${table.name} v
         where true${scope}
         order by ${graphOrder(table, 'v.embedding', '$3')}
         limit $2
       ) s
       join knowledge_documents d on d.id = s.document_id
       order by s.distance, s.chunk_id`,
      params,
    );
    if (scope !== '') await client.query('set local enable_seqscan = on');
    const kept = rows.filter((r) => r.searchable && !Number.isNaN(r.distance));
    if (kept.length < limit && (rows.length === fetch || inScope > rows.length)) return null;
    return kept.slice(0, limit).map(nearestOf);
  }

  /** The cosine similarity of each given chunk that has a vector in the table. */
  async similarities(
    client: PoolClient,
    table: VectorTable,
    vector: Float32Array,
    chunkIds: string[],
  ): Promise<Map<string, number>> {
    const result = new Map<string, number>();
    if (chunkIds.length === 0) return result;
    const { rows } = await client.query<{ id: string; distance: number }>(
      `select chunk_id as id, embedding <=> $1::vector as distance from ${table.name}
       where chunk_id = any($2::text[])`,
      [vectorBinary(vector), chunkIds],
    );
    for (const r of rows) result.set(r.id, similarity(r.distance));
    return result;
  }
}
