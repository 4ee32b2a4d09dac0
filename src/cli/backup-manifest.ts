/**
 * What `aps backup` writes and `aps restore` trusts: the archive's `manifest.json` (its first
 * entry), the rules a path in it must keep, and the checksums of its files.
 *
 * Every path in an archive is the file's path relative to the data directory it is restored into
 * (`aps.sqlite`, `search-snapshots/…`, `documents/<id>/source.pdf`, `secrets.json`), so a restore
 * maps entries to files one to one, and only paths the manifest lists are accepted.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

/** Bumped when the archive layout changes; a restore refuses a format it does not know. */
export const BACKUP_FORMAT = 1;
export const MANIFEST = 'manifest.json';

/** A refusal or failure of backup / restore, told to the user as one line. */
export class BackupError extends Error {}

/** Why a file is in the archive. */
export type FileRole = 'database' | 'snapshot' | 'stored' | 'secrets';
const ROLES: readonly FileRole[] = ['database', 'snapshot', 'stored', 'secrets'];

export interface ManifestFile {
  path: string;
  role: FileRole;
  size: number;
  /** hex */
  sha256: string;
}

export interface Manifest {
  format: number;
  /** The `aps` version that wrote it. */
  serverVersion: string;
  createdAt: string;
  database: {
    kind: 'sqlite' | 'postgres';
    /** SQLite: the migrations applied in the copy (PostgreSQL: null, the dump holds them). */
    migrations: string[] | null;
    /** SQLite: the chunk generation of the copy (what its search snapshots are checked against). */
    generation: number | null;
  };
  /** Where the stored files live: in the archive (`local`) or in the database dump (`postgres`). */
  storage: 'local' | 'postgres';
  /** SQLite: visible documents and their current chunks in the copy; PostgreSQL: null. */
  counts: { documents: number; chunks: number } | null;
  /**
   * Documents whose stored files vanished between the database copy and the file copy (deleted
   * meanwhile by the running server): hidden in the copy, purged by the restored server at start.
   */
  dropped: { documentId: string; missing: string[] }[];
  /** Search snapshots left out (written after the copy, of another database, unreadable). */
  snapshotsSkipped: string[];
  files: ManifestFile[];
}

/**
 * Whether `path` may be written under a data directory: relative, `/`-separated, no `.`, `..` or
 * empty segment, no backslash, drive letter or control character, and not the manifest itself.
 */
export function safePath(path: string): boolean {
  if (path === '' || path.length > 1000 || path === MANIFEST) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\\\u0000-\u001f]/.test(path) || path.startsWith('/') || /^[A-Za-z]:/.test(path)) {
    return false;
  }
  return path.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Parses and checks a manifest; throws BackupError naming what is wrong. */
export function parseManifest(text: string): Manifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BackupError('manifest.json is not valid JSON');
  }
  if (!isObject(value) || typeof value.format !== 'number') {
    throw new BackupError('manifest.json has no format version');
  }
  if (value.format > BACKUP_FORMAT) {
    throw new BackupError(
      `the archive has format ${value.format}, made by a newer aps (this one reads ${BACKUP_FORMAT})`,
    );
  }
  if (value.format !== BACKUP_FORMAT) {
    throw new BackupError(`unknown archive format ${value.format}`);
  }
  const database = value.database;
  if (!isObject(database) || (database.kind !== 'sqlite' && database.kind !== 'postgres')) {
    throw new BackupError('manifest.json: unknown database kind');
  }
  if (!Array.isArray(value.files)) throw new BackupError('manifest.json lists no files');
  const seen = new Set<string>();
  for (const file of value.files as unknown[]) {
    if (
      !isObject(file) ||
      typeof file.path !== 'string' ||
      !ROLES.includes(file.role as FileRole) ||
      !Number.isSafeInteger(file.size) ||
      (file.size as number) < 0 ||
      typeof file.sha256 !== 'string' ||
      !/^[0-9a-f]{64}$/.test(file.sha256)
    ) {
      throw new BackupError('manifest.json: a file entry is malformed');
    }
    if (!safePath(file.path)) {
      throw new BackupError(`manifest.json: unsafe path ${JSON.stringify(file.path)}`);
    }
    if (seen.has(file.path)) throw new BackupError(`manifest.json lists ${file.path} twice`);
    seen.add(file.path);
  }
  const files = value.files as ManifestFile[];
  if (database.kind === 'sqlite' && !files.some((f) => f.role === 'database')) {
    throw new BackupError('manifest.json: a SQLite archive without its database');
  }
  return value as unknown as Manifest;
}

/** The sha256 (hex) and size of a file, read as a stream. */
export async function fileSha256(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).byteLength;
  }
  return { sha256: hash.digest('hex'), size };
}

/** `12.3 MB`. */
export function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
