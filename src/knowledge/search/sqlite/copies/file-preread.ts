/**
 * The database file read once, front to back, in the background after the in-process copies
 * load: the operating system then holds its pages in its cache, as PostgreSQL's `pg_prewarm` does
 * for its buffers.
 *
 * A search reads from the file what the in-process copies do not hold: its answer's rows and
 * the exact vectors of its candidates, a few dozen pages scattered over the file. After a reboot
 * (or once the cache has dropped them) each is a disk read: at 1M chunks, ~2.7 ms of a hybrid
 * search's 13–14 in process (docs/performance.md), until months of searches have read the whole
 * file. One sequential read of it takes seconds.
 *
 * Only when the file fits in half the memory the system could give the cache (MemAvailable on
 * Linux, `os.freemem()`): on a small machine, a large file would only push out what other
 * programs use. The reads go one at a time, in slices, so a search's own reads wait for at most
 * one slice, and nothing here holds the event loop (the thread pool reads).
 */
import { open } from 'node:fs/promises';
import { freemem } from 'node:os';

/** Bytes per read. */
const SLICE_BYTES = 4 << 20;

export interface PrereadOptions {
  /** Stops the reading between two slices (the store closing). */
  signal?: AbortSignal;
  /** Bytes the system could give its cache (default `os.freemem()`). */
  available?: () => number;
  sliceBytes?: number;
}

/** What a pre-read did: the file's size, the bytes read, and why it stopped short, if it did. */
export interface PrereadResult {
  size: number;
  read: number;
  ms: number;
  /** `too large`: the file is over half the available memory; `stopped`: the signal aborted. */
  skipped: 'too large' | 'stopped' | null;
}

/** Reads `file` through the operating system's cache (see above); the bytes are dropped. */
export async function prereadFile(
  file: string,
  options: PrereadOptions = {},
): Promise<PrereadResult> {
  const start = performance.now();
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const result = (read: number, skipped: PrereadResult['skipped']): PrereadResult => ({
      size,
      read,
      ms: Math.round(performance.now() - start),
      skipped,
    });
    if (size > (options.available ?? freemem)() / 2) return result(0, 'too large');
    const buffer = Buffer.allocUnsafe(Math.min(options.sliceBytes ?? SLICE_BYTES, size || 1));
    let read = 0;
    while (read < size) {
      if (options.signal?.aborted === true) return result(read, 'stopped');
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, read);
      // The file shrank under us (a checkpoint truncating it): what is left is read.
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return result(read, null);
  } finally {
    await handle.close();
  }
}
