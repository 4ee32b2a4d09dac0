/**
 * PostgresStorage details beyond the behaviour shared with LocalStorage
 * (test/knowledge/storage/storage.test.ts): the chunk layout, atomic commits, damage detection, key checks, index use, collation and memory.
 * Runs only when TEST_DATABASE_URL is set.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readdirSync, rmSync } from 'node:fs';
import { appendFile, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PostgresDatabase } from '../../src/db/database.js';
import { CHUNK_BYTES, PostgresStorage } from '../../src/knowledge/storage/postgres-storage.js';
import { tempDir } from '../helpers.js';
import { migratedDatabase, openMigrated, TEST_DATABASE_URL } from './pg.js';

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
const tooLarge = () => new Error('too large');
const MiB = 1024 * 1024;

const scratchEntries = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

describe.skipIf(TEST_DATABASE_URL === undefined)('PostgresStorage', () => {
  const fresh = migratedDatabase(30_000);
  let database: PostgresDatabase;
  let pool: pg.Pool;
  let scratchDir: string;
  let storage: PostgresStorage;

  beforeAll(() => {
    ({ database } = fresh);
    pool = database.pool;
  });
  beforeEach(async () => {
    await pool.query('delete from aps_files');
    scratchDir = join(tempDir(), 'tmp');
    storage = new PostgresStorage(pool, scratchDir);
  });
  afterEach(() => {
    vi.restoreAllMocks();
    rmSync(scratchDir, { recursive: true, force: true });
  });

  async function counts(): Promise<{ files: number; chunks: number }> {
    const { rows } = await pool.query<{ files: string; chunks: string }>(
      `select (select count(*) from aps_files) as files,
              (select count(*) from aps_files_chunks) as chunks`,
    );
    return { files: Number(rows[0]?.files), chunks: Number(rows[0]?.chunks) };
  }

  it('stores a file as a header and ordered chunk rows of at most 1 MiB', async () => {
    const data = randomBytes(3 * MiB + MiB / 2);
    const pending = await storage.receive(Readable.from([data]), 10 * MiB, tooLarge);
    await pending.commit('documents/d1/source.pdf');
    const header = await pool.query<{ size: number; checksum: string }>(
      'select size, checksum from aps_files',
    );
    expect(header.rows).toEqual([{ size: data.length, checksum: sha256(data) }]);
    const chunks = await pool.query<{ seq: number; len: number }>(
      'select seq, length(data) as len from aps_files_chunks order by seq',
    );
    expect(chunks.rows.map((r) => r.seq)).toEqual([0, 1, 2, 3]);
    expect(chunks.rows.every((r) => r.len <= CHUNK_BYTES)).toBe(true);
    expect(chunks.rows.reduce((sum, r) => sum + r.len, 0)).toBe(data.length);

    await storage.removePrefix('documents/d1');
    expect(await counts()).toEqual({ files: 0, chunks: 0 }); // chunks go by cascade
  });

  it('never shows a half-written file: readers see nothing, then the whole file', async () => {
    const data = Buffer.alloc(24 * MiB, 'z');
    const pending = await storage.receive(Readable.from([data]), 100 * MiB, tooLarge);
    const progress = { committed: false }; // (an object: set in a callback, read in the loop)
    const commit = pending.commit('documents/d2/source.txt').then(() => {
      progress.committed = true;
    });
    let absent = 0;
    let whole = 0;
    for (;;) {
      const done = progress.committed;
      const text = await storage.readText('documents/d2/source.txt').catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        return undefined;
      });
      if (text === undefined) absent += 1;
      else {
        expect(text.length).toBe(data.length);
        whole += 1;
      }
      if (done) break;
    }
    await commit;
    expect(whole).toBeGreaterThan(0);
    expect(absent).toBeGreaterThan(0);
  }, 60_000);

  it('rolls back a commit whose temporary file changed, keeping the previous version', async () => {
    await storage.writeFile('documents/d3/source.txt', 'previous');
    const pending = await storage.receive(
      Readable.from([randomBytes(3 * MiB)]),
      10 * MiB,
      tooLarge,
    );
    await appendFile(pending.tempPath, 'tampered');
    await expect(pending.commit('documents/d3/source.txt')).rejects.toThrow(/changed/);
    expect(await storage.readText('documents/d3/source.txt')).toBe('previous');
    expect(await counts()).toEqual({ files: 1, chunks: 1 });
    await pending.discard();
    expect(scratchEntries(scratchDir)).toEqual([]);
  });

  it('detects a damaged file when copying it out, and leaves no temporary copy', async () => {
    await storage.writeFile('documents/d4/source.bin', randomBytes(2 * MiB + 10));
    await pool.query(`update aps_files_chunks set data = '\\x00'::bytea where seq = 1`);
    await expect(storage.withLocalFile('documents/d4/source.bin', readFile)).rejects.toThrow(
      /damaged/,
    );
    await pool.query('delete from aps_files_chunks where seq = 2');
    await expect(storage.withLocalFile('documents/d4/source.bin', readFile)).rejects.toThrow(
      /damaged/,
    );
    expect(scratchEntries(scratchDir)).toEqual([]);
  });

  it('reads files of whole chunks and with a partial last chunk', async () => {
    for (const size of [3 * CHUNK_BYTES, 4 * CHUNK_BYTES + 1]) {
      const data = randomBytes(size);
      await storage.writeFile('documents/d7/source.bin', data);
      const copied = await storage.withLocalFile('documents/d7/source.bin', async (path) =>
        sha256(await readFile(path)),
      );
      expect(copied, `${size} bytes`).toBe(sha256(data));
    }
    expect(scratchEntries(scratchDir)).toEqual([]);
  }, 60_000);

  it('keeps the connection usable when writing the local copy fails mid-stream', async () => {
    await storage.writeFile('documents/d8/source.bin', randomBytes(40 * MiB));
    const probe = await open(join(tempDir(), 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { write: (...args: unknown[]) => unknown };
    await probe.close();
    const original = proto.write;
    let writes = 0;
    const write = vi.spyOn(proto, 'write').mockImplementation(function (
      this: unknown,
      ...args: unknown[]
    ) {
      writes += 1;
      if (writes === 3) return Promise.reject(new Error('disk full'));
      return original.apply(this, args);
    });
    await expect(storage.withLocalFile('documents/d8/source.bin', readFile)).rejects.toThrow(
      'disk full',
    );
    write.mockRestore();
    expect(scratchEntries(scratchDir)).toEqual([]);
    // Every pooled connection still answers (a stuck read would hang here), the file is intact.
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => pool.query<{ one: number }>('select 1 as one')),
    );
    expect(answers.map((a) => a.rows[0]?.one)).toEqual(Array(10).fill(1));
    const size = await storage.withLocalFile(
      'documents/d8/source.bin',
      async (path) => (await readFile(path)).length,
    );
    expect(size).toBe(40 * MiB);
  }, 60_000);

  it('serializes concurrent writers of one key: one whole version wins', async () => {
    const key = 'documents/d5/document.v1.md';
    const a = 'a'.repeat(3 * MiB);
    const b = 'b'.repeat(2 * MiB + 7);
    await Promise.all([storage.writeFile(key, a), storage.writeFile(key, b)]);
    const text = await storage.readText(key);
    expect([a.length, b.length]).toContain(text.length);
    expect(text === a || text === b).toBe(true);
    expect((await counts()).chunks).toBe(3); // 3 MiB, or 2 MiB + 7 bytes: no stale rows
  });

  it('refuses every key that is not a plain relative path', async () => {
    const bad = ['', '/abs', '..', '../x', 'a/../b', 'a/..', 'a//b', 'a/./b', './a', 'a/', 'a\0b'];
    for (const key of bad) {
      await expect(storage.writeFile(key, 'x'), key).rejects.toThrow(/Invalid storage key/);
      await expect(storage.readText(key), key).rejects.toThrow(/Invalid storage key/);
      await expect(storage.list(key), key).rejects.toThrow(/Invalid storage key/);
      await expect(storage.removePrefix(key), key).rejects.toThrow(/Invalid storage key/);
    }
    expect(await counts()).toEqual({ files: 0, chunks: 0 });
  });

  it('lists and removes a prefix in one statement, on the primary key index', async () => {
    for (let i = 0; i < 20; i += 1) {
      await storage.writeFile(`documents/${String(i).padStart(2, '0')}/source.txt`, 'x');
      await storage.writeFile(`documents/${String(i).padStart(2, '0')}/document.v1.md`, 'x');
    }
    const query = vi.spyOn(pool, 'query');
    expect(await storage.list('documents')).toHaveLength(20);
    expect(query).toHaveBeenCalledTimes(1);
    query.mockClear();
    await storage.removePrefix('documents');
    expect(query).toHaveBeenCalledTimes(1);
    vi.restoreAllMocks();

    const client = await pool.connect();
    try {
      await client.query('set enable_seqscan = off'); // the table is tiny: ask what it could do
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `explain select key from aps_files where key >= $1 and key < $2`,
        ['documents/', 'documents0'],
      );
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toMatch(/Index.*aps_files_pkey/);
      expect(text).toMatch(/Index Cond/);
    } finally {
      await client.query('reset enable_seqscan');
      client.release();
    }
  });

  it('matches prefixes byte for byte in a database whose default collation is not C', async (ctx) => {
    const name = `${fresh.name}_icu`;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(
        `create database ${name} template template0 encoding 'UTF8'
         locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'`,
      );
    } catch (error) {
      await admin.end();
      ctx.skip(`no ICU collation on this server: ${(error as Error).message}`);
      return;
    }
    const url = new URL(fresh.url);
    url.pathname = `/${name}`;
    let icu: PostgresDatabase | undefined;
    try {
      icu = await openMigrated(url.toString(), 30_000);
      const s = new PostgresStorage(icu.pool, scratchDir);
      // Under en-US, "Documents/…" and "documents-…" sort between "documents/" and "documents0".
      const keys = [
        'documents/a/x',
        'Documents/b/x',
        'documents-c/x',
        'documents/é/x',
        'documentsd/x',
      ];
      for (const key of keys) await s.writeFile(key, key);
      expect(await s.list('documents')).toEqual(['a', 'é']);
      await s.removePrefix('documents');
      expect((await s.list('Documents')).concat(await s.list('documents-c'))).toEqual(['b', 'x']);
      expect(await s.readText('documentsd/x')).toBe('documentsd/x');
    } finally {
      await icu?.close();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  }, 60_000);

  it('commits and reads back a 200 MiB file in bounded memory', async () => {
    const size = 200 * MiB;
    const dir = tempDir();
    const source = join(dir, 'big.bin');
    const expected = createHash('sha256');
    await pipeline(
      Readable.from(
        (function* () {
          for (let at = 0; at < size; at += MiB) {
            const piece = randomBytes(MiB);
            expected.update(piece);
            yield piece;
          }
        })(),
      ),
      createWriteStream(source),
    );
    const checksum = expected.digest('hex');

    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const timings: Record<string, number> = {};
    const phasePeaks: Record<string, number> = {};
    let t = performance.now();
    try {
      const pending = await storage.receive(
        createReadStream(source, { highWaterMark: 64 * 1024 }),
        size,
        tooLarge,
      );
      timings.receiveMs = performance.now() - t;
      phasePeaks.receive = peak;
      expect(pending.checksum).toBe(checksum);
      t = performance.now();
      await pending.commit('documents/big/source.bin');
      timings.commitMs = performance.now() - t;
      phasePeaks.commit = peak;
      await pending.discard();

      t = performance.now();
      const copied = await storage.withLocalFile('documents/big/source.bin', async (path) => {
        timings.copyOutMs = performance.now() - t;
        phasePeaks.copyOut = peak;
        const hash = createHash('sha256');
        await pipeline(createReadStream(path), hash);
        return hash.digest('hex');
      });
      expect(copied).toBe(checksum);
    } finally {
      clearInterval(sampler);
      rmSync(dir, { recursive: true, force: true });
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const growthMiB = (peak - baseline) / MiB;
    console.log(
      `200 MiB file: peak RSS growth ${growthMiB.toFixed(1)} MiB (baseline ${(baseline / MiB).toFixed(0)} MiB); ` +
        Object.entries(timings)
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(', ') +
        '; peaks after ' +
        Object.entries(phasePeaks)
          .map(([k, v]) => `${k} +${((v - baseline) / MiB).toFixed(1)}`)
          .join(', '),
    );
    // Bounded means independent of the file's size: a reader that held the file would grow by
    // 200 MiB at least (400 as hex text). Below that, the growth is garbage the collector has not
    // reclaimed yet, which varies from run to run (8 to 60 MiB seen on one machine).
    expect(growthMiB).toBeLessThan(100);
    expect(scratchEntries(scratchDir)).toEqual([]);
    expect(await counts()).toEqual({ files: 1, chunks: 200 });
  }, 300_000);
});
