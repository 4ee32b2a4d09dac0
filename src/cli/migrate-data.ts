/**
 * `aps migrate-data --to postgres://…`: copies the SQLite knowledge base of the current config
 * (or --data-dir) into an empty PostgreSQL database: documents (metadata, statuses, progress),
 * their files, chunks, vectors of every model stored, keyword rows (rebuilt by the PostgreSQL
 * store's own code), API keys (hashes as they are), the audit log. Resumable; verified at the end.
 *
 * The source is never written: opened read-only, refused while another process holds its write
 * lock, and read in one snapshot. A server still running on it may go on serving reads; if
 * anything writes to it during the copy, the run says so and fails (what was written after the
 * snapshot is not copied).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { openDatabase } from '../db/database.js';
import { MIGRATIONS } from '../db/migrations/index.js';
import { createEmbeddingProvider } from '../knowledge/embeddings/index.js';
import { PostgresDocumentImport } from '../knowledge/search/postgres/import-documents.js';
import { LocalStorage } from '../knowledge/storage/local-storage.js';
import { PostgresStorage } from '../knowledge/storage/postgres-storage.js';
import type { FileStorage } from '../knowledge/storage/storage.js';
import { createLogger } from '../logger.js';
import { batches, copyBatches, copyPlainTables, type CopyTotals } from './migrate-data-copy.js';
import { SqliteSource } from './migrate-data-source.js';
import { PostgresTarget } from './migrate-data-target.js';
import { MODES, verify, type Verification } from './migrate-data-verify.js';
import { Progress } from './progress.js';
import type { CliSession } from './session.js';

export interface MigrateDataOptions {
  to: string;
  storage: 'local' | 'postgres';
  filesDir?: string;
  batchChunks: number;
  queries: number;
  verify: boolean;
  json?: boolean;
}

export interface MigrateDataReport {
  resumed: boolean;
  /** Documents of the source already on the target (an earlier run's). */
  skipped: number;
  copied: CopyTotals;
  tables: string[];
  seconds: number;
  chunksPerSecond: number;
  /** Another process wrote to the source during the copy. */
  sourceChanged: boolean;
  stopped: boolean;
  verification: Verification | null;
}

const positive = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be an integer ≥ 0');
  return n;
};

/** The config a PostgreSQL server on `to` would run with (same data directory and secrets). */
function targetConfig(config: Config, opts: MigrateDataOptions): Config {
  if (!/^postgres(ql)?:\/\//.test(opts.to))
    throw new InvalidArgumentError('--to must be postgres://…');
  return loadConfig({
    ...process.env,
    DATA_DIR: config.dataDir,
    DATABASE_URL: opts.to,
    STORAGE_DRIVER: opts.storage,
  });
}

/** Where the target's files go; null: they stay in the source's data directory. */
function fileStorage(
  config: Config,
  opts: MigrateDataOptions,
  pool: PostgresTarget['pool'],
  scratch: string,
): FileStorage | null {
  if (opts.storage === 'postgres') return new PostgresStorage(pool, scratch);
  if (opts.filesDir === undefined || resolve(opts.filesDir) === config.dataDir) return null;
  return new LocalStorage(resolve(opts.filesDir), scratch);
}

/** Runs the whole command; `stopping()` true ends it after the batch in progress. */
export async function migrateData(
  session: CliSession,
  opts: MigrateDataOptions,
  stopping: () => boolean = () => false,
): Promise<MigrateDataReport> {
  const config = session.config();
  if (config.database.driver !== 'sqlite') {
    throw new Error(
      'migrate-data reads a SQLite base: unset DATABASE_URL (or use --data-dir) so the config names one',
    );
  }
  const pgConfig = targetConfig(config, opts);
  if (pgConfig.database.driver !== 'postgres') throw new Error('--to must be postgres://…');
  const source = new SqliteSource(config.database.filename);
  const scratch = mkdtempSync(join(tmpdir(), 'aps-migrate-data-'));
  try {
    source.checkNoWriter();
    const applied = source.migrations();
    const known = MIGRATIONS.map((m) => m.name);
    if (applied.join() !== known.join()) {
      throw new Error(
        applied.some((name) => !known.includes(name))
          ? 'The SQLite base was migrated by a newer version of aps: use that version'
          : 'The SQLite base has pending migrations: run `aps migrate` on it first',
      );
    }
    const database = await openDatabase(pgConfig.database);
    if (database.driver !== 'postgres') throw new Error('--to must be postgres://…');
    try {
      return await copyAll(
        session,
        opts,
        { config, pgConfig, source, database, scratch },
        stopping,
      );
    } finally {
      await database.close();
    }
  } finally {
    source.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function copyAll(
  session: CliSession,
  opts: MigrateDataOptions,
  deps: {
    config: Config;
    pgConfig: Config;
    source: SqliteSource;
    database: Awaited<ReturnType<typeof openDatabase>> & { driver: 'postgres' };
    scratch: string;
  },
  stopping: () => boolean,
): Promise<MigrateDataReport> {
  const { config, pgConfig, source, database } = deps;
  const target = new PostgresTarget(database);
  await target.migrate();
  const state = await target.claim(source.identity());
  const started = performance.now();
  source.beginSnapshot();
  const importer = new PostgresDocumentImport(database.pool);
  for (const t of source.vectorTables()) await importer.ensureVectorTable(t.model, t.dimensions);
  const documents = source.documents();
  const there = await target.existingDocuments(documents.map((d) => d.id as string));
  const todo = documents.filter((d) => !there.has(d.id as string));
  if (state.kind === 'resume') {
    session.note(`Resuming: ${there.size} of ${documents.length} documents were copied before.`);
  }
  const files = {
    storage: fileStorage(config, opts, database.pool, deps.scratch),
    dataDir: config.dataDir,
  };
  const totals: CopyTotals = { documents: 0, chunks: 0, vectors: 0, files: 0, missingFiles: [] };
  const progress = new Progress(session.status, todo.length, undefined, 'copying');
  const list = batches(todo, source.chunkCounts(), Math.max(1, opts.batchChunks));
  let stopped: boolean;
  try {
    stopped = await copyBatches(list, { source, target, importer, files }, totals, {
      begin(batch) {
        const first = batch[0]?.name;
        const more = batch.length > 1 ? ` (+${batch.length - 1})` : '';
        progress.begin(`${typeof first === 'string' ? first : ''}${more}`);
      },
      step(batch) {
        for (let i = 0; i < batch.length; i++) progress.step();
      },
      stopping,
    });
  } finally {
    progress.end();
  }
  const tables = stopped ? [] : await copyPlainTables(source, target);
  const sourceChanged = source.endSnapshot();
  const seconds = (performance.now() - started) / 1000;
  if (!stopped) await target.finish();
  let verification: Verification | null = null;
  if (!stopped && opts.verify) {
    const log = createLogger(pgConfig, session.status, session.status.isTTY);
    const embedder = createEmbeddingProvider(pgConfig.embedding, log);
    try {
      verification = await verify({
        source,
        pool: database.pool,
        config: pgConfig,
        embedder,
        log,
        queries: opts.queries,
      });
    } finally {
      await embedder.close();
    }
  }
  return {
    resumed: state.kind === 'resume',
    skipped: there.size,
    copied: totals,
    tables,
    seconds,
    chunksPerSecond: seconds > 0 ? totals.chunks / seconds : 0,
    sourceChanged,
    stopped,
    verification,
  };
}

function printReport(report: MigrateDataReport, opts: MigrateDataOptions): void {
  if (opts.json === true) {
    console.log(JSON.stringify(report));
    return;
  }
  const c = report.copied;
  console.log(
    `copied ${c.documents} documents, ${c.chunks} chunks, ${c.vectors} vectors, ${c.files} files in ${report.seconds.toFixed(1)} s ` +
      `(${Math.round(report.chunksPerSecond)} chunks/s)` +
      (report.skipped > 0 ? `; ${report.skipped} documents were already there` : '') +
      (report.stopped ? ' (stopped: run again to resume)' : ''),
  );
  if (report.tables.length > 0) console.log(`tables copied: ${report.tables.join(', ')}`);
  if (c.missingFiles.length > 0) {
    console.log(
      `${c.missingFiles.length} files missing from the source: ${c.missingFiles.slice(0, 5).join(', ')}`,
    );
  }
  if (report.sourceChanged) {
    console.log(
      'the SQLite base was written during the copy: what was written after its start is not copied',
    );
  }
  const v = report.verification;
  if (v === null) return;
  for (const [what, n] of Object.entries(v.counts)) {
    const flag = n.source === n.target ? '' : '  MISMATCH';
    console.log(
      `  ${what.padEnd(40)} ${String(n.source).padStart(9)} ${String(n.target).padStart(9)}${flag}`,
    );
  }
  const agreed = MODES.map(
    (m) => `${m} ${v.agreed[m] ?? 0}/${v.queries} (+${v.tied[m] ?? 0} up to ties)`,
  ).join(', ');
  console.log(
    `retrievals with the same hits in the same order: ${agreed}; hybrid ones differing only by ` +
      `candidates at the edge of the nearest chunks: ${v.candidates}; largest score difference ` +
      v.maxScoreDelta.toExponential(2),
  );
  for (const m of v.mismatches.slice(0, 5)) {
    console.log(
      `  ${m.mode} "${m.query}": sqlite ${m.source.join(' ')} | postgres ${m.target.join(' ')}`,
    );
  }
}

/** Failed checks, as an exit status. */
function failed(report: MigrateDataReport): boolean {
  const v = report.verification;
  return (
    report.stopped ||
    report.sourceChanged ||
    (v !== null && (v.countMismatches.length > 0 || v.mismatches.length > 0))
  );
}

export function registerMigrateData(program: Command, session: CliSession): void {
  program
    .command('migrate-data')
    .description('Copy this SQLite knowledge base into an empty PostgreSQL database (resumable)')
    .requiredOption('--to <url>', 'the PostgreSQL database (postgres://…)')
    .addOption(
      new Option(
        '--storage <driver>',
        "where the PostgreSQL server will keep files (its STORAGE_DRIVER): 'local' leaves them in this data directory (or copies them to --files-dir), 'postgres' copies them into the database",
      )
        .choices(['local', 'postgres'])
        .default('local'),
    )
    .option('--files-dir <dir>', 'with --storage local: copy the files to this data directory')
    .option(
      '--batch-chunks <n>',
      'chunks per transaction (small documents share one)',
      positive,
      2000,
    )
    .option('--queries <n>', 'retrievals compared per mode after the copy', positive, 20)
    .option('--no-verify', 'skip the counts and retrievals after the copy')
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: MigrateDataOptions) => {
      // The first Ctrl-C ends the batch in progress (the next run resumes); a second one exits.
      const state = { stopping: false };
      const stop = () => {
        if (state.stopping) process.exit(130);
        state.stopping = true;
        session.note('stopping after the current batch (Ctrl-C again to abort)');
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      try {
        const report = await migrateData(session, opts, () => state.stopping);
        printReport(report, opts);
        if (failed(report)) process.exitCode = 1;
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });
}
