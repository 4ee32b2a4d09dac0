/**
 * FileStorage on a local directory (which may be a shared volume).
 *
 * Directory creation, renames and small writes are synchronous: each takes microseconds on a
 * disk, while its promise version costs a thread-pool round trip (~0.2-0.3 ms of CPU measured on
 * a 2-core machine), which was a good part of what a small document costs to ingest. Large
 * writes stay asynchronous, so they never hold the event loop.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { receivePending } from './receive.js';
import type { FileStorage, PendingFile } from './storage.js';

/** Writes up to this size are synchronous (see above). */
const SYNC_WRITE_BYTES = 256 * 1024;

export class LocalStorage implements FileStorage {
  private readonly tmpDir: string;

  /** `root` holds the files; `scratchDir` the uploads still being received. */
  constructor(
    private readonly root: string,
    scratchDir: string,
  ) {
    this.tmpDir = scratchDir;
  }

  withLocalFile<T>(key: string, fn: (path: string) => Promise<T>): Promise<T> {
    return fn(this.localPath(key));
  }

  /** Resolves a key inside the root; anything that would escape it is a programming error. */
  private localPath(key: string): string {
    const path = resolve(this.root, key);
    const rel = relative(this.root, path);
    if (key === '' || rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw new Error(`Storage key escapes the data directory: ${key}`);
    }
    return path;
  }

  receive(input: Readable, maxBytes: number, tooLarge: () => Error): Promise<PendingFile> {
    return receivePending(this.tmpDir, input, maxBytes, tooLarge, async ({ tempPath }, key) => {
      const target = this.localPath(key);
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
      renameSync(tempPath, target);
      return Promise.resolve();
    });
  }

  async writeFile(key: string, data: string | Uint8Array): Promise<void> {
    const target = this.localPath(key);
    const temp = `${target}.${randomUUID()}.tmp`;
    // A string's UTF-8 size is at most three bytes per character.
    const small =
      (typeof data === 'string' ? data.length * 3 : data.byteLength) <= SYNC_WRITE_BYTES;
    try {
      if (small) {
        mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
        writeFileSync(temp, data, { mode: 0o600 });
        renameSync(temp, target);
      } else {
        await mkdir(dirname(target), { recursive: true, mode: 0o700 });
        await writeFile(temp, data, { mode: 0o600 });
        await rename(temp, target);
      }
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }

  readText(key: string): Promise<string> {
    return readFile(this.localPath(key), 'utf8');
  }

  remove(key: string): Promise<void> {
    rmSync(this.localPath(key), { force: true }); // one file: an unlink
    return Promise.resolve();
  }

  async removePrefix(prefix: string): Promise<void> {
    await rm(this.localPath(prefix), { recursive: true, force: true });
  }

  async list(prefix: string): Promise<string[]> {
    try {
      return await readdir(this.localPath(prefix));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }
}
