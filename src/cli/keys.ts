/** aps keys create|list|revoke|rotate: API keys from the command line (audited as `cli`). */
import { InvalidArgumentError, type Command } from 'commander';
import { CLI } from '../audit/actor.js';
import { isAgentLevel } from '../auth/levels.js';
import { isKeyAccess, type KeyAccess } from '../auth/scope.js';
import { table } from './output.js';
import type { CliSession } from './session.js';

/** `admin, every project` or `read, projects a, b`. */
function scopeText(key: { access: string; projects: string[] | null }): string {
  return `${key.access}, ${key.projects === null ? 'every project' : `projects ${key.projects.join(', ')}`}`;
}

export function registerKeys(program: Command, session: CliSession): void {
  const keys = program.command('keys').description('Manage API keys');

  keys
    .command('create')
    .description('Create an API key and print it once')
    .requiredOption('--name <name>', 'a name for the key')
    .requiredOption('--level <level>', 'L0, L1 or L2', (value) => {
      if (!isAgentLevel(value)) throw new InvalidArgumentError('must be L0, L1 or L2');
      return value;
    })
    .option(
      '--project <id>',
      'restrict the key to this project (repeat for several); default: every project',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--access <access>', 'read, write or admin (default admin)', (value) => {
      if (!isKeyAccess(value)) throw new InvalidArgumentError('must be read, write or admin');
      return value;
    })
    .option('--json', 'print the key record and the raw key as JSON')
    .action(
      async (opts: {
        name: string;
        level: 'L0' | 'L1' | 'L2';
        project?: string[];
        access?: KeyAccess;
        json?: boolean;
      }) => {
        await session.announceIfNew(true);
        await session.withContext(async (ctx) => {
          const { record, rawKey } = await ctx.apiKeys.create({
            name: opts.name,
            level: opts.level,
            actor: CLI,
            origin: 'cli',
            projects: opts.project ?? null,
            ...(opts.access === undefined ? {} : { access: opts.access }),
          });
          if (opts.json === true) {
            console.log(JSON.stringify({ ...record, apiKey: rawKey }));
            return;
          }
          const restricted = record.projects !== null || record.access !== 'admin';
          console.log(
            `created ${record.id} (${record.level}, ${record.name})${restricted ? `: ${scopeText(record)}` : ''}`,
          );
          console.log(`key (shown once): ${rawKey}`);
        });
      },
    );

  keys
    .command('list')
    .description('List API keys (never the keys themselves: a prefix and the last four characters)')
    .option('--json', 'print the keys as a JSON array')
    .action(async (opts: { json?: boolean }) => {
      await session.requireDatabase('no API key to list');
      await session.withContext(async (ctx) => {
        const list = await ctx.apiKeys.list();
        if (opts.json === true) {
          console.log(JSON.stringify(list));
          return;
        }
        if (list.length === 0) {
          session.note('No API keys: create one with `aps keys create --name admin --level L0`.');
          return;
        }
        const rows = list.map((k) => [
          k.id,
          k.level,
          scopeText(k),
          `${k.prefix}…${k.lastFour}`,
          k.name,
          k.revokedAt === null ? 'active' : `revoked ${k.revokedAt}`,
          k.createdAt,
        ]);
        console.log(table(['ID', 'LEVEL', 'SCOPE', 'KEY', 'NAME', 'STATUS', 'CREATED'], rows));
      });
    });

  keys
    .command('revoke')
    .description('Revoke an API key')
    .argument('<id>')
    .action(async (id: string) => {
      await session.requireDatabase('no API key to revoke');
      await session.withContext(async (ctx) => {
        const record = await ctx.apiKeys.revoke(id, CLI);
        console.log(`revoked ${record.id} at ${record.revokedAt ?? ''}`);
      });
    });

  keys
    .command('rotate')
    .description('Replace an API key by a new one (the old one is revoked) and print it once')
    .argument('<id>')
    .action(async (id: string) => {
      await session.requireDatabase('no API key to rotate');
      await session.withContext(async (ctx) => {
        const { record, rawKey } = await ctx.apiKeys.rotate(id, CLI);
        console.log(`rotated ${id} → ${record.id}`);
        console.log(`key (shown once): ${rawKey}`);
      });
    });
}
