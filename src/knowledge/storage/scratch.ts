/**
 * The scratch directory (`DATA_DIR/tmp`): uploads being received and converter output, on local
 * disk. Several processes may share it (a server and `aps reindex`; instances on one volume), so
 * each entry is named after its owner: kind, process id, a hash of the host name. At start-up an
 * entry is removed when its owner is gone (same host, process not running), when it has no owner
 * and the data directory belongs to one host (SQLite), or when nobody has written to it for hours.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** Entries untouched this long are left over from a crash, whoever made them. */
const SCRATCH_MAX_AGE_MS = 6 * 3600 * 1000;

const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const OWNED = /^[a-z]+-p(\d+)-h([0-9a-f]{8})-/;

/** A fresh scratch entry name, e.g. `upload-p1234-h1a2b3c4d-<uuid>`. */
export function scratchName(kind: 'upload' | 'file' | 'convert' | 'backup'): string {
  return `${kind}-p${process.pid}-h${HOST}-${randomUUID()}`;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether an entry may still belong to a live process. */
function mayBeLive(name: string, singleHost: boolean): boolean {
  const owner = OWNED.exec(name);
  if (owner === null) return !singleHost;
  if (owner[2] !== HOST) return true;
  return isRunning(Number(owner[1]));
}

export interface SweepOptions {
  /** True when no other host can share the directory (SQLite): unowned entries go at once. */
  singleHost: boolean;
  maxAgeMs?: number;
}

/** Removes left-over scratch entries; returns how many. */
export async function sweepScratch(dir: string, options: SweepOptions): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let removed = 0;
  const cutoff = Date.now() - (options.maxAgeMs ?? SCRATCH_MAX_AGE_MS);
  for (const name of names) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info === null) continue;
    if (info.mtimeMs > cutoff && mayBeLive(name, options.singleHost)) continue;
    await rm(path, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}
