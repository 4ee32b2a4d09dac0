import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (PostgreSQL) The shared job queue of QUEUE on PostgreSQL (src/queue/postgres/).
 *
 * `aps_jobs`: one row per job from enqueue until it is pruned (the last `historyLimit` finished
 * jobs of each type are kept). A `running` row belongs to `owner` (an instance) until
 * `lease_until`; `attempt` counts claims and fences writes of an instance that lost the lease;
 * `seq` orders the queue (timestamps tie within a transaction's clock tick).
 * `aps_job_counts`: finished jobs already pruned, per type, so counts survive pruning.
 *
 * SQLite: nothing (its deployments run the in-process queue).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'postgres') return;
  await sql`
    create table aps_jobs (
      id text primary key,
      seq bigint generated always as identity,
      type text not null,
      status text not null default 'queued'
        check (status in ('queued', 'running', 'completed', 'failed')),
      payload jsonb not null,
      result jsonb,
      error jsonb,
      attempt integer not null default 0 check (attempt >= 0),
      owner text,
      lease_until timestamptz,
      enqueued_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz,
      check ((status = 'running') = (owner is not null and lease_until is not null))
    )
  `.execute(db);
  // Claiming: the oldest queued job of a type (FIFO by `seq`).
  await sql`create index aps_jobs_queued on aps_jobs (type, seq) where status = 'queued'`.execute(
    db,
  );
  // Finding expired leases, and this instance's running jobs.
  await sql`
    create index aps_jobs_running on aps_jobs (lease_until) where status = 'running'
  `.execute(db);
  // Pruning the history of each type beyond its newest finished jobs.
  await sql`
    create index aps_jobs_finished on aps_jobs (type, finished_at)
      where status in ('completed', 'failed')
  `.execute(db);
  await sql`
    create table aps_job_counts (
      type text primary key,
      completed bigint not null default 0,
      failed bigint not null default 0
    )
  `.execute(db);
}
