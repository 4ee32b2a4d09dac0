/**
 * `aps migrate-data` at scale: a SQLite base of synthetic chunks copied into a fresh PostgreSQL
 * database by the real command (dist/cli.js, a process of its own), timed, then verified by it.
 *
 *   npm run bench:migrate-data -- [--chunks 100000] [--per-document 1000] [--queries 20]
 *                                 [--url postgres://…] [--dir DIR] [--keep] [--seed 42]
 *
 * 1. Fill (as bench:scale, bench/scale/fill.ts): `--chunks` ~1,000-character chunks in documents
 *    of `--per-document`, in a temporary data directory (or `--dir`, reused as it is when it
 *    already holds a database).
 * 2. A fresh database on the server of `--url` (default TEST_DATABASE_URL; a role that may
 *    CREATE DATABASE; pgvector installed), dropped at the end unless `--keep`.
 * 3. `aps migrate-data --to … --json --queries N`: the copy's time and chunks/s (the command's own
 *    figures: from its snapshot to its last commit), the verification's time, counts and retrievals.
 *
 * Progress goes to stderr; the results to stdout.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';
import { benchEnv, fill } from './scale/fill.js';

const { values } = parseArgs({
  options: {
    chunks: { type: 'string', default: '100000' },
    'per-document': { type: 'string', default: '1000' },
    queries: { type: 'string', default: '20' },
    url: { type: 'string', default: process.env.TEST_DATABASE_URL },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
    seed: { type: 'string', default: '42' },
  },
});

const KEY = 'aps_bench_migrate_0123456789abcdefghijklmnop';
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const log = (line: string) => process.stderr.write(line + '\n');
const count = (s: string) => Number(s.replace(/k$/i, '000').replace(/m$/i, '000000'));

if (values.url === undefined) {
  log('bench:migrate-data needs --url postgres://… (or TEST_DATABASE_URL)');
  process.exit(1);
}
const admin = values.url;

async function onAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'aps-bench-migrate-'));
if (existsSync(join(dir, 'aps.sqlite'))) {
  log(`reusing ${dir}`);
} else {
  const chunks = count(values.chunks);
  log(`filling ${dir} with ${chunks} chunks`);
  const generator = new SentenceGenerator(
    loadParaphrase().docs.map((d) => d.markdown),
    rng(Number(values.seed)),
  );
  const filled = await fill(dir, KEY, generator, chunks, count(values['per-document']), log);
  log(`fill: ${filled.chunks} chunks in ${filled.seconds.toFixed(1)} s`);
}

const name = `aps_bench_migrate_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
await onAdmin(`create database ${name}`);
const target = new URL(admin);
target.pathname = `/${name}`;
try {
  const started = performance.now();
  const { stdout, code } = await promisify(execFile)(
    process.execPath,
    [CLI, 'migrate-data', '--to', target.toString(), '--json', '--queries', values.queries],
    {
      env: { ...process.env, ...benchEnv(dir, KEY), LOG_LEVEL: 'warn' },
      maxBuffer: 64 * 2 ** 20,
    },
  ).then(
    (out) => ({ ...out, code: 0 }),
    (error: unknown) => error as { stdout: string; code: number },
  );
  const wall = (performance.now() - started) / 1000;
  const report = JSON.parse(stdout) as {
    copied: { documents: number; chunks: number; vectors: number };
    seconds: number;
    chunksPerSecond: number;
    verification: {
      queries: number;
      agreed: Record<string, number>;
      tied: Record<string, number>;
      candidates: number;
      mismatches: unknown[];
      countMismatches: unknown[];
      maxScoreDelta: number;
    } | null;
  };
  const c = report.copied;
  console.log(
    `copy: ${c.documents} documents, ${c.chunks} chunks, ${c.vectors} vectors in ${report.seconds.toFixed(1)} s ` +
      `(${Math.round(report.chunksPerSecond)} chunks/s); whole command with its verification ${wall.toFixed(1)} s ` +
      `(exit status ${code})`,
  );
  const v = report.verification;
  if (v !== null) {
    const modes = Object.keys(v.agreed)
      .map((m) => `${m} ${v.agreed[m]} same + ${v.tied[m] ?? 0} up to ties of ${v.queries}`)
      .join('; ');
    console.log(
      `verify: count mismatches ${v.countMismatches.length}; retrievals: ${modes}; ` +
        `hybrid differing only by candidates ${v.candidates}; mismatches ${v.mismatches.length}; ` +
        `largest score difference ${v.maxScoreDelta.toExponential(2)}`,
    );
  }
} finally {
  if (!values.keep) {
    await onAdmin(`drop database if exists ${name} with (force)`);
    if (values.dir === undefined) rmSync(dir, { recursive: true, force: true });
  } else log(`kept ${dir} and database ${name}`);
}
