/**
 * `aps backup --out FILE`: one archive of the database, the stored files it references and the
 * search snapshots, taken while a server runs and writes.
 *
 * SQLite, in order: (1) the database through SQLite's online backup API, in one step (one read
 * transaction of the live file in WAL mode: the writers go on, the copy is of one moment);
 * (2) each stored file the copy references, hard-linked into a scratch directory (`DATA_DIR/tmp`,
 * swept at the next start if this process dies) — a link keeps the content even if the server
 * removes the file a moment later. A referenced file already gone (its document deleted, or
 * re-indexed and its old markdown removed, between (1) and (2)) means another attempt from (1);
 * after three, its documents are hidden in the copy exactly as a delete hides them, and the
 * restored server purges them at start (counted in the manifest's `dropped`). Files added after
 * (1) are not referenced by the copy, so not taken. (3) The search snapshot files of the same
 * database (identity), hard-linked just before (1) (so one the server saves meanwhile replaces
 * the file, not the link: what is taken is never ahead of the copy), CRC-checked, at a generation
 * not ahead of the copy's: the restored server catches them up from the copy's change log as after
 * any restart; others are left out (it then rebuilds from the tables). (4) secrets.json, without which the copy's API keys verify nothing.
 * Then manifest.json first and every file, written to `FILE.<pid>.tmp` and renamed: a failed
 * backup leaves no FILE. `.tar.gz` / `.tgz` → gzip, anything else a plain tar.
 *
 * PostgreSQL: the database (and files kept in it, STORAGE_DRIVER=postgres) is `pg_dump`'s job;
 * with local storage the archive holds every file under `DATA_DIR/documents/` (run it after the
 * dump: a restored server sweeps files no document references).
 */
import { createRequire } from 'node:module';
import {
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { create } from 'tar';
import type { Config } from '../config.js';
import { checkedSnapshotMeta } from '../knowledge/search/sqlite/copies/snapshot-file.js';
import { scratchName } from '../knowledge/storage/scratch.js';
import {
  BACKUP_FORMAT,
  BackupError,
  fileSha256,
  MANIFEST,
  safePath,
  type FileRole,
  type Manifest,
  type ManifestFile,
} from './backup-manifest.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/** Attempts at a database copy whose referenced files are all still there. */
const ATTEMPTS = 3;
/** The database's name in the archive (and in the restored data directory). */
const DATABASE = 'aps.sqlite';
/**
 * zlib's level for `.tar.gz`: 1 (measured at 100k chunks: level 6, zlib's default, took 2.5 times
 * as long for an archive 5 % smaller; vectors and random-looking bytes hardly compress).
 */
const GZIP_LEVEL = 1;

export interface BackupResult {
  manifest: Manifest;
  bytes: number;
  seconds: number;
}

/** A file staged for the archive: its path in the archive (= under the staging directory). */
interface Staged {
  path: string;
  role: FileRole;
}

/** Links `from` into the staging directory at `path` (copies across filesystems); false if gone. */
function stage(stagingDir: string, from: string, path: string): boolean {
  const to = join(stagingDir, path);
  mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
  try {
    const info = lstatSync(from);
    // A link to the link would go into the archive as a link, which a restore refuses.
    if (info.isSymbolicLink()) throw Object.assign(new Error('symbolic link'), { code: 'EPERM' });
    if (!info.isFile()) return false;
    linkSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw error;
    try {
      copyFileSync(from, to);
    } catch (copyError) {
      if ((copyError as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw copyError;
    }
  }
  return true;
}

/** `dev:ino`, as search snapshots record the database they belong to (copies/snapshots.ts). */
function identity(file: string): string {
  const s = statSync(file);
  return `${s.dev}:${s.ino}`;
}

interface DatabaseCopy {
  staged: Staged[];
  /** The search snapshots linked just before the copy (step 0). */
  snapshots: SnapshotCandidate[];
  dropped: Manifest['dropped'];
  generation: number;
  migrations: string[];
  counts: { documents: number; chunks: number };
}

/** Steps (1) and (2): the database copy and the files it references, staged. */
async function copyDatabase(
  config: Config,
  file: string,
  stagingDir: string,
  note: (line: string) => void,
): Promise<DatabaseCopy> {
  const copyPath = join(stagingDir, DATABASE);
  for (let attempt = 1; ; attempt++) {
    rmSync(stagingDir, { recursive: true, force: true });
    mkdirSync(stagingDir, { recursive: true, mode: 0o700 });
    const snapshots = await linkSnapshots(file, stagingDir);
    const live = new BetterSqlite3(file, { fileMustExist: true });
    try {
      live.pragma('busy_timeout = 10000');
      // The first step (0 pages) opens the copy; the second copies every page in one step.
      await live.backup(copyPath, { progress: () => 0x7fffffff });
    } finally {
      live.close();
    }
    const copy = new BetterSqlite3(copyPath, { fileMustExist: true });
    try {
      const rows = copy
        .prepare(
          `select id, file_path, markdown_path from knowledge_documents where status <> 'deleting'`,
        )
        .all() as { id: string; file_path: string; markdown_path: string | null }[];
      const staged: Staged[] = [{ path: DATABASE, role: 'database' }];
      const missing = new Map<string, string[]>();
      for (const row of rows) {
        for (const key of [row.file_path, row.markdown_path]) {
          if (key === null) continue;
          if (!safePath(key)) throw new BackupError(`unsafe storage key in the database: ${key}`);
          if (stage(stagingDir, join(config.dataDir, key), key)) {
            staged.push({ path: key, role: 'stored' });
          } else {
            missing.set(row.id, [...(missing.get(row.id) ?? []), key]);
          }
        }
      }
      if (missing.size > 0 && attempt < ATTEMPTS) {
        note(`${missing.size} documents changed while copying their files: copying again`);
        continue;
      }
      const dropped = [...missing].map(([documentId, keys]) => ({ documentId, missing: keys }));
      hide(
        copy,
        dropped.map((d) => d.documentId),
      );
      const one = (sql: string) => (copy.prepare(sql).get() as { n: number }).n;
      return {
        staged,
        snapshots,
        dropped,
        generation: one('select generation as n from knowledge_search_generation where id = 1'),
        migrations: (
          copy.prepare('select name from aps_migrations order by name').all() as { name: string }[]
        ).map((m) => m.name),
        counts: {
          documents: one(
            `select count(*) as n from knowledge_documents where status <> 'deleting'`,
          ),
          chunks: one(
            `select count(*) as n from knowledge_chunks c join knowledge_documents d
             on d.id = c.document_id where d.status <> 'deleting' and c.run_token is d.chunk_token`,
          ),
        },
      };
    } finally {
      copy.close(); // checkpoints: the copy is one file again
    }
  }
}

/**
 * Hides documents in the copy as a delete does (sqlite-chunk-writes.ts `hide`: row state
 * `deleting`, checksum freed, a change recorded for the search copies); the restored server
 * purges their rows at start.
 */
function hide(copy: BetterSqlite3.Database, ids: readonly string[]): void {
  if (ids.length === 0) return;
  const hideRow = copy.prepare(
    `update knowledge_documents
     set status = 'deleting', index_token = null, checksum = 'deleting:' || id, updated_at = ?
     where id = ? and status <> 'deleting'`,
  );
  const bump = copy.prepare(
    'update knowledge_search_generation set generation = generation + 1 where id = 1',
  );
  const change = copy.prepare(
    `insert into knowledge_search_changes (document_id, generation)
     select ?, generation from knowledge_search_generation where id = 1
     on conflict (document_id) do update set generation = excluded.generation`,
  );
  copy.transaction(() => {
    for (const id of ids) {
      hideRow.run(new Date().toISOString(), id);
      bump.run();
      change.run(id);
    }
  })();
}

/** A search snapshot linked into the staging directory, with what its header says. */
interface SnapshotCandidate {
  name: string;
  taken: Staged[];
  /** The generation it was saved at (null: unreadable). */
  generation: number | null;
  /** Why it cannot be taken whatever the copy's generation (null: it may be). */
  why: string | null;
}

/**
 * Step (0), just before the database copy: the snapshots of this database, hard-linked as they
 * are now (with the graph files they name). A snapshot the server saves later replaces the file,
 * not the link, so what is taken is never ahead of the copy made after it (generations only grow).
 */
async function linkSnapshots(file: string, stagingDir: string): Promise<SnapshotCandidate[]> {
  const dir = join(dirname(file), 'search-snapshots');
  const prefix = `${basename(file)}.`;
  const names = existsSync(dir) ? readdirSync(dir) : [];
  const database = identity(file);
  const candidates: SnapshotCandidate[] = [];
  for (const name of names.filter((n) => n.startsWith(prefix) && n.endsWith('.snapshot'))) {
    // Renamed after the restored database; a graph file keeps its name (the snapshot names it).
    const path = `search-snapshots/${DATABASE}.${name.slice(prefix.length)}`;
    if (!stage(stagingDir, join(dir, name), path)) continue; // replaced meanwhile: none to take
    const candidate: SnapshotCandidate = {
      name,
      taken: [{ path, role: 'snapshot' }],
      generation: null,
      why: null,
    };
    try {
      const meta = await checkedSnapshotMeta(join(stagingDir, path));
      const graph = meta.graph as { file?: unknown; bytes?: unknown } | undefined;
      if (typeof meta.generation === 'number') candidate.generation = meta.generation;
      if (meta.database !== database) candidate.why = 'another database';
      else if (graph !== undefined) {
        const graphPath = `search-snapshots/${String(graph.file)}`;
        if (typeof graph.file !== 'string' || !safePath(graphPath))
          candidate.why = 'graph file name';
        else if (!stage(stagingDir, join(dir, graph.file), graphPath)) {
          candidate.why = 'graph file gone';
        } else if (statSync(join(stagingDir, graphPath)).size !== graph.bytes) {
          candidate.why = 'graph size';
        } else candidate.taken.push({ path: graphPath, role: 'snapshot' });
      }
    } catch (error) {
      candidate.why = error instanceof Error ? error.message : String(error);
    }
    candidates.push(candidate);
  }
  return candidates;
}

/** Step (3): the linked snapshots not ahead of the copy are taken; the names of those left out. */
function keepSnapshots(
  candidates: readonly SnapshotCandidate[],
  stagingDir: string,
  generation: number,
  staged: Staged[],
): string[] {
  const skipped: string[] = [];
  for (const c of candidates) {
    const why =
      c.why ??
      (c.generation === null || c.generation > generation
        ? 'written after the database copy'
        : null);
    if (why === null) staged.push(...c.taken);
    else {
      skipped.push(`${c.name} (${why})`);
      for (const t of c.taken) rmSync(join(stagingDir, t.path), { force: true });
    }
  }
  return skipped;
}

/** PostgreSQL with local storage: every file under `documents/`. */
function stageAllDocuments(config: Config, stagingDir: string): Staged[] {
  const root = join(config.dataDir, 'documents');
  if (!existsSync(root)) return [];
  const staged: Staged[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.endsWith('.tmp')) continue;
    const path = relative(config.dataDir, join(entry.parentPath, entry.name)).split('\\').join('/');
    if (safePath(path) && stage(stagingDir, join(config.dataDir, path), path)) {
      staged.push({ path, role: 'stored' });
    }
  }
  return staged;
}

/** Writes the archive of `config`'s data to `out`. */
export async function backup(
  config: Config,
  out: string,
  note: (line: string) => void,
): Promise<BackupResult> {
  const started = performance.now();
  const stagingDir = join(config.dataDir, 'tmp', scratchName('backup'));
  const temporary = `${out}.${process.pid}.tmp`;
  if (!existsSync(dirname(out))) throw new BackupError(`No directory ${dirname(out)} for ${out}`);
  try {
    let manifest: Omit<Manifest, 'files'>;
    let staged: Staged[];
    const base = { format: BACKUP_FORMAT, serverVersion: version, createdAt: '' };
    if (config.database.driver === 'sqlite') {
      const file = config.database.filename;
      if (!existsSync(file)) throw new BackupError(`No database at ${file}: nothing to back up.`);
      const copy = await copyDatabase(config, file, stagingDir, note);
      staged = copy.staged;
      const snapshotsSkipped = keepSnapshots(copy.snapshots, stagingDir, copy.generation, staged);
      manifest = {
        ...base,
        database: { kind: 'sqlite', migrations: copy.migrations, generation: copy.generation },
        storage: 'local',
        counts: copy.counts,
        dropped: copy.dropped,
        snapshotsSkipped,
      };
    } else {
      mkdirSync(stagingDir, { recursive: true, mode: 0o700 });
      staged = config.storage.driver === 'local' ? stageAllDocuments(config, stagingDir) : [];
      manifest = {
        ...base,
        database: { kind: 'postgres', migrations: null, generation: null },
        storage: config.storage.driver,
        counts: null,
        dropped: [],
        snapshotsSkipped: [],
      };
    }
    if (stage(stagingDir, join(config.dataDir, 'secrets.json'), 'secrets.json')) {
      staged.push({ path: 'secrets.json', role: 'secrets' });
    }
    const files: ManifestFile[] = [];
    for (const s of staged) files.push({ ...s, ...(await fileSha256(join(stagingDir, s.path))) });
    const full: Manifest = { ...manifest, createdAt: new Date().toISOString(), files };
    await writeFile(join(stagingDir, MANIFEST), JSON.stringify(full, null, 2) + '\n');
    const gzip = /\.(tar\.gz|tgz)$/.test(out) ? { level: GZIP_LEVEL } : false;
    await create(
      { file: temporary, cwd: stagingDir, gzip, portable: true, noDirRecurse: true, strict: true },
      [MANIFEST, ...files.map((f) => f.path)],
    );
    const handle = await open(temporary, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, out);
    const bytes = statSync(out).size;
    return { manifest: full, bytes, seconds: (performance.now() - started) / 1000 };
  } finally {
    await rm(temporary, { force: true });
    await rm(stagingDir, { recursive: true, force: true });
  }
}
