/**
 * The pre-read of the SQLite database file (file-preread.ts): the whole file is read, slice by
 * slice, only when it fits in half the available memory, and it stops when asked; the store
 * starts it once its indexes have loaded, and stops it when closed.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { prereadFile } from '../../../src/knowledge/search/sqlite/copies/file-preread.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { tempDir } from '../../helpers.js';
import { commitDocument } from '../helpers.js';

/** The reads made through file handles (`FileHandle.prototype.read`), as `[offset, length]`. */
async function spyReads(): Promise<{ reads: [number, number][]; onRead: (f: () => void) => void }> {
  const probe = await open(import.meta.filename, 'r');
  const prototype = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const reads: [number, number][] = [];
  let hook = () => {};
  const original = Reflect.get(prototype, 'read') as (
    ...a: unknown[]
  ) => ReturnType<FileHandle['read']>;
  vi.spyOn(prototype, 'read').mockImplementation(function (this: FileHandle, ...args: unknown[]) {
    reads.push([args[3] as number, args[2] as number]);
    hook();
    return original.apply(this, args);
  });
  return { reads, onRead: (f) => (hook = f) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('prereadFile', () => {
  const file = join(tempDir(), 'data.bin');
  const size = 10_500;
  writeFileSync(file, Buffer.alloc(size, 7));

  it('reads the whole file front to back, one slice at a time', async () => {
    const { reads } = await spyReads();
    const result = await prereadFile(file, { sliceBytes: 1000, available: () => 1e12 });
    expect(result).toMatchObject({ size, read: size, skipped: null });
    expect(reads.map(([offset]) => offset)).toEqual(Array.from({ length: 11 }, (_, i) => i * 1000));
  });

  it('reads nothing when the file is over half the available memory', async () => {
    const { reads } = await spyReads();
    expect(await prereadFile(file, { available: () => 2 * size - 1 })).toMatchObject({
      read: 0,
      skipped: 'too large',
    });
    expect(reads).toEqual([]);
    // At exactly half, it is read.
    expect(await prereadFile(file, { available: () => 2 * size })).toMatchObject({
      read: size,
      skipped: null,
    });
  });

  it('stops between two slices once its signal aborts', async () => {
    const { reads, onRead } = await spyReads();
    const stop = new AbortController();
    onRead(() => {
      if (reads.length === 3) stop.abort();
    });
    const result = await prereadFile(file, {
      sliceBytes: 1000,
      available: () => 1e12,
      signal: stop.signal,
    });
    expect(result).toMatchObject({ read: 3000, skipped: 'stopped' });
    expect(reads).toHaveLength(3);
  });
});

describe('the store pre-reads its database file', () => {
  const stores: { store: SqliteChunkStore; close: () => Promise<void> }[] = [];
  afterEach(async () => {
    for (const { store, close } of stores.splice(0)) {
      await store.close();
      await close();
    }
  });

  async function storeOf(preread: boolean) {
    const database = openSqlite(join(tempDir(), 'aps.sqlite'));
    expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
    const logs: { level: string; message: string; fields: object }[] = [];
    const store = new SqliteChunkStore(database.native, {
      preread: preread
        ? {
            log: {
              info: (fields, message) => logs.push({ level: 'info', message, fields }),
              warn: (fields, message) => logs.push({ level: 'warn', message, fields }),
            },
          }
        : null,
    });
    stores.push({ store, close: () => database.db.destroy() });
    await commitDocument(store, database.native, { model: 'm', dimensions: 4 }, (id) => [
      {
        id: randomUUID(),
        chunkIndex: 0,
        sectionPath: '',
        page: null,
        content: `alpha beta ${id}`,
        tokenEstimate: 3,
        metadata: {},
        contentHash: id,
        vector: Float32Array.from([1, 0, 0, 0]),
      },
    ]);
    return { store, logs, file: database.native.name };
  }

  it('after its indexes load, once, and reports the bytes read', async () => {
    const { reads } = await spyReads();
    const { store, logs, file } = await storeOf(true);
    await store.warm('m');
    await store.warm('m');
    await vi.waitFor(() => {
      expect(logs).toHaveLength(1);
    });
    const { size } = await (await open(file, 'r')).stat();
    expect(logs[0]).toMatchObject({
      level: 'info',
      message: 'database file pre-read into the page cache',
      fields: { bytes: size, fileBytes: size },
    });
    expect(reads.filter(([offset]) => offset === 0)).toHaveLength(1);
  });

  it('not without the option', async () => {
    const { reads } = await spyReads();
    const { store } = await storeOf(false);
    await store.warm('m');
    await new Promise((r) => setTimeout(r, 50));
    expect(reads).toEqual([]);
  });
});
