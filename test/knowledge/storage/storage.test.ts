/**
 * FileStorage behaviour shared by every driver: LocalStorage always, PostgresStorage too when
 * TEST_DATABASE_URL is set. Driver-specific details live in test/postgres/storage.test.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../../src/db/database.js';
import { LocalStorage } from '../../../src/knowledge/storage/local-storage.js';
import { PostgresStorage } from '../../../src/knowledge/storage/postgres-storage.js';
import type { FileStorage } from '../../../src/knowledge/storage/storage.js';
import { tempDir } from '../../helpers.js';
import {
  freshDatabase,
  openMigrated,
  TEST_DATABASE_URL,
  type FreshDatabase,
} from '../../postgres/pg.js';

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

class TooLarge extends Error {}
const tooLarge = () => new TooLarge('too large');

/** A readable that delivers `data` in pieces of `piece` bytes, as a multipart upload would. */
function upload(data: Buffer, piece = 64 * 1024): Readable {
  return Readable.from(
    (function* () {
      for (let at = 0; at < data.length; at += piece) yield data.subarray(at, at + piece);
    })(),
  );
}

interface Driver {
  name: string;
  /** A fresh, empty storage and its scratch directory. */
  create(): Promise<{ storage: FileStorage; scratchDir: string }>;
  teardown(): Promise<void>;
}

const local: Driver = {
  name: 'local',
  create() {
    const root = tempDir();
    const scratchDir = join(root, 'tmp');
    return Promise.resolve({ storage: new LocalStorage(root, scratchDir), scratchDir });
  },
  teardown: () => Promise.resolve(),
};

function postgres(): Driver {
  let fresh: FreshDatabase | undefined;
  let database: PostgresDatabase | undefined;
  return {
    name: 'postgres',
    async create() {
      if (database === undefined) {
        fresh = await freshDatabase();
        database = await openMigrated(fresh.url, 30_000);
      }
      // One database per file; each test starts from an empty table.
      await database.pool.query('delete from aps_files');
      const scratchDir = join(tempDir(), 'tmp');
      return { storage: new PostgresStorage(database.pool, scratchDir), scratchDir };
    },
    async teardown() {
      await database?.close();
      await fresh?.drop();
    },
  };
}

const drivers: Driver[] = [local, ...(TEST_DATABASE_URL === undefined ? [] : [postgres()])];

const scratchEntries = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

describe.each(drivers)('FileStorage ($name)', (driver) => {
  let storage: FileStorage;
  let scratchDir: string;
  beforeAll(async () => {
    await driver.create(); // connect and migrate once, outside the per-test timeout
  }, 60_000);
  afterAll(() => driver.teardown());
  beforeEach(async () => {
    ({ storage, scratchDir } = await driver.create());
  });
  afterEach(() => {
    rmSync(scratchDir, { recursive: true, force: true });
  });

  it('round-trips binary content through receive, commit and withLocalFile', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 12_345); // not a multiple of any chunk size
    const pending = await storage.receive(upload(data), data.length, tooLarge);
    expect(pending.size).toBe(data.length);
    expect(pending.checksum).toBe(sha256(data));
    // (toEqual on megabyte buffers is very slow: compare bytes with Buffer#equals instead.)
    expect(Buffer.from(pending.head).equals(data.subarray(0, 4100))).toBe(true);
    expect(sha256(await readFile(pending.tempPath))).toBe(sha256(data));

    const stored = await pending.commit('documents/d1/source.pdf');
    expect(stored).toEqual({
      key: 'documents/d1/source.pdf',
      size: data.length,
      checksum: sha256(data),
    });
    await pending.discard(); // after commit: a no-op that must not remove the stored file
    expect(scratchEntries(scratchDir)).toEqual([]);

    const seen = await storage.withLocalFile('documents/d1/source.pdf', async (path) => {
      expect(basename(path)).toBe('source.pdf'); // converters detect formats by extension
      return sha256(await readFile(path));
    });
    expect(seen).toBe(sha256(data));
    expect(scratchEntries(scratchDir)).toEqual([]);
  });

  it('keeps small and empty files byte for byte', async () => {
    const tiny = Buffer.from([0, 255, 1, 254, 0x0a, 0x0d, 0x00]);
    const pending = await storage.receive(upload(tiny), 100, tooLarge);
    expect(Buffer.from(pending.head)).toEqual(tiny);
    await pending.commit('documents/d2/source.bin');
    await pending.discard();
    await storage.withLocalFile('documents/d2/source.bin', async (path) => {
      expect(await readFile(path)).toEqual(tiny);
    });

    await storage.writeFile('documents/d2/empty.md', '');
    expect(await storage.readText('documents/d2/empty.md')).toBe('');
    await storage.withLocalFile('documents/d2/empty.md', async (path) => {
      expect((await readFile(path)).length).toBe(0);
    });
  });

  it('fails with tooLarge and leaves nothing behind', async () => {
    const data = randomBytes(300_000);
    await expect(storage.receive(upload(data, 10_000), 200_000, tooLarge)).rejects.toBeInstanceOf(
      TooLarge,
    );
    expect(scratchEntries(scratchDir)).toEqual([]);
    expect(await storage.list('documents')).toEqual([]);

    // Exactly the limit is fine.
    const exact = await storage.receive(upload(data), data.length, tooLarge);
    expect(exact.size).toBe(data.length);
    await exact.discard();
  });

  it('leaves nothing behind when the input has failed before receiving starts', async () => {
    // A multipart part whose request broke off arrives destroyed: pipeline() then rejects
    // before the scratch file is open, and a cleanup that does not wait for the open to finish
    // leaves an orphan (seen as a flaky upload test under CI load).
    // Many at once, so that opens and removals run side by side on libuv's thread pool.
    const attempts = Array.from({ length: 200 }, () => {
      const failed = new Readable({ read() {} });
      failed.on('error', () => undefined);
      failed.destroy(new Error('client went away'));
      return storage.receive(failed, 1e6, tooLarge).then(
        () => 'received',
        () => 'failed',
      );
    });
    expect(new Set(await Promise.all(attempts))).toEqual(new Set(['failed']));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(scratchEntries(scratchDir)).toEqual([]);
  });

  it('discard removes the received file, stores nothing, and is idempotent', async () => {
    const pending = await storage.receive(upload(randomBytes(50_000)), 1e6, tooLarge);
    expect(scratchEntries(scratchDir)).toHaveLength(1);
    await pending.discard();
    await pending.discard();
    expect(scratchEntries(scratchDir)).toEqual([]);
    expect(await storage.list('documents')).toEqual([]);
  });

  it('writeFile replaces a file atomically and readText reads it back', async () => {
    const key = 'documents/d3/document.v1.md';
    await storage.writeFile(key, 'first version — with UTF-8 ✓');
    expect(await storage.readText(key)).toBe('first version — with UTF-8 ✓');
    await storage.writeFile(key, new TextEncoder().encode('second'));
    expect(await storage.readText(key)).toBe('second');

    // A large file replaced by a small one (and back) leaves no trace of the other version.
    const big = 'x'.repeat(2.5 * 1024 * 1024);
    await storage.writeFile(key, big);
    expect(await storage.readText(key)).toBe(big);
    await storage.writeFile(key, 'short');
    expect(await storage.readText(key)).toBe('short');
    expect(await storage.list('documents/d3')).toEqual(['document.v1.md']);
  });

  it('readers see the old or the new file during a replacement, never a mix', async () => {
    const key = 'documents/d4/document.v1.md';
    const size = 3 * 1024 * 1024;
    await storage.writeFile(key, 'a'.repeat(size));
    const progress = { writing: true }; // (an object: set in a closure, read in the loop)
    const writes = (async () => {
      for (const letter of ['b', 'c', 'd']) await storage.writeFile(key, letter.repeat(size));
      progress.writing = false;
    })();
    const seen = new Set<string>();
    while (progress.writing) {
      const text = await storage.readText(key);
      expect(text.length).toBe(size);
      const first = text[0] ?? '';
      expect(text).toBe(first.repeat(size));
      seen.add(first);
    }
    await writes;
    expect(await storage.readText(key)).toBe('d'.repeat(size));
    expect(seen.size).toBeGreaterThan(0);
  });

  it('lists the names directly under a prefix and removes prefixes like directories', async () => {
    const keys = [
      'documents/a/source.pdf',
      'documents/a/document.v1.md',
      'documents/ab/source.txt',
      'documents/a_/source.txt',
      'documents/a%/source.txt',
      'documents/b/nested/deep.bin',
      'documentsX/y/source.txt',
      'other/z/source.txt',
    ];
    for (const key of keys) await storage.writeFile(key, key);

    const sorted = async (prefix: string) => (await storage.list(prefix)).sort();
    expect(await sorted('documents')).toEqual(['a', 'a%', 'a_', 'ab', 'b']);
    expect(await sorted('documents/a')).toEqual(['document.v1.md', 'source.pdf']);
    expect(await sorted('documents/b')).toEqual(['nested']);
    expect(await sorted('documents/b/nested')).toEqual(['deep.bin']);
    expect(await sorted('missing')).toEqual([]);
    expect(await sorted('documents/missing')).toEqual([]);

    await storage.removePrefix('documents/a');
    expect(await sorted('documents')).toEqual(['a%', 'a_', 'ab', 'b']);
    await storage.removePrefix('documents/a_'); // not a pattern: "a%" and "ab" stay
    expect(await sorted('documents')).toEqual(['a%', 'ab', 'b']);
    await storage.removePrefix('documents/missing'); // a missing prefix is fine
    await storage.removePrefix('documents/b');
    expect(await sorted('documents')).toEqual(['a%', 'ab']);
    expect(await storage.readText('documents/ab/source.txt')).toBe('documents/ab/source.txt');
    expect(await storage.readText('documentsX/y/source.txt')).toBe('documentsX/y/source.txt');

    await storage.removePrefix('documents');
    expect(await sorted('documents')).toEqual([]);
    expect(await sorted('documentsX')).toEqual(['y']);
    expect(await sorted('other')).toEqual(['z']);
  });

  it('remove deletes one file; a missing file is fine; reading it then fails with ENOENT', async () => {
    await storage.writeFile('documents/d5/a.md', 'a');
    await storage.writeFile('documents/d5/b.md', 'b');
    await storage.remove('documents/d5/a.md');
    await storage.remove('documents/d5/a.md');
    await storage.remove('documents/never/there.md');
    expect(await storage.list('documents/d5')).toEqual(['b.md']);
    await expect(storage.readText('documents/d5/a.md')).rejects.toMatchObject({ code: 'ENOENT' });
    // (LocalStorage hands fn the path of the missing file, where fn's own read fails.)
    await expect(
      storage.withLocalFile('documents/d5/a.md', (path) => readFile(path)),
    ).rejects.toMatchObject({ code: 'ENOENT' });
    expect(scratchEntries(scratchDir)).toEqual([]);
  });

  it('withLocalFile cleans up even when fn throws, and leaves the stored file alone', async () => {
    await storage.writeFile('documents/d6/source.html', '<p>hello</p>');
    let seenPath = '';
    await expect(
      storage.withLocalFile('documents/d6/source.html', async (path) => {
        seenPath = path;
        expect(await readFile(path, 'utf8')).toBe('<p>hello</p>');
        throw new Error('converter failed');
      }),
    ).rejects.toThrow('converter failed');
    expect(seenPath).not.toBe('');
    expect(scratchEntries(scratchDir)).toEqual([]);
    expect(await storage.readText('documents/d6/source.html')).toBe('<p>hello</p>');
  });

  it('refuses keys that are empty, absolute or escape upwards', async () => {
    for (const key of ['', '/etc/passwd', '../outside', '../../etc/passwd']) {
      const attempt = (fn: () => Promise<unknown>) =>
        expect((async () => fn())()).rejects.toThrow();
      await attempt(() => storage.writeFile(key, 'x'));
      await attempt(() => storage.readText(key));
      await attempt(() => storage.remove(key));
      await attempt(() => storage.removePrefix(key));
      await attempt(() => storage.list(key));
      await attempt(() => storage.withLocalFile(key, () => Promise.resolve()));
      const pending = await storage.receive(upload(Buffer.from('x')), 10, tooLarge);
      await attempt(() => pending.commit(key));
      await pending.discard();
    }
    expect(scratchEntries(scratchDir)).toEqual([]);
  });
});
