/**
 * `aps restore FILE --data-dir DIR`: an archive of `aps backup` into a data directory.
 *
 * Nothing reaches DIR before the whole archive is verified: entries are extracted into a fresh
 * directory beside DIR (in its parent: same filesystem, so the move is a rename), each checked on
 * the way — `manifest.json` first, then only regular files, each at a path the manifest lists
 * (relative, no `..`, no link, device or directory entry), once, with the manifest's size and
 * sha256 — and only once every listed file has arrived intact does the directory move into place
 * (with `--force`, replacing what DIR held). A truncated, altered or foreign archive is refused
 * with one line and the extraction removed. Last, the restored search snapshots are given the
 * identity of the restored database file (they would otherwise be taken for another database's
 * and rebuilt); one that cannot be is removed, and the server rebuilds it from the tables.
 */
import { createHash } from 'node:crypto';
import {
  cpSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  type WriteStream,
} from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { Parser, type ReadEntry } from 'tar';
import { patchSnapshotMeta } from '../knowledge/search/sqlite/copies/snapshot-file.js';
import {
  BackupError,
  MANIFEST,
  parseManifest,
  safePath,
  type Manifest,
  type ManifestFile,
} from './backup-manifest.js';

/** A manifest larger than this is not one of ours. */
const MANIFEST_MAX_BYTES = 64 << 20;

export interface RestoreResult {
  manifest: Manifest;
  target: string;
  bytes: number;
  seconds: number;
  /** Snapshots that could not be adopted (removed: rebuilt at start). */
  snapshotsDropped: number;
}

/** One file being written from its entry. */
interface Writing {
  path: string;
  ended: boolean;
  closed: Promise<void>;
  stream: WriteStream;
}

/**
 * Extracts `file` into `dir`, verifying as it goes; the manifest, or a BackupError saying why
 * the archive is refused.
 */
async function extractVerified(file: string, dir: string): Promise<Manifest> {
  const expected = new Map<string, ManifestFile>();
  const writing: Writing[] = [];
  const source = createReadStream(file, { highWaterMark: 1 << 20 });
  // Set from the parser's callbacks (an object: TypeScript does not narrow it to null here).
  const state: { failure: Error | null; manifest: Manifest | null } = {
    failure: null,
    manifest: null,
  };
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolveDone) => (finish = resolveDone));
  const fail = (error: Error) => {
    state.failure ??= error;
    source.destroy();
    finish();
  };

  const readManifest = (entry: ReadEntry) => {
    if (entry.path !== MANIFEST) {
      fail(new BackupError(`its first entry is ${entry.path}, not manifest.json`));
      return;
    }
    if (entry.size > MANIFEST_MAX_BYTES) {
      fail(new BackupError('manifest.json is too large'));
      return;
    }
    const parts: Buffer[] = [];
    entry.on('data', (chunk: Buffer) => parts.push(chunk));
    entry.on('end', () => {
      try {
        const manifest = parseManifest(Buffer.concat(parts).toString('utf8'));
        for (const f of manifest.files) expected.set(f.path, f);
        state.manifest = manifest;
      } catch (error) {
        fail(error as Error);
      }
    });
  };

  const writeEntry = (entry: ReadEntry) => {
    const path = entry.path;
    const listed = safePath(path) ? expected.get(path) : undefined;
    if (listed === undefined) {
      const why = safePath(path) ? 'is not listed in the manifest' : 'has an unsafe path';
      fail(new BackupError(`entry ${JSON.stringify(path)} ${why}`));
      return;
    }
    expected.delete(path);
    if (entry.size !== listed.size) {
      fail(new BackupError(`${path} has ${entry.size} bytes, the manifest says ${listed.size}`));
      return;
    }
    mkdirSync(dirname(join(dir, path)), { recursive: true, mode: 0o700 });
    const stream = createWriteStream(join(dir, path), { mode: 0o600 });
    const closed = new Promise<void>((resolveClose, reject) => {
      stream.on('close', resolveClose);
      stream.on('error', reject);
    });
    const current: Writing = { path, ended: false, closed, stream };
    writing.push(current);
    const hash = createHash('sha256');
    let bytes = 0;
    entry.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.byteLength;
      if (!stream.write(chunk)) {
        entry.pause();
        stream.once('drain', () => {
          entry.resume();
        });
      }
    });
    entry.on('end', () => {
      current.ended = true;
      stream.end();
      if (bytes !== listed.size || hash.digest('hex') !== listed.sha256) {
        fail(new BackupError(`${path} does not match its checksum in the manifest`));
      }
    });
  };

  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      if (state.failure !== null) entry.resume();
      else if (entry.type !== 'File' && entry.type !== 'OldFile') {
        fail(new BackupError(`entry ${JSON.stringify(entry.path)} is a ${entry.type}`));
        entry.resume();
      } else if (state.manifest === null) readManifest(entry);
      else writeEntry(entry);
      if (state.failure !== null) entry.resume();
    },
  });
  parser.on('error', (error: Error) => {
    fail(new BackupError(`it is truncated or not a tar archive (${error.message})`));
  });
  parser.on('end', finish);
  source.on('error', (error) => {
    fail(error);
  });
  source.pipe(parser);
  await done;
  for (const w of writing) if (!w.ended) w.stream.destroy();
  await Promise.allSettled(writing.map((w) => w.closed));
  if (state.failure !== null) throw state.failure;
  const manifest = state.manifest;
  if (manifest === null) throw new BackupError('it holds no manifest.json: not an aps backup');
  if (writing.some((w) => !w.ended) || expected.size > 0) {
    const missing = [...expected.keys()].slice(0, 3).join(', ');
    throw new BackupError(`it is truncated: ${expected.size} listed files missing (${missing}…)`);
  }
  for (const w of writing) await w.closed;
  return manifest;
}

/** Moves the verified extraction to `target` (replacing its content when `occupied`). */
function moveIntoPlace(extracted: string, target: string, occupied: boolean): void {
  try {
    if (occupied) {
      const old = join(dirname(target), `.${basename(target)}.replaced-${process.pid}`);
      renameSync(target, old);
      renameSync(extracted, target);
      rmSync(old, { recursive: true, force: true });
      return;
    }
    if (existsSync(target)) rmdirSync(target);
    renameSync(extracted, target);
  } catch (error) {
    // A mount point cannot be renamed or removed: its content is replaced instead.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EBUSY' && code !== 'EXDEV' && code !== 'EPERM') throw error;
    mkdirSync(target, { recursive: true, mode: 0o700 });
    for (const name of readdirSync(target)) {
      rmSync(join(target, name), { recursive: true, force: true });
    }
    cpSync(extracted, target, { recursive: true });
    rmSync(extracted, { recursive: true, force: true });
  }
}

/** Gives the restored snapshots the restored database's identity; the count of those removed. */
async function adoptSnapshots(target: string, manifest: Manifest): Promise<number> {
  const database = manifest.files.find((f) => f.role === 'database');
  if (database === undefined) return 0;
  const s = statSync(join(target, database.path));
  let dropped = 0;
  for (const f of manifest.files) {
    if (f.role !== 'snapshot' || !f.path.endsWith('.snapshot')) continue;
    const path = join(target, f.path);
    try {
      await patchSnapshotMeta(path, { database: `${s.dev}:${s.ino}` });
    } catch {
      rmSync(path, { force: true });
      dropped++;
    }
  }
  return dropped;
}

/** Restores the archive `file` into the data directory `dataDir`. */
export async function restore(
  file: string,
  dataDir: string,
  force: boolean,
): Promise<RestoreResult> {
  const started = performance.now();
  const target = resolve(dataDir);
  if (!existsSync(file) || !statSync(file).isFile()) throw new BackupError(`No archive at ${file}`);
  const occupied = existsSync(target) && readdirSync(target).length > 0;
  if (occupied && !force) {
    throw new BackupError(
      `${target} is not empty: restore into an empty or new directory, or add --force to replace its content`,
    );
  }
  if (occupied && !relative(target, resolve(file)).startsWith('..')) {
    throw new BackupError(`${file} is inside ${target}, whose content --force would replace`);
  }
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  const extracted = mkdtempSync(join(dirname(target), `.${basename(target)}.restore-`));
  let manifest: Manifest;
  try {
    manifest = await extractVerified(file, extracted);
  } catch (error) {
    rmSync(extracted, { recursive: true, force: true });
    if (!(error instanceof BackupError)) throw error;
    throw new BackupError(`Refused ${file}: ${error.message}. Nothing was written to ${target}.`);
  }
  moveIntoPlace(extracted, target, occupied);
  const snapshotsDropped = await adoptSnapshots(target, manifest);
  const bytes = manifest.files.reduce((sum, f) => sum + f.size, 0);
  return {
    manifest,
    target,
    bytes,
    seconds: (performance.now() - started) / 1000,
    snapshotsDropped,
  };
}
