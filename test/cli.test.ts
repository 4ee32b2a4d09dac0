/** The real `aps` binary (dist/cli.js, built by `pretest`), run as a separate process. */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/db/migrations/index.js';
import { postgresEnv, tempDir } from './helpers.js';
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

describe('aps CLI', () => {
  it('migrate, migrate status', async () => {
    const dir = tempDir();
    expect((await aps(dir, ['migrate', 'status'])).stdout).toMatch(
      new RegExp(`^${NAMES.map((n) => `pending\\s+${n}\n`).join('')}0 applied, ${N} pending`),
    );
    expect((await aps(dir, ['migrate'])).stdout).toMatch(
      new RegExp(`^${NAMES.map((n) => `applied\\s+${n} .*\n`).join('')}${N} applied, 0 pending`),
    );
    expect((await aps(dir, ['migrate', 'status'])).stdout).toMatch(
      new RegExp(`${N} applied, 0 pending`),
    );
  });

  it('concurrent processes migrate each migration exactly once', async () => {
    const dir = tempDir();
    const results = await Promise.all([1, 2, 3, 4].map(() => aps(dir, ['migrate'])));
    for (const r of results) expect(r.stdout).toMatch(new RegExp(`${N} applied, 0 pending`));
    // Each migration is recorded once, in order (the bookkeeping table's primary key is the name).
    const status = (await aps(dir, ['migrate', 'status'])).stdout;
    expect(status.match(/^applied\s+(\S+)/gm)?.map((l) => l.split(/\s+/)[1])).toEqual(NAMES);
  });

  it('keys create / list / rotate / revoke', async () => {
    const dir = tempDir();
    const created = (await aps(dir, ['keys', 'create', '--name', 'ops', '--level', 'L1'])).stdout;
    const id = /created (\S+) \(L1, ops\)/.exec(created)?.[1];
    const raw = /key \(shown once\): (aps_\S+)/.exec(created)?.[1];
    expect(id).toBeDefined();
    expect(raw).toBeDefined();
    const list = (await aps(dir, ['keys', 'list'])).stdout;
    expect(list).toContain(`${id}  L1  ${raw!.slice(0, 8)}…${raw!.slice(-4)}  ops  active`);
    expect(list).not.toContain(raw);
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
    if (TEST_DATABASE_URL === undefined) {
      // The database was closed properly: SQLite checkpointed and removed its WAL file.
      expect(existsSync(join(dir, 'aps.sqlite'))).toBe(true);
      expect(existsSync(join(dir, 'aps.sqlite-wal'))).toBe(false);
    }
  });
});
