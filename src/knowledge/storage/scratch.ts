/**
 * The scratch directory (`DATA_DIR/tmp`): uploads being received and converter output, on local
 * disk. Several processes may share it (a server and `aps reindex`, or instances on one volume),
 * so start-up removes only entries nobody has written to for a while.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Entries untouched this long are left over from a crash. */
const SCRATCH_MAX_AGE_MS = 6 * 3600 * 1000;

export async function sweepScratch(dir: string, maxAgeMs = SCRATCH_MAX_AGE_MS): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let removed = 0;
  const cutoff = Date.now() - maxAgeMs;
  for (const name of names) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info === null || info.mtimeMs > cutoff) continue;
    await rm(path, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}
