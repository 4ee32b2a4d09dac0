/**
 * Receiving an upload, for every storage driver: streamed to a temporary file in the scratch
 * directory, hashed on the way, refused as soon as it grows past the limit.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PendingFile } from './storage.js';
import { scratchName } from './scratch.js';
import { SpillFile } from './spill-file.js';

/** Bytes kept from the start of an upload, for content sniffing. */
const HEAD_BYTES = 4100;
/** An upload up to this size is held in memory and written at its end (spill-file.ts). */
const MEMORY_BYTES = 64 * 1024;

export interface Received {
  tempPath: string;
  size: number;
  /** sha256, hex. */
  checksum: string;
  head: Buffer;
}

/** Streams `input` into a new temporary file in `dir`; nothing is left behind on failure. */
async function receiveToScratch(
  dir: string,
  input: Readable,
  maxBytes: number,
  tooLarge: () => Error,
): Promise<Received> {
  // A multipart part whose request broke off arrives destroyed: there is nothing to receive.
  if (input.destroyed) throw input.errored ?? new Error('The upload ended before its file arrived');
  mkdirSync(dir, { recursive: true, mode: 0o700 }); // see local-storage.ts: microseconds
  const tempPath = join(dir, scratchName('upload'));
  const hash = createHash('sha256');
  let size = 0;
  const head: Buffer[] = [];
  let headSize = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > maxBytes) {
        done(tooLarge());
        return;
      }
      hash.update(chunk);
      if (headSize < HEAD_BYTES) {
        head.push(chunk.subarray(0, HEAD_BYTES - headSize));
        headSize += Math.min(chunk.length, HEAD_BYTES - headSize);
      }
      done(null, chunk);
    },
  });
  const output = new SpillFile(tempPath, MEMORY_BYTES);
  try {
    await pipeline(input, meter, output);
  } catch (error) {
    // pipeline() can reject before the file is even open (the input failed meanwhile): wait
    // for the open and the close, or the removal races the open and leaves an orphan.
    if (!output.closed)
      await new Promise<void>((resolve) =>
        output.once('close', () => {
          resolve();
        }),
      );
    await rm(tempPath, { force: true });
    throw error;
  }
  return { tempPath, size, checksum: hash.digest('hex'), head: Buffer.concat(head) };
}

/**
 * Receives an upload into `dir` (receiveToScratch) as a PendingFile: `commit` hands the temporary
 * file to `place` (the driver's move into storage) once; `discard` deletes it, idempotent.
 */
export async function receivePending(
  dir: string,
  input: Readable,
  maxBytes: number,
  tooLarge: () => Error,
  place: (received: Received, key: string) => Promise<void>,
): Promise<PendingFile> {
  const received = await receiveToScratch(dir, input, maxBytes, tooLarge);
  const { tempPath, size, checksum, head } = received;
  let settled = false;
  return {
    size,
    checksum,
    head,
    tempPath,
    commit: async (key: string) => {
      if (settled) throw new Error('The received file was already committed or discarded');
      await place(received, key);
      settled = true;
      return { key, size, checksum };
    },
    discard: async () => {
      if (!settled) await rm(tempPath, { force: true });
      settled = true;
    },
  };
}
