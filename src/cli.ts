#!/usr/bin/env node
/**
 * `aps`: serve, migrate, manage API keys, re-index, back up and restore, and copy a base to
 * PostgreSQL from the command line. Notes, logs and the progress bar go to stderr; stdout carries
 * only the results (tables, or JSON with --json).
 */
import { createRequire } from 'node:module';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from './config.js';
import { openDatabase } from './db/database.js';
import { MIGRATIONS } from './db/migrations/index.js';
import { migrate, migrationStatus, type MigrationState } from './db/migrator.js';
import { AppError } from './errors.js';
import { startServer } from './server.js';
import { BackupError } from './cli/backup-manifest.js';
import { registerBackup } from './cli/backup-commands.js';
import { sqliteFileMissing, table } from './cli/output.js';
import { registerKeys } from './cli/keys.js';
import { registerMigrateData } from './cli/migrate-data.js';
import { registerModels } from './cli/models.js';
import { registerReindex, UsageError } from './cli/reindex.js';
import { CliSession, NoDatabaseError } from './cli/session.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

const program = new Command('aps')
  .description('Agent Platform Server')
  .version(version, '-V, --version', 'print the version')
  .option('--data-dir <dir>', 'data directory (overrides DATA_DIR)')
  .showHelpAfterError();
const session = new CliSession(() => program.opts<{ dataDir?: string }>());

function printMigrations(state: MigrationState, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(state));
    return;
  }
  const rows = [
    ...state.applied.map((m) => ['applied', m.name, m.appliedAt]),
    ...state.pending.map((name) => ['pending', name, '']),
    ...state.unknown.map((name) => ['unknown', name, '(applied by a newer version)']),
  ];
  console.log(table(['STATE', 'MIGRATION', 'APPLIED AT'], rows));
  console.log(`${state.applied.length} applied, ${state.pending.length} pending`);
  if (state.errorMessage !== null) console.log(`error: ${state.errorMessage}`);
}

program
  .command('serve')
  .description('Run the HTTP server')
  .action(async () => {
    await session.announceIfNew(true);
    const server = await startServer(session.config());
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      server.app.log.info({ signal }, 'shutting down');
      server.close().then(
        () => process.exit(0),
        (error: unknown) => {
          server.app.log.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', () => {
      stop('SIGTERM');
    });
    process.once('SIGINT', () => {
      stop('SIGINT');
    });
  });

program
  .command('migrate')
  .description('Apply pending migrations, or `migrate status` to list applied and pending ones')
  .argument('[action]', '`status` to only report')
  .option('--json', 'print the state as JSON')
  .action(async (action: string | undefined, opts: { json?: boolean }) => {
    if (action !== undefined && action !== 'status')
      throw new InvalidArgumentError('expected `status`');
    const config = session.config();
    if (action === 'status' && sqliteFileMissing(config)) {
      // Reported without creating the file: `status` never changes anything.
      session.note('No database yet: every migration is pending (`aps migrate` creates it).');
      const names = MIGRATIONS.map((m) => m.name);
      const state = { status: 'ok', applied: [], pending: names, unknown: [], errorMessage: null };
      printMigrations(state as MigrationState, opts.json === true);
      return;
    }
    if (action !== 'status') await session.announceIfNew(false);
    const database = await openDatabase(config.database);
    try {
      const state =
        action === 'status'
          ? await migrationStatus(database, MIGRATIONS)
          : await migrate(database, MIGRATIONS);
      printMigrations(state, opts.json === true);
      if (state.status !== 'ok') process.exitCode = 1;
    } finally {
      await database.close();
    }
  });

registerReindex(program, session);
registerMigrateData(program, session);
registerModels(program, session);
registerKeys(program, session);
registerBackup(program, session);

program
  .command('mcp')
  .description(
    "Serve the knowledge base to an agent host over MCP (stdio), through a running server's HTTP API",
  )
  .addOption(
    new Option('--url <url>', "the server's base URL")
      .env('APS_URL')
      .default('http://127.0.0.1:4000'),
  )
  .addOption(new Option('--api-key <key>', 'an API key of level L0').env('APS_API_KEY'))
  .addOption(
    new Option('--prefix <prefix>', "the server's API_PREFIX")
      .env('APS_API_PREFIX')
      .default('/api/v1'),
  )
  .addOption(
    new Option('--project <id>', "list only this project's documents as resources").env(
      'APS_PROJECT_ID',
    ),
  )
  .action(async (opts: { url: string; apiKey?: string; prefix: string; project?: string }) => {
    // Never through the session: this command opens no database and prints nothing on stdout.
    const { runStdio } = await import('./mcp/stdio.js');
    await runStdio({
      url: opts.url,
      prefix: opts.prefix,
      apiKey: opts.apiKey,
      projectId: opts.project,
    });
  });

program.parseAsync().catch((error: unknown) => {
  session.status.clear();
  if (error instanceof UsageError) console.error(`aps reindex: ${error.message}`);
  else if (
    error instanceof ConfigError ||
    error instanceof AppError ||
    error instanceof NoDatabaseError ||
    error instanceof BackupError
  )
    console.error(error.message);
  else console.error(error instanceof Error ? `error: ${error.message}` : error);
  process.exit(1);
});
