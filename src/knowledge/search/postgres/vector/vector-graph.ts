/**
 * The HNSW graph of a PostgreSQL vector table, centred.
 *
 * The default model's vectors share a strong common direction, so in a graph over them most
 * links are near-ties and the beam misses true neighbours: recall@10 against exact 0.851 at 1M
 * chunks at the store's `ef_search` (400). Over the vectors minus their mean they spread over the
 * sphere (docs/performance.md, `npm run bench:pg-hnsw`). So a table's graph is an expression index
 * over `embedding − centre()` (`centreFunction`), the centre being the table's mean when the graph
 * was built; a search walks it with the query minus the centre and re-orders what it finds by the
 * true cosine, as the SQLite store's graph does (sqlite/vector/ann-graph.ts). Any fixed centre
 * keeps the answers right (they are re-ranked); the mean is what spreads the vectors.
 *
 * Lifecycle: a table is made without a graph: up to `buildAt` chunks in scope a search is exact.
 * After a commit leaves more, one instance (a session advisory lock) takes the mean and builds the
 * graph with `create index concurrently` (writes and searches go on), then records the centre in
 * `knowledge_vector_tables`: from then on every instance walks the graph. A table made by an
 * earlier build has a graph over the raw vectors (`<table>_hnsw`, no centre): it is searched
 * through it until the centred one is recorded, and then dropped. A build cut short (crash,
 * shutdown) leaves an invalid index, which the next attempt drops first.
 */
import type { Pool, PoolClient } from 'pg';
import type { StoreLog } from '../../chunk-store.js';

/** Advisory-lock class of graph builds ("apg" in ASCII). */
const BUILD_LOCK = 0x617067;

/**
 * The graph's build parameters (pgvector's defaults are m 16, ef_construction 64): twice the
 * links per node and a wider build beam cost about twice the insertion time, and lift recall@10
 * at 100k from 0.83 to 0.95 at ef_search 100 on the bench's raw vectors (docs/performance.md).
 */
export const HNSW_BUILD = 'with (m = 32, ef_construction = 128)';

/** HNSW indexes `vector` up to 2,000 dimensions and `halfvec` up to 4,000. */
const HNSW_MAX_VECTOR = 2000;
const HNSW_MAX_HALFVEC = 4000;

export interface VectorTable {
  name: string;
  dimensions: number;
  /** Null: no centred graph yet (none, or a table's graph over the raw vectors). */
  centre: Float32Array | null;
}

/** The centre recorded for a table (pgvector's text of it), parsed; null for none. */
export function parseCentre(literal: string | null | undefined): Float32Array | null {
  if (literal === null || literal === undefined) return null;
  return Float32Array.from(JSON.parse(literal) as number[]);
}

/** Whether a table of `dimensions` can have a graph (otherwise every search is exact). */
export function hasGraph(dimensions: number): boolean {
  return dimensions <= HNSW_MAX_HALFVEC;
}

/**
 * The expression the table's graph is built on and walked by, over `column`: the vector minus the
 * centre (without one, the vector itself, for a graph made before), as `halfvec` from 2,001
 * dimensions.
 */
export function graphExpression(table: VectorTable, column: string): string {
  const d = table.dimensions;
  const type = d <= HNSW_MAX_VECTOR ? 'vector' : 'halfvec';
  // A graph's column needs its dimensions: the difference has none until cast.
  if (table.centre !== null)
    return `((${column} - ${centreFunction(table.name)}())::${type}(${d}))`;
  return type === 'vector' ? column : `(${column}::halfvec(${d}))`;
}

/**
 * The function that returns a table's centre (immutable, made with its graph). The index
 * expression calls it rather than holding the vector: `pg_index` has no TOAST table, so a
 * constant of a thousand or more dimensions would not fit in its row ("row is too big"). The
 * planner inlines it to the same constant in the index and in a query, so the graph is matched.
 */
export function centreFunction(table: string): string {
  return `${table}_centre`;
}

/** `order by` of a graph walk, the query (centred: `graphQuery`) in parameter `param`. */
export function graphOrder(table: VectorTable, column: string, param: string): string {
  const query =
    table.dimensions <= HNSW_MAX_VECTOR
      ? `${param}::vector`
      : `${param}::vector::halfvec(${table.dimensions})`;
  return `${graphExpression(table, column)} <=> ${query}`;
}

/** The query vector the graph is walked with: minus the centre, as the graph's vectors. */
export function graphQuery(table: VectorTable, vector: Float32Array): Float32Array {
  const centre = table.centre;
  if (centre === null) return vector;
  return Float32Array.from(vector, (x, i) => x - (centre[i] ?? 0));
}

const silent: StoreLog = { info: () => {}, warn: () => {} };

/** Builds the centred graphs of this instance's tables in the background (see above). */
export class GraphBuilds {
  /** Tables with their centred graph recorded and no raw one left: nothing more to do. */
  private readonly done = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();
  /** Asked again while running: one more pass after (a commit may have crossed `buildAt`). */
  private readonly again = new Set<string>();
  /**
   * Chunks a table may still gain before it can pass `buildAt`, from its last count: commits
   * within it need no count. Each instance counts its own commits; a restart counts afresh.
   */
  private readonly room = new Map<string, number>();
  /** Backend pid of each build's connection, to cancel it at shutdown. */
  private readonly pids = new Map<string, number>();
  private closing = false;
  /** The build before the next one's turn (one at a time: see `oneAtATime`). */
  private building: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    /** A table gets its graph once it holds more chunks than this. */
    private readonly buildAt: number,
    private readonly log: StoreLog = silent,
  ) {}

  /**
   * Starts the table's pass in the background unless it is done or closing, or `added` chunks (a
   * commit's) cannot have carried it past `buildAt` since it was last counted.
   */
  schedule(table: { name: string; dimensions: number }, added?: number): void {
    if (this.closing || this.done.has(table.name) || !hasGraph(table.dimensions)) return;
    const room = this.room.get(table.name);
    if (added !== undefined && room !== undefined && added <= room) {
      this.room.set(table.name, room - added);
      return;
    }
    if (this.running.has(table.name)) {
      this.again.add(table.name);
      return;
    }
    const run = this.pass(table.name, table.dimensions)
      .catch((error: unknown) => {
        if (!this.closing)
          this.log.warn({ table: table.name, err: error }, 'vector graph build failed');
      })
      .finally(() => {
        this.running.delete(table.name);
        if (this.again.delete(table.name)) this.schedule(table);
      });
    this.running.set(table.name, run);
  }

  /** Forgets what is known of a table that was dropped (a table made again starts afresh). */
  forget(name: string): void {
    this.done.delete(name);
    this.room.delete(name);
  }

  /** Starts a pass for every vector table (at start, and for tests and benchmarks). */
  async scheduleAll(): Promise<void> {
    const { rows } = await this.pool.query<{ table_name: string; dimensions: number }>(
      'select table_name, dimensions from knowledge_vector_tables',
    );
    for (const r of rows) this.schedule({ name: r.table_name, dimensions: r.dimensions });
  }

  /** Resolves when no pass is running (tests, and `close`). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running.values());
  }

  /** Cancels the builds in progress (a cut build is dropped by the next) and waits for them. */
  async close(): Promise<void> {
    this.closing = true;
    this.again.clear();
    const cancel = () => {
      for (const pid of this.pids.values()) {
        this.pool.query('select pg_cancel_backend($1)', [pid]).catch(() => {});
      }
    };
    // Again until they end: a cancel between two statements of a build would be lost.
    const timer = setInterval(cancel, 200);
    cancel();
    try {
      await this.settled();
    } finally {
      clearInterval(timer);
    }
  }

  /** One pass: build and record the centred graph if due, then drop a raw graph left. */
  private async pass(name: string, dimensions: number): Promise<void> {
    const client = await this.pool.connect();
    let broken: unknown;
    let built = false;
    try {
      const locked = await client.query<{ ok: boolean; pid: number }>(
        'select pg_try_advisory_lock($1, hashtext($2)) as ok, pg_backend_pid() as pid',
        [BUILD_LOCK, name],
      );
      const { ok, pid } = locked.rows[0] ?? { ok: false, pid: 0 };
      if (!ok) return; // another instance is at it
      this.pids.set(name, pid);
      try {
        const recorded = await client.query<{ centre: string | null }>(
          'select centre from knowledge_vector_tables where table_name = $1',
          [name],
        );
        const row = recorded.rows[0];
        if (row === undefined) return;
        if (row.centre === null) {
          if (!(await this.due(client, name))) return;
          built = true;
          if (!(await this.oneAtATime(() => this.build(client, name, dimensions)))) return;
        }
        if (this.closing) return;
        await client.query(`drop index concurrently if exists ${name}_hnsw`);
        this.done.add(name);
      } finally {
        this.pids.delete(name);
        await client.query('select pg_advisory_unlock($1, hashtext($2))', [BUILD_LOCK, name]);
      }
    } catch (error) {
      broken = error;
      throw error;
    } finally {
      // A connection that failed, or ran a build without the pool's statement timeout, is not
      // reused (ending it also gives its advisory lock up).
      client.release(broken instanceof Error ? broken : built);
    }
  }

  /**
   * Runs builds one after the other: each holds up to `maintenance_work_mem` for its graph, and
   * `create index concurrently` of an expression waits at its end for every older transaction,
   * another table's build included.
   */
  private oneAtATime<T>(build: () => Promise<T>): Promise<T> {
    const turn = this.building.then(build, build);
    this.building = turn.catch(() => undefined);
    return turn;
  }

  /** Whether `close` was called (a method: a field read would stay narrowed across awaits). */
  private stopped(): boolean {
    return this.closing;
  }

  /** Whether the table holds more than `buildAt` chunks (counted up to that). */
  private async due(client: PoolClient, name: string): Promise<boolean> {
    const counted = await client.query<{ n: number }>(
      `select count(*)::int as n from (select 1 from ${name} limit ${this.buildAt + 1}) s`,
    );
    const n = counted.rows[0]?.n ?? 0;
    if (n <= this.buildAt) this.room.set(name, this.buildAt - n);
    return n > this.buildAt && !this.closing;
  }

  /** Builds the centred graph and records its centre; false when closing stopped it first. */
  private async build(client: PoolClient, name: string, dimensions: number): Promise<boolean> {
    if (this.stopped()) return false; // closed while waiting for its turn
    // The mean and the graph take minutes at a million rows: the connection is not reused after.
    await client.query('set statement_timeout = 0');
    const graph = `${name}_hnsw_centred`;
    await client.query(`drop index concurrently if exists ${graph}`); // a build cut short
    const mean = await client.query<{ mean: string | null }>(
      `select avg(embedding)::text as mean from ${name}`,
    );
    const literal = mean.rows[0]?.mean ?? null;
    const centre = parseCentre(literal);
    if (centre === null || this.closing) return false;
    const table = { name, dimensions, centre };
    const opclass = dimensions <= HNSW_MAX_VECTOR ? 'vector_cosine_ops' : 'halfvec_cosine_ops';
    // No valid index uses the function now (a leftover was dropped above): it may be replaced.
    await client.query(
      `create or replace function ${centreFunction(name)}() returns vector
       language sql immutable parallel safe as $$ select '${literal}'::vector $$`,
    );
    this.log.info({ table: name }, 'building the vector graph');
    const t0 = performance.now();
    await client.query(
      `create index concurrently ${graph} on ${name}
       using hnsw (${graphExpression(table, 'embedding')} ${opclass}) ${HNSW_BUILD}`,
    );
    await client.query('update knowledge_vector_tables set centre = $1 where table_name = $2', [
      literal,
      name,
    ]);
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    this.log.info({ table: name, seconds }, 'vector graph built');
    return true;
  }
}
