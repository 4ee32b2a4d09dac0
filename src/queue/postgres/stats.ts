/**
 * `stats()` of the PostgreSQL queue: a snapshot refreshed every `statsMs` and after this
 * instance's own enqueues and finishes, so that /health never waits for the database.
 * Completed/failed counts are the jobs kept plus those pruned (`aps_job_counts`), i.e. since the
 * table was created.
 */
import type pg from 'pg';
import { summarize, type LaneCounts, type QueueStats } from '../queue.js';
import type { QueueLogger } from './shared.js';

/** The least time between two refreshes of the counts asked for by enqueues and finishes. */
const STATS_GAP_MS = 100;

/** The counts of `stats()`, read in the background until `stop()`, and the pruning behind them. */
export class JobCounts {
  private snapshot: QueueStats;
  private statsRunning = false;
  private statsDirty = false;
  private statsStartedAt = 0;
  private statsTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly pool: pg.Pool,
    /** This instance's job types with their concurrency (listed even without jobs). */
    private readonly lanes: ReadonlyMap<string, { readonly concurrency: number }>,
    private readonly log: QueueLogger,
    /** Finished jobs kept per type (older ones are pruned; counts keep them). */
    private readonly historyLimit: number,
  ) {
    this.snapshot = this.buildStats([]);
  }

  /** The counts as of the last refresh. */
  get current(): QueueStats {
    return this.snapshot;
  }

  /**
   * Refreshes the snapshot in the background: now, or STATS_GAP_MS after the last refresh began,
   * so that a burst of jobs does not keep a connection busy counting them.
   */
  refreshSoon(): void {
    if (this.stopped || this.statsTimer !== undefined) return;
    const delay = Math.max(0, this.statsStartedAt + STATS_GAP_MS - Date.now());
    this.statsTimer = setTimeout(() => {
      this.statsTimer = undefined;
      this.refreshStats().catch((error: unknown) => {
        this.log.warn({ err: error }, 'job queue: reading the counts failed');
      });
    }, delay).unref();
  }

  /** Reads the counts now (once more if they changed meanwhile). */
  async refreshStats(): Promise<void> {
    if (this.statsRunning) {
      this.statsDirty = true;
      return;
    }
    this.statsRunning = true;
    try {
      do {
        this.statsDirty = false;
        this.statsStartedAt = Date.now();
        const { rows } = await this.pool.query<{ type: string; status: string; n: number }>(
          `select type, status, count(*)::float8 as n from aps_jobs group by type, status
           union all select type, 'completed', completed::float8 from aps_job_counts
           union all select type, 'failed', failed::float8 from aps_job_counts`,
        );
        this.snapshot = this.buildStats(rows);
      } while (this.refreshAgain());
    } finally {
      this.statsRunning = false;
    }
  }

  /** Keeps the newest `historyLimit` finished jobs per type; the others move to the counts. */
  async prune(): Promise<void> {
    await this.pool.query(
      `with ranked as (
         select id, row_number() over (partition by type order by finished_at desc, id desc) as n
         from aps_jobs where status in ('completed', 'failed')
       ),
       gone as (
         delete from aps_jobs j using ranked
         where j.id = ranked.id and ranked.n > $1 and j.status in ('completed', 'failed')
         returning j.type, j.status
       ),
       tally as (
         select type,
           count(*) filter (where status = 'completed') as completed,
           count(*) filter (where status = 'failed') as failed
         from gone group by type
       )
       insert into aps_job_counts as c (type, completed, failed)
       select type, completed, failed from tally
       on conflict (type) do update
       set completed = c.completed + excluded.completed, failed = c.failed + excluded.failed`,
      [this.historyLimit],
    );
  }

  /** No more refreshes. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.statsTimer);
  }

  /** Whether the counts changed while they were being read (set from other callbacks). */
  private refreshAgain(): boolean {
    return this.statsDirty && !this.stopped;
  }

  private buildStats(rows: readonly { type: string; status: string; n: number }[]): QueueStats {
    const byType: QueueStats['byType'] = {};
    const lane = (type: string) =>
      (byType[type] ??= {
        queued: 0,
        running: 0,
        completed: 0,
        failed: 0,
        concurrency: this.lanes.get(type)?.concurrency ?? 0,
      });
    for (const type of this.lanes.keys()) lane(type);
    for (const row of rows) {
      const status = row.status as keyof LaneCounts;
      lane(row.type)[status] += row.n;
    }
    return summarize('postgres', byType);
  }
}
