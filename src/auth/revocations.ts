/**
 * The revocation generation: a counter in the database (`api_key_generation`, migration 0015)
 * that every revocation and rotation bumps in its own transaction. Verified keys are cached in
 * memory under the generation they were read at (api-key.service.ts); a cached entry counts only
 * while the generation is unchanged, so a revoked key and its tokens stop the moment an instance
 * learns the new generation — not after a TTL.
 *
 * How an instance learns it without a query per request:
 * - SQLite: `PRAGMA data_version`, read once per turn of the event loop, tells whether another
 *   connection (`aps keys revoke`, another process) committed anything; only then is the counter
 *   read again. This process's own revocations call `refresh()`.
 * - PostgreSQL (revocations-postgres.ts): a trigger NOTIFYs every bump; each instance LISTENs and
 *   reads the counter again when told, and trusts no cache while its LISTEN connection is down.
 */
import type { Database as SqliteNative, Statement } from 'better-sqlite3';

export interface RevocationGeneration {
  /** The generation now, or null when it is not known (then nothing cached may be used). */
  current(): number | null;
  /** This process revoked or rotated a key: the generation must be read again before use. */
  refresh(): void;
  close(): Promise<void>;
}

/** SQLite: the counter read again whenever any other connection has committed. */
export class SqliteRevocations implements RevocationGeneration {
  private dataVersion = -1;
  private generation: number | null = null;
  /** data_version was read in this turn of the event loop. */
  private checked = false;
  private readonly uncheck = () => {
    this.checked = false;
  };
  private readonly read: () => number | null;
  /** Prepared once: better-sqlite3's pragma() prepares a statement at every call. */
  private readonly version: Statement<[], number>;

  constructor(native: SqliteNative) {
    this.version = native.prepare<[], number>('pragma data_version').pluck();
    let statement: Statement<[], { generation: number }> | null = null;
    this.read = () => {
      try {
        statement ??= native.prepare<[], { generation: number }>(
          'select generation from api_key_generation where id = 1',
        );
        const row = statement.get();
        return row === undefined ? null : row.generation;
      } catch {
        return null; // no table (a database this build could not migrate): no caching
      }
    };
  }

  current(): number | null {
    // data_version once per turn of the event loop: the pragma opens a read transaction (it cost
    // a fifth of the server's CPU on a small authenticated GET when read per request).
    // Requests of one turn see the same database state; the next turn sees any later commit.
    if (!this.checked) {
      this.checked = true;
      setImmediate(this.uncheck);
      const version = this.version.get() ?? -1;
      if (version !== this.dataVersion) {
        this.dataVersion = version;
        this.generation = null;
      }
    }
    this.generation ??= this.read();
    return this.generation;
  }

  refresh(): void {
    this.generation = null;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** No caching at all (a generation never known): every verification reads the database. */
export const NO_CACHE: RevocationGeneration = {
  current: () => null,
  refresh: () => undefined,
  close: () => Promise.resolve(),
};
