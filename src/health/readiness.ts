/**
 * Readiness, for load balancers and orchestrators: may this instance be sent traffic now? Not
 * while the migrations failed (read-only), the database does not answer, or the search indexes
 * are not loaded. The database check is one trivial query with a short time limit; its result is
 * reused for a short while and concurrent polls share one check, so frequent polls from several
 * balancers cost the database at most one query per `cacheMs`.
 */
import type { Database } from '../db/database.js';
import type { MigrationState } from '../db/migrator.js';
import { AppError } from '../errors.js';

export interface ReadinessDeps {
  database: Pick<Database, 'driver' | 'ping'>;
  migration: MigrationState;
  /** Whether the search indexes are loaded. */
  searchReady: () => boolean;
  /** The database check's time limit. */
  timeoutMs: number;
  /** How long a check's result is reused. */
  cacheMs: number;
}

/** The body of a ready answer. */
export interface Ready {
  status: 'ready';
  databaseDriver: 'sqlite' | 'postgres';
  databaseLatencyMs: number;
  checkedAt: string;
}

interface DatabaseCheck {
  ok: boolean;
  latencyMs: number;
  at: number;
}

export class Readiness {
  private last: DatabaseCheck | undefined;
  private pending: Promise<DatabaseCheck> | undefined;

  constructor(private readonly deps: ReadinessDeps) {}

  /** Ready: the body; not ready: throws the catalogue error that says why. */
  async check(): Promise<Ready> {
    const { migration, database } = this.deps;
    if (migration.status !== 'ok') throw new AppError('READ_ONLY_MODE');
    const db = await this.checkDatabase();
    if (!db.ok) {
      throw new AppError(
        'DATABASE_UNAVAILABLE',
        `The database did not answer within ${String(this.deps.timeoutMs)} ms; retry shortly.`,
      );
    }
    if (!this.deps.searchReady()) {
      throw new AppError('NOT_READY', 'The search indexes are still loading; retry shortly.');
    }
    return {
      status: 'ready',
      databaseDriver: database.driver,
      databaseLatencyMs: db.latencyMs,
      checkedAt: new Date(db.at).toISOString(),
    };
  }

  private checkDatabase(): Promise<DatabaseCheck> {
    const last = this.last;
    if (last !== undefined && Date.now() - last.at < this.deps.cacheMs) {
      return Promise.resolve(last);
    }
    this.pending ??= this.ping().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async ping(): Promise<DatabaseCheck> {
    const start = performance.now();
    let ok = true;
    try {
      await this.deps.database.ping(this.deps.timeoutMs);
    } catch {
      ok = false;
    }
    const check = { ok, latencyMs: Math.round(performance.now() - start), at: Date.now() };
    this.last = check;
    return check;
  }
}
