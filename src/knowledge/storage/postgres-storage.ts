/**
 * FileStorage in PostgreSQL (STORAGE_DRIVER=postgres), so server instances need no shared disk.
 *
 * A file is a header row in `aps_files` (key, size, sha256) and its content in `aps_files_chunks`
 * as rows of at most 1 MiB, numbered from 0 (migration 0005). Whatever the file size, memory stays
 * bounded: uploads are streamed to a temporary file in the scratch directory first (as on local
 * storage), `commit` streams that file into the table one chunk per INSERT (a binary parameter:
 * no encoding), and `withLocalFile` streams the chunks out to a temporary file.
 *
 * Reading fetches one chunk per statement (node-postgres receives a bytea as hex text twice its
 * size and decodes it into a Buffer), so each statement stays well inside the statement timeout
 * and memory stays bounded by a few chunks plus what the garbage collector has not reclaimed yet.
 *
 * Atomicity comes from ordinary transactions: a file is written (header upserted, old chunks
 * deleted, new chunks inserted) in one transaction, so readers see the old file or the whole new
 * one, never a half-written one; a file is read in one REPEATABLE READ snapshot, so a concurrent
 * replacement cannot mix two versions. Removal deletes header rows; their chunks go by cascade.
 *
 * Chunk rows were preferred to large objects: they are plain rows (covered by transactions,
 * `on delete cascade`, pg_dump and ordinary privileges), whereas a large object outlives the row
 * that references it unless every path remembers `lo_unlink` (or vacuumlo runs), and has its own
 * ownership and privilege rules.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import type pg from 'pg';
import { withTransaction } from '../../db/postgres.js';
import { receivePending } from './receive.js';
import type { FileStorage, PendingFile } from './storage.js';
import { scratchName } from './scratch.js';

/** Bytes per row of `aps_files_chunks`: also what one INSERT or SELECT holds in memory. */
export const CHUNK_BYTES = 1024 * 1024;

/**
 * Keys are chosen by the server, never by a client; still, refuse anything that is not a plain
 * relative path (defence in depth, and one spelling per key so prefixes match exactly).
 */
function checkKey(key: string): string {
  if (
    key === '' ||
    key.startsWith('/') ||
    key.includes('\0') ||
    key.split('/').some((s) => s === '' || s === '.' || s === '..')
  ) {
    throw new Error(`Invalid storage key: ${JSON.stringify(key)}`);
  }
  return key;
}

/** The range of keys under `prefix/`: in the "C" collation, exactly those starting with it. */
function prefixRange(prefix: string): [from: string, to: string] {
  checkKey(prefix);
  return [`${prefix}/`, `${prefix}0`];
}

function notFound(key: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: no such stored file: ${key}`), { code: 'ENOENT' });
}

/** Chunks per SELECT when reading a file (each statement bounded in time and memory). */
const READ_BATCH = 1;

/**
 * The content of the file at `path` in pieces of CHUNK_BYTES, read into one reused buffer: each
 * piece is valid until the next is requested.
 */
async function* readChunks(path: string): AsyncGenerator<Buffer> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const file = await open(path, 'r');
  try {
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}

/** Splits `data` into rows of at most CHUNK_BYTES (views, no copies). */
function* slices(data: Buffer): Generator<Buffer> {
  for (let at = 0; at < data.length; at += CHUNK_BYTES) {
    yield data.subarray(at, at + CHUNK_BYTES);
  }
}

export class PostgresStorage implements FileStorage {
  /** `pool` holds the files; `scratchDir` (local disk) uploads and copies handed to converters. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly scratchDir: string,
  ) {}

  private transaction<T>(begin: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return withTransaction(this.pool, begin, fn);
  }

  /**
   * Replaces the file of `key` with the bytes of `source` (in the caller's transaction), and
   * checks on the way that they are the `size` bytes of sha256 `checksum` announced. Each piece
   * is sent (node-postgres copies it into the Bind message) before the next is requested, so
   * `source` may reuse its buffer.
   */
  private async store(
    client: pg.PoolClient,
    key: string,
    source: AsyncIterable<Buffer> | Iterable<Buffer>,
    size: number,
    checksum: string,
  ): Promise<void> {
    // The header first: its row lock serializes concurrent writers of one key.
    await client.query(
      `insert into aps_files (key, size, checksum) values ($1, $2, $3)
       on conflict (key) do update
       set size = excluded.size, checksum = excluded.checksum, created_at = now()`,
      [key, size, checksum],
    );
    await client.query('delete from aps_files_chunks where key = $1', [key]);
    const hash = createHash('sha256');
    let seq = 0;
    let written = 0;
    for await (const chunk of source) {
      if (chunk.length === 0) continue;
      hash.update(chunk);
      written += chunk.length;
      await client.query('insert into aps_files_chunks (key, seq, data) values ($1, $2, $3)', [
        key,
        seq,
        chunk,
      ]);
      seq += 1;
    }
    if (written !== size || hash.digest('hex') !== checksum) {
      throw new Error(`The file for ${key} changed while it was being stored`);
    }
  }

  receive(input: Readable, maxBytes: number, tooLarge: () => Error): Promise<PendingFile> {
    return receivePending(this.scratchDir, input, maxBytes, tooLarge, async (received, key) => {
      checkKey(key);
      const { tempPath, size, checksum } = received;
      await this.transaction('begin', (client) =>
        this.store(client, key, readChunks(tempPath), size, checksum),
      );
      // The file is stored; a temporary file left behind is swept from the scratch directory.
      await rm(tempPath, { force: true }).catch(() => undefined);
    });
  }

  async writeFile(key: string, data: string | Uint8Array): Promise<void> {
    checkKey(key);
    const bytes =
      typeof data === 'string'
        ? Buffer.from(data, 'utf8')
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const checksum = createHash('sha256').update(bytes).digest('hex');
    await this.transaction('begin', (client) =>
      this.store(client, key, slices(bytes), bytes.length, checksum),
    );
  }

  async withLocalFile<T>(key: string, fn: (path: string) => Promise<T>): Promise<T> {
    checkKey(key);
    await mkdir(this.scratchDir, { recursive: true, mode: 0o700 });
    // A directory of its own keeps the key's file name: converters detect formats by extension.
    const dir = join(this.scratchDir, scratchName('file'));
    try {
      await mkdir(dir, { mode: 0o700 });
      const path = join(dir, basename(key));
      await this.transaction('begin isolation level repeatable read, read only', async (client) => {
        const header = await client.query<{ size: string | number; checksum: string }>(
          'select size, checksum from aps_files where key = $1',
          [key],
        );
        const file = header.rows[0];
        if (file === undefined) throw notFound(key);
        const hash = createHash('sha256');
        let size = 0;
        const out = await open(path, 'wx', 0o600);
        try {
          for (let from = 0; ; from += READ_BATCH) {
            const { rows } = await client.query<{ data: Buffer }>(
              'select data from aps_files_chunks where key = $1 and seq >= $2 and seq < $3 order by seq',
              [key, from, from + READ_BATCH],
            );
            for (const { data } of rows) {
              hash.update(data);
              size += data.length;
              await out.write(data);
            }
            if (rows.length < READ_BATCH) break;
          }
        } finally {
          await out.close();
        }
        if (size !== Number(file.size) || hash.digest('hex') !== file.checksum) {
          throw new Error(`The stored file ${key} is damaged (size or checksum mismatch)`);
        }
      });
      return await fn(path);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async readText(key: string): Promise<string> {
    checkKey(key);
    // One statement: one snapshot, so a concurrent replacement cannot mix two versions.
    const { rows } = await this.pool.query<{ data: string | null }>(
      `select encode(c.data, 'base64') as data
       from aps_files f left join aps_files_chunks c on c.key = f.key
       where f.key = $1 order by c.seq`,
      [key],
    );
    if (rows.length === 0) throw notFound(key);
    const chunks = rows.flatMap((r) => (r.data === null ? [] : [Buffer.from(r.data, 'base64')]));
    return Buffer.concat(chunks).toString('utf8');
  }

  async remove(key: string): Promise<void> {
    checkKey(key);
    await this.pool.query('delete from aps_files where key = $1', [key]);
  }

  async removePrefix(prefix: string): Promise<void> {
    const [from, to] = prefixRange(prefix);
    await this.pool.query('delete from aps_files where key >= $1 and key < $2', [from, to]);
  }

  async list(prefix: string): Promise<string[]> {
    const [from, to] = prefixRange(prefix);
    const { rows } = await this.pool.query<{ name: string }>(
      `select distinct split_part(substr(key, char_length($1::text) + 1), '/', 1) as name
       from aps_files where key >= $1 and key < $2 order by name`,
      [from, to],
    );
    return rows.map((r) => r.name);
  }
}
