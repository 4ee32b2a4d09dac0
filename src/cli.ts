#!/usr/bin/env node
/** `aps`: serve, migrate, and manage API keys from the command line. */
import { Command, InvalidArgumentError } from 'commander';
import { isAgentLevel } from './auth/levels.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createContext, type AppContext } from './context.js';
import { openDatabase } from './db/database.js';
import { MIGRATIONS } from './db/migrations/index.js';
import { migrate, migrationStatus, type MigrationState } from './db/migrator.js';
import { AppError } from './errors.js';
import { startServer } from './server.js';

function config(): Config {
  return loadConfig();
}

/** Runs a key command on a migrated database; refuses in read-only mode. */
async function withContext(fn: (ctx: AppContext) => Promise<void>): Promise<void> {
  const ctx = await createContext(config());
  try {
    if (ctx.readOnly)
      throw new Error(`The database is read-only: ${ctx.migration.errorMessage ?? ''}`);
    await fn(ctx);
  } finally {
    await ctx.close();
  }
}

function printMigrations(state: MigrationState): void {
  for (const m of state.applied) console.log(`applied  ${m.name}  ${m.appliedAt}`);
  for (const name of state.pending) console.log(`pending  ${name}`);
  for (const name of state.unknown) console.log(`unknown  ${name}  (applied by a newer version)`);
  console.log(`${state.applied.length} applied, ${state.pending.length} pending`);
  if (state.errorMessage !== null) console.log(`error: ${state.errorMessage}`);
}

const program = new Command('aps').description('Agent Platform Server').showHelpAfterError();

program
  .command('serve')
  .description('Run the HTTP server')
  .action(async () => {
    const server = await startServer(config());
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
  .action(async (action?: string) => {
    if (action !== undefined && action !== 'status')
      throw new InvalidArgumentError('expected `status`');
    const database = await openDatabase(config().database);
    try {
      const state =
        action === 'status'
          ? await migrationStatus(database, MIGRATIONS)
          : await migrate(database, MIGRATIONS);
      printMigrations(state);
      if (state.status !== 'ok') process.exitCode = 1;
    } finally {
      await database.close();
    }
  });

/** `[#####-----] 5/10 name`: one line per step without a terminal, redrawn in place with one. */
function progressLine(done: number, total: number, label: string, width = 20): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${label}`;
}

program
  .command('reindex')
  .description('Re-index documents; --stale: those embedded with another model than the active one')
  .option('--stale', 'only documents whose chunks were embedded with another model')
  .action(async (opts: { stale?: boolean }) => {
    if (opts.stale !== true) throw new InvalidArgumentError('say which documents: --stale');
    await withContext(async (ctx) => {
      const { documents, indexing, embedder } = ctx.knowledge;
      await embedder.ready();
      const stale = await documents.list({
        staleFor: embedder.model,
        limit: Number.MAX_SAFE_INTEGER,
      });
      const tty = process.stderr.isTTY;
      let failed = 0;
      let succeeded = 0;
      // The first Ctrl-C finishes the document in progress and stops (nothing left `indexing`);
      // a second one exits at once (the server re-queues that document at its next start).
      const state = { stopping: false };
      const stop = () => {
        if (state.stopping) process.exit(130);
        state.stopping = true;
        process.stderr.write('\nstopping after the current document (Ctrl-C again to abort)\n');
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      for (const [i, doc] of stale.entries()) {
        if (state.stopping) break;
        const line = progressLine(i, stale.length, doc.name);
        process.stderr.write(tty ? `\r${line}` : `${line}\n`);
        try {
          await indexing.reindex(doc.id);
          succeeded += 1;
        } catch (error) {
          failed += 1;
          process.stderr.write(
            `${tty ? '\n' : ''}failed ${doc.id} (${doc.name}): ${(error as Error).message}\n`,
          );
        }
      }
      const finished = succeeded + failed;
      process.stderr.write(
        `${progressLine(finished, stale.length, state.stopping ? 'stopped' : 'done')}\n`,
      );
      console.log(
        `re-embedded ${succeeded} of ${stale.length} stale documents with ${embedder.model}`,
      );
      if (failed > 0) process.exitCode = 1;
    });
  });

const keys = program.command('keys').description('Manage API keys');

keys
  .command('create')
  .description('Create an API key and print it once')
  .requiredOption('--name <name>', 'a name for the key')
  .requiredOption('--level <level>', 'L0, L1 or L2', (value) => {
    if (!isAgentLevel(value)) throw new InvalidArgumentError('must be L0, L1 or L2');
    return value;
  })
  .action(async (opts: { name: string; level: 'L0' | 'L1' | 'L2' }) => {
    await withContext(async (ctx) => {
      const { record, rawKey } = await ctx.apiKeys.create({
        name: opts.name,
        level: opts.level,
        actor: 'cli',
        origin: 'cli',
      });
      console.log(`created ${record.id} (${record.level}, ${record.name})`);
      console.log(`key (shown once): ${rawKey}`);
    });
  });

keys
  .command('list')
  .description('List API keys')
  .action(async () => {
    await withContext(async (ctx) => {
      for (const k of await ctx.apiKeys.list()) {
        const state = k.revokedAt === null ? 'active' : `revoked ${k.revokedAt}`;
        console.log(`${k.id}  ${k.level}  ${k.prefix}…${k.lastFour}  ${k.name}  ${state}`);
      }
    });
  });

keys
  .command('revoke')
  .description('Revoke an API key')
  .argument('<id>')
  .action(async (id: string) => {
    await withContext(async (ctx) => {
      const record = await ctx.apiKeys.revoke(id, 'cli');
      console.log(`revoked ${record.id} at ${record.revokedAt ?? ''}`);
    });
  });

keys
  .command('rotate')
  .description('Replace an API key by a new one (the old one is revoked) and print it once')
  .argument('<id>')
  .action(async (id: string) => {
    await withContext(async (ctx) => {
      const { record, rawKey } = await ctx.apiKeys.rotate(id, 'cli');
      console.log(`rotated ${id} → ${record.id}`);
      console.log(`key (shown once): ${rawKey}`);
    });
  });

program.parseAsync().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof AppError) console.error(error.message);
  else console.error(error instanceof Error ? `error: ${error.message}` : error);
  process.exit(1);
});
