/**
 * `aps backup` and `aps restore` on a sizable SQLite base, while a server runs on it:
 *
 *   npm run bench:backup -- [--chunks 100000] [--per-document 1000] [--dir DIR] [--keep]
 *
 * 1. Fill (bench/scale/fill.ts: synthetic ~1,000-character chunks through the store's own commit)
 *    and give each document a stored source file of ~its text's size (random base64, which
 *    compresses as text does not: a fair figure for gzip), unless `--dir` already holds a base.
 * 2. Start `aps serve` on it and wait until ready and its search snapshots are written.
 * 3. `aps backup --out …tar` and `…tar.gz` (the server running), then `aps restore` of each
 *    into a new directory; each timed as a child process. Reported: seconds, the data's size
 *    (database + files + snapshots) and MB/s of it, the archive's size.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';
import { benchEnv, fill } from './scale/fill.js';
import { startTimed, stop } from './scale/probe.js';

const { values } = parseArgs({
  options: {
    chunks: { type: 'string', default: '100000' },
    'per-document': { type: 'string', default: '1000' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});

const KEY = 'aps_bench_backup_0123456789abcdefghijklmnop';
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const log = (line: string) => process.stderr.write(line + '\n');
const count = (s: string) => Number(s.replace(/k$/i, '000').replace(/m$/i, '000000'));
const work = mkdtempSync(join(tmpdir(), 'aps-bench-backup-'));
const dir = values.dir ?? join(work, 'data');
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Bytes under `path` (recursively), scratch (`tmp/`) left out. */
function bytesUnder(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
    const rel = relative(path, entry.parentPath);
    if (entry.isFile() && rel !== 'tmp' && !rel.startsWith('tmp/')) {
      total += statSync(join(entry.parentPath, entry.name)).size;
    }
  }
  return total;
}

if (!existsSync(join(dir, 'aps.sqlite'))) {
  const generator = new SentenceGenerator(
    loadParaphrase().docs.map((d) => d.markdown),
    rng(42),
  );
  const chunks = count(values.chunks);
  const perDocument = count(values['per-document']);
  log(`filling ${dir} with ${chunks} chunks`);
  const filled = await fill(dir, KEY, generator, chunks, perDocument, log);
  log(`fill: ${filled.documents} documents in ${filled.seconds.toFixed(1)} s`);
  const db = new Database(join(dir, 'aps.sqlite'));
  const rows = db.prepare('select file_path from knowledge_documents').all() as {
    file_path: string;
  }[];
  db.close();
  mkdirSync(join(dir, 'bench'), { recursive: true });
  for (const row of rows) {
    writeFileSync(join(dir, row.file_path), randomBytes(perDocument * 750).toString('base64'));
  }
}

const env = { ...benchEnv(dir, KEY), SEARCH_SNAPSHOT_DELAY_MS: '500' };
const server = await startTimed(CLI, env, 600);
// The snapshots are written SEARCH_SNAPSHOT_DELAY_MS after the copies load (or change).
for (let i = 0; i < 600 && !existsSync(join(dir, 'search-snapshots')); i++) {
  await new Promise((r) => setTimeout(r, 100));
}
await new Promise((r) => setTimeout(r, 3000));
const dataBytes = bytesUnder(dir);
const timed = (args: string[], dataDir: string) => {
  const t0 = performance.now();
  execFileSync(process.execPath, [CLI, ...args], {
    env: { ...benchEnv(dataDir, KEY), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return (performance.now() - t0) / 1000;
};
const lines: string[] = [];
try {
  const chunks = new Database(join(dir, 'aps.sqlite'), { readonly: true })
    .prepare('select count(*) from knowledge_chunks')
    .pluck()
    .get() as number;
  lines.push(`data: ${chunks} chunks, ${mb(dataBytes)} (database, stored files, snapshots)`);
  for (const name of ['backup.tar', 'backup.tar.gz']) {
    const out = join(work, name);
    const backupS = timed(['backup', '--out', out], dir);
    const target = join(work, `restored-${name}`);
    const restoreS = timed(['restore', out, '--data-dir', target], target);
    const rate = (s: number) => `${s.toFixed(2)} s (${(dataBytes / 1e6 / s).toFixed(0)} MB/s)`;
    lines.push(
      `${name}: ${mb(statSync(out).size)}; backup ${rate(backupS)} with the server running; ` +
        `restore ${rate(restoreS)}`,
    );
    rmSync(target, { recursive: true, force: true });
  }
} finally {
  await stop(server.child);
  if (!values.keep) rmSync(work, { recursive: true, force: true });
}
console.log(lines.join('\n'));
