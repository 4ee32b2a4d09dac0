/** Named entries of a jar or wheel (zip archives) to files, with yauzl (a dependency already). */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';

/** Extracts `entries` (archive name → destination path); every one must be in the archive. */
export async function extractEntries(
  archive: string,
  entries: Readonly<Record<string, string>>,
): Promise<void> {
  const zip = await yauzl.openPromise(archive, { lazyEntries: true, autoClose: false });
  const left = new Map(Object.entries(entries));
  try {
    for await (const entry of zip.eachEntry()) {
      const dest = left.get(entry.fileName);
      if (dest === undefined) continue;
      left.delete(entry.fileName);
      await mkdir(dirname(dest), { recursive: true });
      await pipeline(await zip.openReadStreamPromise(entry), createWriteStream(dest));
      if (left.size === 0) break;
    }
  } finally {
    zip.close();
  }
  if (left.size > 0) throw new Error(`${archive} has no ${[...left.keys()].join(', ')}`);
}
