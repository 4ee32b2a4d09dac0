/**
 * Snapshots of the SQLite store's in-process search indexes (snapshots.ts, copies-loader.ts):
 * a store that starts from a snapshot finds exactly what a store built from the tables finds, a
 * corrupt, foreign or stale snapshot is never trusted (rebuilt, or brought up to date from the
 * change log), and searches made while the indexes load wait for them.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SqliteDatabase } from '../../../src/db/database.js';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import type { Evidence } from '../../../src/knowledge/search/chunk-store.js';
import {
  keywordFromSnapshot,
  SNAPSHOT_FORMAT,
} from '../../../src/knowledge/search/sqlite/copies/snapshots.js';
import { sharedLexer } from '../../../src/knowledge/search/sqlite/keyword/fts5-lexer.js';
import {
  readSnapshot,
  SnapshotError,
  writeSnapshot,
  type Section,
  type Snapshot,
} from '../../../src/knowledge/search/sqlite/copies/snapshot-file.js';
import { ChunkIds } from '../../../src/knowledge/search/sqlite/common/chunk-ids.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { lcgRandom, tempDir } from '../../helpers.js';
import { commitDocument } from '../helpers.js';

const MODEL = 'test-model';
const DIMS = 8;
const WORDS =
  'alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone'.split(' ');

let random = lcgRandom(7);
const pick = () => WORDS[Math.floor(random() * WORDS.length)] ?? 'alpha';
const vector = () => Float32Array.from({ length: DIMS }, () => random() - 0.5);

const open: { database: SqliteDatabase; stores: SqliteChunkStore[] }[] = [];
afterEach(async () => {
  for (const { database, stores } of open.splice(0)) {
    for (const store of stores) await store.close();
    await database.db.destroy();
  }
});

async function openDatabase(file: string) {
  const database = openSqlite(file);
  expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
  const entry = { database, stores: [] as SqliteChunkStore[] };
  open.push(entry);
  return entry;
}

/** A store over the database; with `logs`, it keeps snapshots and records what it logs. */
function storeOf(entry: { database: SqliteDatabase; stores: SqliteChunkStore[] }, logs?: string[]) {
  const snapshots =
    logs === undefined
      ? null
      : {
          databaseFile: entry.database.native.name,
          delayMs: 3_600_000,
          log: (message: string, fields?: Record<string, unknown>) => {
            const why = typeof fields?.why === 'string' ? `: ${fields.why}` : '';
            logs.push(`${message}${why}`);
          },
        };
  const store = new SqliteChunkStore(entry.database.native, { snapshots });
  entry.stores.push(store);
  return store;
}

/** The chunk ids a vector snapshot holds (packed, chunk-ids.ts), in row order. */
function snapshotIds(snapshot: Snapshot): string[] {
  const kinds = snapshot.arrays.get('idsKinds') as Uint8Array;
  const rows = snapshot.arrays.get('idsOtherRows') as Int32Array;
  const others = snapshot.strings.get('idsOthers') ?? [];
  const ids = ChunkIds.fromPacked(
    snapshot.arrays.get('idsBytes') as Uint8Array,
    kinds,
    others.map((id, i) => [rows[i] ?? -1, id]),
  );
  return ids.list(kinds.length);
}

/** Adds a document of `n` chunks through the store's own commit. */
async function addDocument(
  entry: { database: SqliteDatabase },
  store: SqliteChunkStore,
  n: number,
  projectId: string | null = null,
): Promise<string> {
  return commitDocument(
    store,
    entry.database.native,
    { model: MODEL, dimensions: DIMS },
    (id) =>
      Array.from({ length: n }, (_, i) => {
        const content = Array.from({ length: 6 + (i % 5) }, pick).join(' ');
        return {
          id: randomUUID(),
          chunkIndex: i,
          sectionPath: pick(),
          page: null,
          content,
          tokenEstimate: 4,
          metadata: {},
          contentHash: `${id}:${i}`,
          vector: vector(),
        };
      }),
    projectId,
  );
}

/** A snapshot's sections, to write again (changed). */
function sectionsOf(snapshot: Snapshot): Map<string, Section> {
  const sections = new Map<string, Section>();
  for (const [key, list] of snapshot.strings) sections.set(key, { type: 'strings', list });
  for (const [key, array] of snapshot.arrays) {
    const type =
      array instanceof Float64Array
        ? 'f64'
        : array instanceof Uint8Array
          ? 'u8'
          : array instanceof Int32Array
            ? 'i32'
            : 'f32';
    sections.set(key, { type, parts: [array.slice()] });
  }
  return sections;
}

/** The Int32 array of section `name`. */
function sectionOf(sections: Map<string, Section>, name: string): Int32Array {
  const found = sections.get(name);
  if (found === undefined || found.type !== 'i32' || !(found.parts[0] instanceof Int32Array)) {
    throw new Error(`no section ${name}`);
  }
  return found.parts[0];
}

const QUERIES = ['alpha beta', 'river stone omega', 'kappa', 'sigma theta lambda', 'zeta'];

/** The evidence each query gathers (keyword, nearest vectors, cosines), in and out of a project. */
async function evidence(store: SqliteChunkStore): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [i, text] of QUERIES.entries()) {
    random = lcgRandom(1000 + i);
    const query = vector();
    for (const filter of [{}, { projectId: 'p1' }]) {
      let seen: Evidence | undefined;
      await store.search(
        { text, vector: query, model: MODEL, filter, limit: 20 },
        {
          rank: (e) => {
            seen = e;
            return [];
          },
        },
      );
      out.push({ ...seen, cosine: [...(seen?.cosine ?? new Map<string, number>())].sort() });
    }
  }
  return out;
}

/** A database of a few documents (one in project p1) and a store that saved its snapshots. */
async function saved() {
  const dir = tempDir();
  const entry = await openDatabase(join(dir, 'aps.sqlite'));
  const writer = storeOf(entry, []);
  const documents: string[] = [];
  for (let d = 0; d < 4; d++) documents.push(await addDocument(entry, writer, 20 + d * 10));
  documents.push(await addDocument(entry, writer, 15, 'p1'));
  await writer.warm(MODEL);
  await writer.saveIndexes();
  const files = readdirSync(join(dir, 'search-snapshots'));
  expect(files.filter((f) => f.endsWith('.snapshot'))).toHaveLength(2);
  return { dir, entry, writer, documents };
}

describe('search index snapshots (SQLite)', () => {
  it('a store started from the snapshots finds what one built from the tables finds', async () => {
    const { entry, writer } = await saved();
    const logs: string[] = [];
    const restored = storeOf(entry, logs);
    expect(await restored.warm(MODEL)).toBe(20 + 30 + 40 + 50 + 15);
    expect(logs.filter((l) => l === 'search index snapshot loaded')).toHaveLength(2);
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    const expected = await evidence(fresh);
    expect(await evidence(restored)).toEqual(expected);
    expect(await evidence(writer)).toEqual(expected);
  });

  it('vector rows keep their table rowids (commit, snapshot, tables); a table renumbered behind the stores changes no answer', async () => {
    const { dir, entry, writer } = await saved();
    const native = entry.database.native;
    const table = native
      .prepare('select table_name from knowledge_vector_tables')
      .pluck()
      .get() as string;
    const name = readdirSync(join(dir, 'search-snapshots')).find(
      (f) => f.endsWith('.snapshot') && !f.includes('.keyword.'),
    );
    const snapshot = await readSnapshot(join(dir, 'search-snapshots', name ?? ''));
    const ids = snapshotIds(snapshot);
    const rowids = snapshot.arrays.get('rowids');
    const actual = new Map(
      native.prepare(`select chunk_id, rowid from ${table}`).raw().all() as [string, number][],
    );
    expect(ids.length).toBeGreaterThan(0);
    expect(Array.from(rowids ?? [], Number)).toEqual(ids.map((id) => actual.get(id)));
    const restored = storeOf(entry, []);
    await restored.warm(MODEL);
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    const expected = await evidence(fresh);
    // Every rowid the stores know now names another chunk's row (reversed, as a VACUUM may
    // renumber a table): the rows are read by chunk id instead, and nothing changes.
    native.exec(`update ${table} set rowid = rowid + 1000000`);
    native.exec(`update ${table} set rowid = ${actual.size + 1 + 1_000_000} - rowid`);
    for (const store of [writer, restored, fresh]) expect(await evidence(store)).toEqual(expected);
  });

  it('a corrupt snapshot is rebuilt from the tables, never trusted', async () => {
    const { dir, entry } = await saved();
    const path = join(dir, 'search-snapshots', 'aps.sqlite.keyword.snapshot');
    const bytes = readFileSync(path);
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] ?? 0) ^ 0xff;
    writeFileSync(path, bytes);
    const logs: string[] = [];
    const store = storeOf(entry, logs);
    await store.warm(MODEL);
    expect(logs).toContain('search index snapshot not used: checksum mismatch');
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    expect(await evidence(store)).toEqual(await evidence(fresh));
    // Truncated: the same. (The first store, having rebuilt, writes a good snapshot in the
    // background: let it finish first, or it could replace the truncated file.)
    await store.close();
    writeFileSync(path, bytes.subarray(0, 100));
    const again: string[] = [];
    await storeOf(entry, again).warm(MODEL);
    expect(again.some((l) => l.startsWith('search index snapshot not used'))).toBe(true);
  });

  it('a snapshot of an older format (keyword postings as Int32 rows) is rebuilt, not trusted', async () => {
    const { dir, entry } = await saved();
    const path = join(dir, 'search-snapshots', 'aps.sqlite.keyword.snapshot');
    // The same file as format 1 would have it: the header says 1, the checksum is right.
    const bytes = readFileSync(path);
    const header = bytes.subarray(12, 12 + bytes.readUInt32LE(8));
    const at = header.indexOf(`"format":${SNAPSHOT_FORMAT}`);
    expect(at).toBeGreaterThan(0);
    header.write('1', at + '"format":'.length);
    bytes.writeUInt32LE(crc32(bytes.subarray(0, bytes.length - 4)) >>> 0, bytes.length - 4);
    writeFileSync(path, bytes);
    const logs: string[] = [];
    const store = storeOf(entry, logs);
    await store.warm(MODEL);
    expect(logs).toContain('search index snapshot not used: another format');
    expect(logs.filter((l) => l === 'search index snapshot loaded')).toHaveLength(1);
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    expect(await evidence(store)).toEqual(await evidence(fresh));
    // Written again in this build's format.
    await store.saveIndexes();
    const again: string[] = [];
    await storeOf(entry, again).warm(MODEL);
    expect(again.filter((l) => l === 'search index snapshot loaded')).toHaveLength(2);
  });

  it('a vector snapshot holding the float32 copy of earlier builds is used, its floats not kept', async () => {
    const { dir, entry } = await saved();
    const snapshots = join(dir, 'search-snapshots');
    const name = readdirSync(snapshots).find((n) => n.includes('.vector-'));
    const path = join(snapshots, name ?? '');
    const before = await readSnapshot(path);
    expect(before.arrays.has('floats')).toBe(false);
    const count = before.meta.count as number;
    // The same snapshot as a build with the float32 copy in memory wrote it: the chunk ids as
    // one list of strings, no table rowids (those rows are read by chunk id until found).
    const sections = new Map<string, Section>();
    for (const [key, list] of before.strings) {
      if (!key.startsWith('ids')) sections.set(key, { type: 'strings', list });
    }
    sections.set('ids', { type: 'strings', list: snapshotIds(before) });
    for (const [key, array] of before.arrays) {
      if (key === 'rowids' || key.startsWith('ids')) continue;
      const type =
        array instanceof Float32Array ? 'f32' : array instanceof Int8Array ? 'i8' : 'i32';
      sections.set(key, { type, parts: [array] });
    }
    sections.set('floats', { type: 'f32', parts: [new Float32Array(count * DIMS).fill(0.5)] });
    await writeSnapshot(path, before.meta, sections, () => true);
    const logs: string[] = [];
    const restored = storeOf(entry, logs);
    await restored.warm(MODEL);
    expect(logs.filter((l) => l === 'search index snapshot loaded')).toHaveLength(2);
    expect(Object.keys(restored.memoryReport()).some((k) => k.includes('float'))).toBe(false);
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    expect(await evidence(restored)).toEqual(await evidence(fresh));
    // The rows' rowids are found in the background, and the next snapshot has them.
    let after = await readSnapshot(path);
    for (let i = 0; i < 100 && !after.arrays.has('rowids'); i++) {
      await new Promise((r) => setTimeout(r, 20));
      await restored.saveIndexes();
      after = await readSnapshot(path);
    }
    const table = entry.database.native
      .prepare('select table_name from knowledge_vector_tables')
      .pluck()
      .get() as string;
    const actual = new Map(
      entry.database.native.prepare(`select chunk_id, rowid from ${table}`).raw().all() as [
        string,
        number,
      ][],
    );
    const ids = snapshotIds(after);
    expect(Array.from(after.arrays.get('rowids') ?? [], Number)).toEqual(
      ids.map((id) => actual.get(id)),
    );
  });

  it('a keyword snapshot without the live counts of its lists (an earlier build) counts them', async () => {
    const { dir, entry } = await saved();
    const path = join(dir, 'search-snapshots', 'aps.sqlite.keyword.snapshot');
    const before = await readSnapshot(path);
    expect(before.arrays.get('postingCounts')?.length).toBe(before.strings.get('lexemes')?.length);
    const sections = sectionsOf(before);
    sections.delete('postingCounts');
    await writeSnapshot(path, before.meta, sections, () => true);
    const logs: string[] = [];
    const restored = storeOf(entry, logs);
    await restored.warm(MODEL);
    expect(logs.filter((l) => l === 'search index snapshot loaded')).toHaveLength(2);
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    expect(await evidence(restored)).toEqual(await evidence(fresh));
  });

  it('a keyword snapshot keeps the lists’ skip entries; entries that cannot be their lists’ are not trusted', async () => {
    const dir = tempDir();
    const entry = await openDatabase(join(dir, 'aps.sqlite'));
    const writer = storeOf(entry, []);
    // Each word in ~300 chunks: lists long enough for skip entries (posting-skips.ts).
    await addDocument(entry, writer, 600);
    await writer.warm(MODEL);
    // Made in the background after the load, before any search; then saved.
    const made = () => writer.memoryReport()['keyword skip entries'] ?? 0;
    await vi.waitFor(
      () => {
        expect(made()).toBeGreaterThan(0);
      },
      { timeout: 5_000 },
    );
    await writer.saveIndexes();
    const path = join(dir, 'search-snapshots', 'aps.sqlite.keyword.snapshot');
    const good = await readSnapshot(path);
    const table = good.arrays.get('skipTable');
    expect(table?.length).toBeGreaterThan(0);
    // The index read from it holds them: its own snapshot's would be the same.
    expect(keywordFromSnapshot(good, sharedLexer()).state().skips).toEqual({
      table,
      offsets: good.arrays.get('skipOffsets'),
      before: good.arrays.get('skipBefore'),
    });
    const logs: string[] = [];
    const store = storeOf(entry, logs);
    await store.warm(MODEL);
    expect(logs.filter((l) => l === 'search index snapshot loaded')).toHaveLength(2);
    expect(await evidence(store)).toEqual(await evidence(writer));
    await store.close();

    // Each a wrong entry: a row out of order, an offset past the list, a section missing.
    const bad: [string, (sections: Map<string, Section>) => unknown][] = [
      ['row', (a) => sectionOf(a, 'skipBefore').fill(1 << 30, 1, 2)],
      ['offset', (a) => sectionOf(a, 'skipOffsets').fill(1 << 30, 1, 2)],
      ['section', (a) => a.delete('skipOffsets')],
    ];
    for (const [what, spoil] of bad) {
      const sections = sectionsOf(good);
      spoil(sections);
      await writeSnapshot(path, good.meta, sections, () => true);
      await expect(
        readSnapshot(path).then((read) => keywordFromSnapshot(read, sharedLexer())),
        what,
      ).rejects.toThrow(SnapshotError);
      const rebuilt: string[] = [];
      const again = storeOf(entry, rebuilt);
      await again.warm(MODEL);
      expect(
        rebuilt.some((l) => l.startsWith('search index snapshot not used')),
        what,
      ).toBe(true);
      expect(await evidence(again), what).toEqual(await evidence(writer));
      await again.close();
    }
  });

  it("another database's snapshots (a copied or restored file) are not used", async () => {
    const { dir, entry: original } = await saved();
    original.database.native.pragma('wal_checkpoint(TRUNCATE)');
    const other = tempDir();
    copyFileSync(join(dir, 'aps.sqlite'), join(other, 'aps.sqlite'));
    mkdirSync(join(other, 'search-snapshots'));
    for (const name of readdirSync(join(dir, 'search-snapshots'))) {
      copyFileSync(join(dir, 'search-snapshots', name), join(other, 'search-snapshots', name));
    }
    const entry = await openDatabase(join(other, 'aps.sqlite'));
    const logs: string[] = [];
    await storeOf(entry, logs).warm(MODEL);
    expect(logs).toEqual([
      'search index snapshot not used: another database',
      'search index snapshot not used: another database',
    ]);
  });

  it('a stale snapshot is brought up to date from the change log', async () => {
    const { entry, documents } = await saved();
    // Written after the snapshot, by a store that keeps none (as another process would).
    const other = storeOf(entry);
    await addDocument(entry, other, 12, 'p1');
    await addDocument(entry, other, 9);
    expect(await other.deleteDocument(documents[1] ?? '')).toBe(true);
    expect(await other.deleteDocument(documents[4] ?? '')).toBe(true);
    const logs: string[] = [];
    const restored = storeOf(entry, logs);
    expect(await restored.warm(MODEL)).toBe(20 + 40 + 50 + 12 + 9);
    expect(logs.filter((l) => l === 'search index snapshot loaded')).toHaveLength(2);
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    expect(await evidence(restored)).toEqual(await evidence(fresh));
  });

  it('searches made while the indexes load wait for them and answer as a loaded store', async () => {
    const { entry } = await saved();
    const fresh = storeOf(entry);
    await fresh.warm(MODEL);
    const expected = await evidence(fresh);
    for (const logs of [[], undefined]) {
      const store = storeOf(entry, logs);
      let loaded = false;
      const warming = store.warm(MODEL).then(() => (loaded = true));
      const during = evidence(store);
      expect(loaded).toBe(false);
      expect(await during).toEqual(expected);
      await warming;
    }
  });
});
