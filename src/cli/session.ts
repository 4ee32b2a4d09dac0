/**
 * What every `aps` command shares: the config (with `--data-dir`), the line saying which database
 * and data directory it uses, the check that a database exists before commands that only read or
 * change what is in it, and a started context whose logs go to stderr above any progress bar.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { createContext, type AppContext } from '../context.js';
import { openDatabase } from '../db/database.js';
import { MIGRATIONS } from '../db/migrations/index.js';
import { migrationStatus } from '../db/migrator.js';
import { describeDatabase, shownPath, sqliteFileMissing, usingLine } from './output.js';
import { StatusLine } from './terminal.js';

/** A command that needs an existing database was run where there is none. */
export class NoDatabaseError extends Error {}

export class CliSession {
  /** stderr: notes, log lines and the progress bar. */
  readonly status = new StatusLine(process.stderr);
  private loaded: Config | null = null;

  constructor(private readonly options: () => { dataDir?: string }) {}

  /** The validated config; `--data-dir` wins over DATA_DIR. Prints the "Using …" line once. */
  config(): Config {
    if (this.loaded !== null) return this.loaded;
    const dataDir = this.options().dataDir;
    const env = dataDir === undefined ? process.env : { ...process.env, DATA_DIR: dataDir };
    this.loaded = loadConfig(env);
    this.note(usingLine(this.loaded));
    return this.loaded;
  }

  note(line: string): void {
    this.status.write(`${line}\n`);
  }

  /**
   * Whether the database holds anything yet: the SQLite file is missing, or no migration was
   * ever applied (a fresh PostgreSQL database, an empty file).
   */
  async isFresh(): Promise<boolean> {
    const config = this.config();
    if (sqliteFileMissing(config)) return true;
    const database = await openDatabase(config.database);
    try {
      const state = await migrationStatus(database, MIGRATIONS);
      return state.applied.length === 0 && state.unknown.length === 0;
    } finally {
      await database.close();
    }
  }

  /** Refuses (creating nothing) when there is no database to read or change. */
  async requireDatabase(what: string): Promise<void> {
    if (!(await this.isFresh())) return;
    throw new NoDatabaseError(
      `No database yet: ${describeDatabase(this.config())} does not exist or is empty, so there is ${what}.\n` +
        'Point to the right one with --data-dir (or DATA_DIR / DATABASE_URL), or create it with `aps migrate` or `aps serve`.',
    );
  }

  /** Says so before a command creates a new, empty database (and, `withSecrets`, new secrets). */
  async announceIfNew(withSecrets: boolean): Promise<void> {
    if (!(await this.isFresh())) return;
    const config = this.config();
    const secrets = join(config.dataDir, 'secrets.json');
    const newSecrets =
      withSecrets &&
      (config.jwtSecret === null || config.apiKeySalt === null) &&
      !existsSync(secrets);
    this.note(
      `No database yet: creating a new, empty ${describeDatabase(config)}` +
        (newSecrets ? ` and new secrets in ${shownPath(secrets)}` : '') +
        '.',
    );
  }

  /** Runs `fn` on a started context (migrated), refusing in read-only mode. */
  async withContext(fn: (ctx: AppContext) => Promise<void>): Promise<void> {
    const ctx = await createContext(this.config(), {
      logStream: this.status,
      logIsTTY: this.status.isTTY,
    });
    try {
      if (ctx.readOnly)
        throw new Error(`The database is read-only: ${ctx.migration.errorMessage ?? ''}`);
      await fn(ctx);
    } finally {
      await ctx.close();
    }
  }
}
