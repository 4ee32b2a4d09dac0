/**
 * How many vectors each PostgreSQL vector table holds, as PostgreSQL's statistics estimate it,
 * and the HNSW beam (`hnsw.ef_search`) a graph of that size needs.
 *
 * A search never waits for an estimate: it takes the last one (none at first) and, when that is
 * older than `maxAgeMs`, asks for a newer one in the background. An estimate only chooses how to
 * search, never what is found: a beam too wide is slower, and the store walks a graph only past
 * `exactSearchMax` chunks, which an estimate too high cannot break (the walk falls back to the
 * exact scan when it finds too few). So the estimate leans high: the larger of the live-row count
 * (`pg_stat_user_tables.n_live_tup`, current within seconds, reset by a crash) and the planner's
 * `reltuples` (kept in the catalogue, refreshed by VACUUM, ANALYZE and CREATE INDEX).
 */
import type { Pool } from 'pg';

/** The beam without an estimate, and past the last measured band. */
export const HNSW_EF_SEARCH_MAX_BAND = 400;

/**
 * The narrowest beam per table size (rows, up to and including) that keeps recall@10 against an
 * exact scan at 0.99 or more on the store's centred graph (m 32, ef_construction 128), measured
 * with `npm run bench:pg-hnsw -- --limit N --ef …` at the band's largest size (figures in
 * docs/performance.md). Larger tables keep 400.
 */
const EF_SEARCH_BANDS: readonly (readonly [rows: number, efSearch: number])[] = [
  [50_000, 100],
  [100_000, 200],
  [300_000, 300],
];

/** pgvector's largest `hnsw.ef_search`. */
const EF_SEARCH_LIMIT = 1000;

/**
 * The `hnsw.ef_search` of a search for `limit` nearest vectors in a table of about `rows`
 * (undefined: not known yet): the band's beam, and at least twice the rows fetched.
 */
export function efSearchFor(rows: number | undefined, limit: number): number {
  const band = rows === undefined ? undefined : EF_SEARCH_BANDS.find(([upTo]) => rows <= upTo);
  const beam = band?.[1] ?? HNSW_EF_SEARCH_MAX_BAND;
  return Math.min(EF_SEARCH_LIMIT, Math.max(beam, 2 * limit));
}

interface Estimate {
  rows: number;
  at: number;
}

export class TableSizes {
  private readonly estimates = new Map<string, Estimate>();
  /** The estimates being asked for, by table. */
  private readonly asking = new Map<string, Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly maxAgeMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The last estimate of `table`'s rows (undefined before the first); a newer one when old. */
  rows(table: string): number | undefined {
    const known = this.estimates.get(table);
    if (known === undefined || this.now() - known.at > this.maxAgeMs) this.ask(table);
    return known?.rows;
  }

  /** Resolves when no estimate is being asked for (tests, close). */
  async settled(): Promise<void> {
    await Promise.all(this.asking.values());
  }

  private ask(table: string): void {
    if (this.asking.has(table)) return;
    const asked = this.pool
      .query<{ rows: number }>(
        `select greatest(coalesce(s.n_live_tup, 0), c.reltuples, 0)::float8 as rows
         from pg_class c left join pg_stat_user_tables s on s.relid = c.oid
         where c.oid = $1::regclass`,
        [table],
      )
      .then(
        ({ rows }) => {
          const row = rows[0];
          if (row !== undefined) this.estimates.set(table, { rows: row.rows, at: this.now() });
        },
        () => {
          // Dropped meanwhile, or the pool is closing: searches go on without an estimate.
          this.estimates.delete(table);
        },
      )
      .finally(() => {
        this.asking.delete(table);
      });
    this.asking.set(table, asked);
  }
}
