/** The real `aps` binary (dist/cli.js, built by `pretest`), run as a separate process. */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/db/migrations/index.js';
import { postgresEnv, tempDir, TEST_EMBEDDING_CACHE } from './helpers.js';
import { knowledgeApp } from './knowledge/helpers.js';
import { TEST_DATABASE_URL } from './postgres/pg.js';

const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const run = promisify(execFile);

const NAMES = MIGRATIONS.map((m) => m.name);
const N = NAMES.length;

/** The CLI's environment; on the PostgreSQL run each data directory gets its own database. */
async function env(dir: string, extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  return {
    PATH: process.env.PATH,
    DATA_DIR: dir,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    ...(await postgresEnv(dir, extra)),
    ...extra,
  };
}

async function aps(dir: string, args: string[], extra: Record<string, string> = {}) {
  return run(process.execPath, [CLI, ...args], { env: await env(dir, extra), cwd: dir });
}

/** A run expected to fail: its exit code and output. */
async function apsFails(
  dir: string,
  args: string[],
  extra: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return aps(dir, args, extra).then(
    () => {
      throw new Error(`aps ${args.join(' ')} succeeded`);
    },
    (e: unknown) => e as { code: number; stdout: string; stderr: string },
  );
}

describe('aps CLI', () => {
  it('migrate, migrate status: a table with headers, or --json', async () => {
    const dir = tempDir();
    const rows = (state: string) => NAMES.map((n) => `${state}\\s+${n}.*\n`).join('');
    expect((await aps(dir, ['migrate', 'status'])).stdout).toMatch(
      new RegExp(`^STATE\\s+MIGRATION\\s+APPLIED AT\n${rows('pending')}0 applied, ${N} pending`),
    );
    expect((await aps(dir, ['migrate'])).stdout).toMatch(
      new RegExp(`^STATE\\s+MIGRATION\\s+APPLIED AT\n${rows('applied')}${N} applied, 0 pending`),
    );
    const json = JSON.parse((await aps(dir, ['migrate', 'status', '--json'])).stdout) as {
      status: string;
      applied: { name: string }[];
      pending: string[];
    };
    expect(json).toMatchObject({ status: 'ok', pending: [] });
    expect(json.applied.map((m) => m.name)).toEqual(NAMES);
  });

  it('concurrent processes migrate each migration exactly once', async () => {
    const dir = tempDir();
    const results = await Promise.all([1, 2, 3, 4].map(() => aps(dir, ['migrate'])));
    for (const r of results) expect(r.stdout).toMatch(new RegExp(`${N} applied, 0 pending`));
    // Each migration is recorded once, in order (the bookkeeping table's primary key is the name).
    const status = (await aps(dir, ['migrate', 'status'])).stdout;
    expect(status.match(/^applied\s+(\S+)/gm)?.map((l) => l.split(/\s+/)[1])).toEqual(NAMES);
  });

  it('keys create / list / rotate / revoke', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const created = (await aps(dir, ['keys', 'create', '--name', 'ops', '--level', 'L1'])).stdout;
    const id = /created (\S+) \(L1, ops\)/.exec(created)?.[1];
    const raw = /key \(shown once\): (aps_\S+)/.exec(created)?.[1];
    expect(id).toBeDefined();
    expect(raw).toBeDefined();
    const list = (await aps(dir, ['keys', 'list'])).stdout;
    expect(list).toMatch(/^ID\s+LEVEL\s+SCOPE\s+KEY\s+NAME\s+STATUS\s+CREATED\n/);
    expect(list).toMatch(
      new RegExp(
        `\n${id}\\s+L1\\s+admin, every project\\s+${raw!.slice(0, 8)}…${raw!.slice(-4)}\\s+ops\\s+active\\s+\\d{4}-`,
      ),
    );
    // A scoped key: read access to one project, shown as such, in JSON too.
    const scoped = JSON.parse(
      (
        await aps(dir, [
          'keys',
          'create',
          '--name',
          'reader',
          '--level',
          'L0',
          '--access',
          'read',
          '--project',
          'docs',
          '--project',
          'faq',
          '--json',
        ])
      ).stdout,
    ) as { id: string; apiKey: string; access: string; projects: string[] };
    expect(scoped).toMatchObject({ access: 'read', projects: ['docs', 'faq'] });
    expect(scoped.apiKey).toMatch(/^aps_/);
    expect((await aps(dir, ['keys', 'list'])).stdout).toMatch(
      new RegExp(`${scoped.id}\\s+L0\\s+read, projects docs, faq\\s`),
    );
    expect(
      (await apsFails(dir, ['keys', 'create', '--name', 'x', '--level', 'L0', '--access', 'root']))
        .stderr,
    ).toMatch(/must be read, write or admin/);
    await aps(dir, ['keys', 'revoke', scoped.id]);
    expect(list).not.toContain(raw);
    const listed = JSON.parse((await aps(dir, ['keys', 'list', '--json'])).stdout) as unknown[];
    expect(listed).toEqual([
      expect.objectContaining({ id: scoped.id, access: 'read', revokedAt: expect.any(String) }),
      expect.objectContaining({
        id,
        name: 'ops',
        level: 'L1',
        revokedAt: null,
        access: 'admin',
        projects: null,
      }),
    ]);
    expect(JSON.stringify(listed)).not.toContain(raw);
    const rotated = (await aps(dir, ['keys', 'rotate', id!])).stdout;
    expect(rotated).toMatch(new RegExp(`rotated ${id} → \\S+`));
    expect((await aps(dir, ['keys', 'list'])).stdout).toMatch(new RegExp(`${id} .* revoked `));
    const newId = /→ (\S+)/.exec(rotated)![1]!;
    expect((await aps(dir, ['keys', 'revoke', newId])).stdout).toMatch(`revoked ${newId} at`);
    await expect(
      aps(dir, ['keys', 'create', '--name', 'x', '--level', 'L7']),
    ).rejects.toMatchObject({ stderr: expect.stringMatching(/L0, L1 or L2/) as string });
    await expect(aps(dir, ['keys', 'revoke', 'nope'])).rejects.toMatchObject({
      stderr: expect.stringMatching(/API key not found/) as string,
    });
  });

  it('refuses to start in production without secrets, listing every problem', async () => {
    const dir = tempDir();
    const error = await aps(dir, ['serve'], { NODE_ENV: 'production', PORT: 'x' }).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(error).toMatchObject({ code: 1 });
    const { stderr } = error as { stderr: string };
    expect(stderr).toMatch(/PORT must be an integer/);
    expect(stderr).toMatch(/JWT_SECRET is required when NODE_ENV=production/);
    expect(stderr).toMatch(/API_KEY_SALT is required when NODE_ENV=production/);
  });

  it('serve: prints address and first key, then shuts down cleanly on SIGTERM', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: await env(dir, { PORT: '0' }),
      cwd: dir,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const address = await new Promise<string>((resolveAddress, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no address in: ${out}`));
      }, 15_000);
      child.stdout.on('data', () => {
        const m = /listening on (http:\/\/\S+) /.exec(out);
        if (m && /aps_\S+/.test(out)) {
          clearTimeout(timer);
          resolveAddress(m[1]!);
        }
      });
    });
    expect((await fetch(`${address}/health`)).status).toBe(200);
    const exit = new Promise<number | null>((r) =>
      child.on('exit', (code) => {
        r(code);
      }),
    );
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    // Stopped while the embedding model still loads (a first start builds it): not an error.
    expect(out).not.toMatch(/"level":(50|60)/);
    if (TEST_DATABASE_URL === undefined) {
      // The database was closed properly: SQLite checkpointed and removed its WAL file.
      expect(existsSync(join(dir, 'aps.sqlite'))).toBe(true);
      expect(existsSync(join(dir, 'aps.sqlite-wal'))).toBe(false);
    }
  });
});

/**
 * The first stderr line of every command: which database and data directory it uses (shown
 * relative to the working directory when inside it, as every test here runs in `cwd: dir`).
 */
function usingLine(dir: string, cwd = dir): RegExp {
  const shown = (path: string) =>
    path === cwd ? '.' : path.startsWith(`${cwd}/`) ? `./${path.slice(cwd.length + 1)}` : path;
  const db =
    TEST_DATABASE_URL === undefined
      ? `SQLite database ${escape(shown(join(dir, 'aps.sqlite')))}`
      : 'PostgreSQL database postgres://[^:@\\s]+@\\S+'; // the user, never the password
  return new RegExp(`^Using ${db} \\(data directory ${escape(shown(dir))}\\)\n`);
}
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('aps CLI: first contact', () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(
      readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8'),
    ) as { version: string };
    expect((await aps(tempDir(), ['--version'])).stdout.trim()).toBe(version);
  });

  it('--data-dir overrides DATA_DIR, and the first line says which database and directory', async () => {
    const envDir = tempDir();
    const chosen = tempDir();
    const created = await aps(envDir, [
      '--data-dir',
      chosen,
      'keys',
      'create',
      '--name',
      'a',
      '--level',
      'L0',
    ]);
    expect(created.stderr).toMatch(usingLine(chosen, envDir));
    if (TEST_DATABASE_URL === undefined) {
      expect(created.stderr).toContain('creating a new, empty SQLite database');
      expect(existsSync(join(chosen, 'aps.sqlite'))).toBe(true);
      expect(existsSync(join(envDir, 'aps.sqlite'))).toBe(false);
    }
    // After the command name too.
    const list = await aps(envDir, ['keys', 'list', '--data-dir', chosen]);
    expect(list.stderr).toMatch(usingLine(chosen, envDir));
    expect(list.stderr).not.toContain('creating');
    expect(list.stdout).toMatch(/^ID\s+LEVEL/);
  });

  it('keys list on a fresh directory refuses and creates nothing (no database, no secrets)', async () => {
    const dir = tempDir();
    const failed = await apsFails(dir, ['keys', 'list']);
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    expect(failed.stderr).toMatch(usingLine(dir));
    expect(failed.stderr).toMatch(/No database yet: .* so there is no API key to list/);
    expect(readdirSync(dir)).toEqual([]);
    // `migrate status` reports without creating anything either.
    expect((await aps(dir, ['migrate', 'status'])).stdout).toContain(`0 applied, ${N} pending`);
    if (TEST_DATABASE_URL === undefined) expect(readdirSync(dir)).toEqual([]);
  });

  it('reindex without a selector explains the choices and exits 1', async () => {
    const failed = await apsFails(tempDir(), ['reindex']);
    expect(failed.code).toBe(1);
    for (const selector of ['--stale', '--project <id>', '--document <id...>', '--all'])
      expect(failed.stderr).toContain(selector);
    const both = await apsFails(tempDir(), ['reindex', '--all', '--stale']);
    expect(both).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--all cannot') as string,
    });
  });

  describe('reindex progress', () => {
    let dir: string;
    beforeAll(async () => {
      dir = tempDir();
      const { t, k } = await knowledgeApp({}, dir);
      for (const i of [1, 2, 3])
        await k.uploadOk(`doc${i}.md`, `# Doc ${i}\n\nWalruses ${i} rest on floating ice.\n`, {
          projectId: i === 3 ? 'p2' : 'p1',
        });
      await t.close(true);
    });
    const reindexEnv = { EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE, LOG_LEVEL: 'info' };

    it(
      'without a terminal: plain lines, no bar or control characters; --json parses',
      { timeout: 60_000 },
      async () => {
        const run = await aps(dir, ['reindex', '--project', 'p1'], reindexEnv);
        expect(run.stderr).toMatch(usingLine(dir));
        expect(run.stderr).toMatch(/^reindexing 1\/2 doc\d\.md$/m);
        expect(run.stderr).toMatch(/^reindexing 2\/2 doc\d\.md$/m);
        expect(run.stderr).not.toContain('\r');
        expect(run.stderr).not.toContain('\u001b');
        expect(run.stderr).not.toContain('[#');
        // Logs are JSON lines when not on a terminal.
        expect(run.stderr).toMatch(/^\{"level":30,.*"msg":"document indexed"\}$/m);
        expect(run.stdout).toMatch(
          /^re-indexed 2 of 2 documents with glove-sif-100d in \d+\.\d s\n$/,
        );
        const missing = await apsFails(dir, ['reindex', '--document', 'nope'], reindexEnv);
        expect(missing).toMatchObject({
          code: 1,
          stderr: expect.stringMatching(/not found/) as string,
        });
        const all = JSON.parse((await aps(dir, ['reindex', '--all', '--json'], reindexEnv)).stdout);
        expect(all).toMatchObject({
          model: 'glove-sif-100d',
          selected: 3,
          reindexed: 3,
          failed: [],
        });
      },
    );

    it.skipIf(!existsSync('/usr/bin/script'))(
      'on a terminal: one bar with an ETA, log lines above it, erased at the end',
      { timeout: 60_000 },
      async () => {
        const command = `${process.execPath} ${CLI} reindex --all`;
        const run = await promisify(execFile)('script', ['-qec', command, '/dev/null'], {
          env: await env(dir, reindexEnv),
          cwd: dir,
        });
        const out = run.stdout;
        const ERASE = '\r\u001b[2K';
        // The bar: drawn in place, with count, elapsed time and ETA.
        expect(out).toMatch(
          /\[#{6,7}-{13,14}\] 1\/3 +33% +\d+:\d\d elapsed +ETA \d+:\d\d +doc\d\.md/,
        );
        expect(out).toContain('ETA --:--'); // before the first document is done
        // What the terminal shows of each line (the pty ends lines with \r\n): the text after its
        // last carriage return.
        const shown = out
          .split('\n')
          .map((l) => stripVTControlCharacters(l.replace(/\r$/, '').split('\r').pop() ?? ''));
        // Log lines (pretty: one readable line each) stand alone, never mixed with the bar.
        const logs = shown.filter((l) => l.includes('document indexed'));
        expect(logs).toHaveLength(3);
        for (const line of logs)
          expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: document indexed /);
        // The bar is erased before the summary, which stands alone on its line.
        const summary = out.lastIndexOf('re-indexed 3 of 3 documents');
        expect(out.lastIndexOf(ERASE)).toBe(summary - ERASE.length);
      },
    );
  });
});
