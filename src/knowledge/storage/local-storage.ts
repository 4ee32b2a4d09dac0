/** FileStorage on a local directory (which may be a shared volume). */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { receivePending } from './receive.js';
import type { FileStorage, PendingFile } from './storage.js';

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
      await mkdir(dirname(target), { recursive: true, mode: 0o700 });
      await rename(tempPath, target);
    });
  }

  async writeFile(key: string, data: string | Uint8Array): Promise<void> {
    const target = this.localPath(key);
    await mkdir(dirname(target), { recursive: true, mode: 0o700 });
    const temp = `${target}.${randomUUID()}.tmp`;
    try {
      await writeFile(temp, data, { mode: 0o600 });
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  readText(key: string): Promise<string> {
    return readFile(this.localPath(key), 'utf8');
  }

  async remove(key: string): Promise<void> {
    await rm(this.localPath(key), { force: true });
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
