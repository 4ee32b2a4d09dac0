/**
 * The approximate graph of large vector indexes (ann-graph.ts in vector-index.ts): used only from
 * the size threshold on, recall@10 against brute force ≥ 0.98 on a clustered synthetic set, rows
 * added, deleted and compacted away kept in step with the graph, and the graph saved beside the
 * index's snapshot: loaded when its file checks out, rebuilt when it is corrupt.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SqliteDatabase } from '../../../src/db/database.js';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { seededRandom } from '../../../src/knowledge/embeddings/static/sif.js';
import type { Evidence } from '../../../src/knowledge/search/chunk-store.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import {
  VectorIndex,
  type IndexRow,
} from '../../../src/knowledge/search/sqlite/vector/vector-index.js';
import { tempDir } from '../../helpers.js';
import { commitDocument, MemoryVectorTable } from '../helpers.js';

const DIMS = 24;
const random = seededRandom(7);

/** Vectors around `clusters` centres (real embeddings cluster by topic too). */
function clustered(n: number, clusters: number, from = 0): IndexRow[] {
  const centres = Array.from({ length: clusters }, () =>
    Float32Array.from({ length: DIMS }, () => random() * 2 - 1),
  );
  return Array.from({ length: n }, (_, i) => ({
    chunkId: `c${from + i}`,
    documentId: `d${Math.floor((from + i) / 100)}`,
    projectKey: '',
    vector: Float32Array.from(centres[i % clusters] ?? [], (x) => x + (random() * 2 - 1) * 0.6),
  }));
}

const cosine = (a: Float32Array, b: Float32Array) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let j = 0; j < a.length; j++) {
    dot += (a[j] ?? 0) * (b[j] ?? 0);
    na += (a[j] ?? 0) ** 2;
    nb += (b[j] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
};

function exactTop(all: IndexRow[], query: Float32Array, k: number): string[] {
  return all
    .map((r) => ({ id: r.chunkId, score: cosine(r.vector, query) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .map((r) => r.id);
}

/** Sends every row to the graph's worker and waits until it holds them. */
async function buildAll(index: VectorIndex): Promise<void> {
  while (index.buildGraph(1000)) await new Promise((resolve) => setTimeout(resolve, 2));
}

/** Indexes with a graph (a worker thread each), stopped after each test. */
const indexes: VectorIndex[] = [];
const withGraph = (
  table: MemoryVectorTable,
  annMin: number,
  annGraph?: { searchList: number; fusedList: number },
) => {
  const index = new VectorIndex(DIMS, table, { annMin, ...(annGraph ? { annGraph } : {}) });
  indexes.push(index);
  return index;
};
afterEach(() => {
  for (const index of indexes.splice(0)) index.close();
});

describe('the approximate graph of a vector index', () => {
  it('starts at the threshold; until built, the uncovered rows are scanned exactly', async () => {
    const rows = clustered(1200, 30);
    const table = new MemoryVectorTable();
    table.put(rows);
    const index = withGraph(table, 1000);
    index.add(rows.slice(0, 999));
    expect(index.graph).toBeNull();
    index.add(rows.slice(999));
    expect(index.graph).not.toBeNull();
    expect(index.graphPending).toBe(true);
    const query = rows[5]?.vector ?? new Float32Array(DIMS);
    const scanned = index.search(query, {}, 10).map((c) => c.chunkId);
    expect(scanned).toEqual(exactTop(rows, query, 10));
    // Partly built: graph candidates plus a scan of the rest, still exact here.
    index.buildGraph(0);
    while (index.graph?.covered === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(index.graph?.covered).toBeLessThan(1200);
    expect(index.search(query, {}, 10).map((c) => c.chunkId)).toEqual(scanned);
    await buildAll(index);
    expect(index.graphPending).toBe(false);
    expect(index.graph?.size).toBe(1200);
    // Never below the threshold: no graph at all.
    const small = withGraph(table, 5000);
    small.add(rows);
    expect(small.graph).toBeNull();
  });

  it('has recall@10 ≥ 0.98 against an exact scan, scores exact', async () => {
    const rows = clustered(6000, 60);
    const table = new MemoryVectorTable();
    const index = withGraph(table, 1000);
    index.add(table.put(rows));
    await buildAll(index);
    let found = 0;
    const queries = 60;
    for (let q = 0; q < queries; q++) {
      const query = Float32Array.from({ length: DIMS }, () => random() * 2 - 1);
      const want = exactTop(rows, query, 10);
      const got = index.search(query, {}, 10);
      found += got.filter((c) => want.includes(c.chunkId)).length;
      for (const c of got) {
        const row = rows[Number(c.chunkId.slice(1))];
        expect(c.score).toBeCloseTo(cosine(row?.vector ?? query, query), 5);
      }
    }
    expect(found / (10 * queries)).toBeGreaterThanOrEqual(0.98);
  });

  it('looks with the shorter list of a fused (hybrid) search only when told so', async () => {
    const rows = clustered(6000, 60);
    const table = new MemoryVectorTable();
    // A fused list shorter than the candidates asked: the search looks as far as k only.
    const index = withGraph(table, 1000, { searchList: 512, fusedList: 1 });
    index.add(table.put(rows));
    await buildAll(index);
    const recall = (fused: boolean) => {
      let found = 0;
      const queries = 60;
      const seeded = seededRandom(11);
      for (let q = 0; q < queries; q++) {
        const query = Float32Array.from({ length: DIMS }, () => seeded() * 2 - 1);
        const want = exactTop(rows, query, 10);
        // Asked ahead with the other kind first: the search must not take that answer.
        index.prefetch(query, {}, 10, !fused);
        const got = index.search(query, {}, 10, fused);
        found += got.filter((c) => want.includes(c.chunkId)).length;
      }
      return found / (10 * queries);
    };
    const alone = recall(false);
    const fused = recall(true);
    expect(alone).toBeGreaterThanOrEqual(0.98);
    expect(fused).toBeLessThan(alone);
  });

  it('answers from its worker while the caller works, and scans when the worker is gone', async () => {
    const rows = clustered(2000, 20);
    const table = new MemoryVectorTable();
    const index = withGraph(table, 1000);
    index.add(table.put(rows));
    await buildAll(index);
    const graph = index.graph!;
    // Asked ahead (as the store does before ranking keywords), then taken by the search.
    const probe = rows[42]!.vector;
    index.prefetch(probe, {}, 10);
    expect(index.search(probe, {}, 10)[0]?.chunkId).toBe('c42');
    // The worker ends (as after a crash): the graph is no longer used, the rows are scanned.
    (graph as unknown as { worker: { postMessage(m: unknown): void } }).worker.postMessage({
      op: 'close',
    });
    while (graph.failed === null) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(index.graphPending).toBe(false);
    for (const r of rows.slice(100, 120)) {
      expect(index.search(r.vector, {}, 10).map((c) => c.chunkId)).toEqual(
        exactTop(rows, r.vector, 10),
      );
    }
  });

  it('loads a saved graph however the collector runs meanwhile', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const rows = clustered(1500, 15);
    const table = new MemoryVectorTable();
    const index = withGraph(table, 1000);
    index.add(table.put(rows));
    await buildAll(index);
    const path = join(tempDir(), 'saved.graph');
    await index.graph!.save(path);
    const state = index.state();
    // A second index loads it; nothing but the load's own reply holds the new graph meanwhile.
    const restored = VectorIndex.fromState(state, table, { annMin: 1000 });
    indexes.push(restored);
    const loading = restored.restoreGraph(path, { ...state.graph!, covered: rows.length });
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const timeout = new Promise((_, reject) =>
      setTimeout(() => {
        reject(new Error('lost'));
      }, 5000),
    );
    await Promise.race([loading, timeout]);
    expect(restored.graph?.failed).toBeNull();
    expect(restored.search(rows[7]!.vector, {}, 1)[0]?.chunkId).toBe('c7');
  });

  it('keeps deletes, new rows and compaction in step with the graph', async () => {
    const rows = clustered(3000, 30);
    const table = new MemoryVectorTable();
    const index = withGraph(table, 1000);
    index.add(table.put(rows));
    await buildAll(index);
    // Deleted documents never come back; the graph's nodes go with them.
    const gone = new Set<string>();
    for (let d = 0; d < 10; d++) {
      index.deleteDocument(`d${d}`);
      for (let i = d * 100; i < (d + 1) * 100; i++) gone.add(`c${i}`);
    }
    expect(index.graph?.size).toBe(2000);
    const live = rows.filter((r) => !gone.has(r.chunkId));
    for (const r of live.slice(0, 50)) {
      const top = index.search(r.vector, {}, 10).map((c) => c.chunkId);
      expect(top[0]).toBe(r.chunkId);
      expect(top.some((id) => gone.has(id))).toBe(false);
    }
    // New rows are found before the graph takes them (the scanned tail), and after.
    const added = clustered(400, 10, 3000);
    index.add(table.put(added));
    expect(index.graphPending).toBe(true);
    const probe = added[17]?.vector ?? new Float32Array(DIMS);
    expect(index.search(probe, {}, 1)[0]?.chunkId).toBe('c3017');
    await buildAll(index);
    expect(index.search(probe, {}, 1)[0]?.chunkId).toBe('c3017');
    // Past a quarter of rows deleted, the index compacts: rows move, graph keys follow.
    for (let d = 10; d < 20; d++) index.deleteDocument(`d${d}`);
    expect(index.size).toBe(1400);
    for (const r of [...rows.slice(2000, 2050), ...added.slice(0, 50)]) {
      expect(index.search(r.vector, {}, 1)[0]?.chunkId).toBe(r.chunkId);
    }
    // A scope the graph's candidates cannot fill is scanned exactly.
    const scoped = index.search(probe, { documents: new Set(['d25', 'd26']) }, 5);
    expect(scoped.map((c) => c.chunkId)).toEqual(
      exactTop(
        rows.filter((r) => r.documentId === 'd25' || r.documentId === 'd26'),
        probe,
        5,
      ),
    );
  });
});

const MODEL = 'ann-model';
const open: { database: SqliteDatabase; stores: SqliteChunkStore[] }[] = [];
afterEach(async () => {
  for (const { database, stores } of open.splice(0)) {
    for (const store of stores) await store.close();
    await database.db.destroy();
  }
});

function storeOf(entry: (typeof open)[number], logs: string[]): SqliteChunkStore {
  const store = new SqliteChunkStore(entry.database.native, {
    snapshots: {
      databaseFile: entry.database.native.name,
      delayMs: 3_600_000,
      log: (message, fields) => {
        logs.push(typeof fields?.why === 'string' ? `${message}: ${fields.why}` : message);
      },
    },
    vectors: { annMin: 500 },
  });
  entry.stores.push(store);
  return store;
}

async function addDocument(
  entry: (typeof open)[number],
  store: SqliteChunkStore,
  rows: IndexRow[],
) {
  await commitDocument(store, entry.database.native, { model: MODEL, dimensions: DIMS }, (id) =>
    rows.map((r, i) => ({
      id: r.chunkId,
      chunkIndex: i,
      sectionPath: 'section',
      page: null,
      content: `chunk ${r.chunkId}`,
      tokenEstimate: 2,
      metadata: {},
      contentHash: `${id}:${i}`,
      vector: r.vector,
    })),
  );
}

async function nearest(store: SqliteChunkStore, queries: Float32Array[]): Promise<string[][]> {
  const out: string[][] = [];
  for (const vector of queries) {
    let seen: Evidence | undefined;
    await store.search(
      { text: '', vector, model: MODEL, filter: {}, limit: 10 },
      {
        rank: (e) => {
          seen = e;
          return [];
        },
      },
    );
    out.push((seen?.semantic ?? []).map((c) => c.chunkId));
  }
  return out;
}

describe('the graph beside the snapshot (SQLite store)', () => {
  it('looks less far for a hybrid search with keyword candidates, in full otherwise', async () => {
    const dir = tempDir();
    const database = openSqlite(join(dir, 'aps.sqlite'));
    expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
    const entry = { database, stores: [] as SqliteChunkStore[] };
    open.push(entry);
    const rows = clustered(600, 20).map((r) => ({ ...r, chunkId: randomUUID() }));
    const store = storeOf(entry, []);
    await addDocument(entry, store, rows);
    await store.warm(MODEL);
    await store.buildGraphs();
    const searches = vi.spyOn(VectorIndex.prototype, 'search');
    const fusedOf = async (text: string | null) => {
      searches.mockClear();
      const vector = rows[3]!.vector;
      await store.search({ text, vector, model: MODEL, filter: {}, limit: 10 }, { rank: () => [] });
      return searches.mock.calls.map((call) => call[3]);
    };
    try {
      expect(await fusedOf('chunk')).toEqual([true]);
      expect(await fusedOf(null)).toEqual([false]);
      expect(await fusedOf('nothing-matches-this')).toEqual([false]);
    } finally {
      searches.mockRestore();
    }
  });

  it('is saved, loaded when its file checks out, and rebuilt when it is corrupt', async () => {
    const dir = tempDir();
    const database = openSqlite(join(dir, 'aps.sqlite'));
    expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
    const entry = { database, stores: [] as SqliteChunkStore[] };
    open.push(entry);
    const rows = clustered(1500, 20).map((r) => ({ ...r, chunkId: randomUUID() }));
    const writer = storeOf(entry, []);
    for (let at = 0; at < rows.length; at += 300) {
      await addDocument(entry, writer, rows.slice(at, at + 300));
    }
    await writer.warm(MODEL);
    await writer.buildGraphs();
    await writer.saveIndexes();
    const files = readdirSync(join(dir, 'search-snapshots'));
    const graphs = files.filter((f) => f.endsWith('.graph'));
    expect(graphs).toHaveLength(1);
    const queries = rows.slice(0, 20).map((r) => r.vector);
    const expected = await nearest(writer, queries);
    expect(expected.map((ids) => ids[0])).toEqual(rows.slice(0, 20).map((r) => r.chunkId));

    const logs: string[] = [];
    const restored = storeOf(entry, logs);
    await restored.warm(MODEL);
    expect(logs.filter((l) => l.startsWith('search index graph'))).toEqual([]);
    expect(await nearest(restored, queries)).toEqual(expected);

    const path = join(dir, 'search-snapshots', graphs[0] ?? '');
    const bytes = readFileSync(path);
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] ?? 0) ^ 0xff;
    writeFileSync(path, bytes);
    const again: string[] = [];
    const rebuilt = storeOf(entry, again);
    await rebuilt.warm(MODEL);
    expect(again).toContain('search index graph not used: graph checksum mismatch');
    await rebuilt.buildGraphs();
    expect(await nearest(rebuilt, queries)).toEqual(expected);
  });
});
