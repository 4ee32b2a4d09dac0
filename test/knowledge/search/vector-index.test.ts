/**
 * The in-process vector index (src/knowledge/search/sqlite/vector/vector-index.ts): exact against brute force,
 * scope filters, deletes and compaction; the int8 kernel with and without WebAssembly; and the
 * store reloading it (and the keyword index) when another connection (another process, e.g.
 * `aps reindex`) wrote.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../../src/knowledge/embeddings/static/sif.js';
import { Int8Matrix } from '../../../src/knowledge/search/sqlite/vector/dot-kernel.js';
import {
  VectorIndex,
  type IndexRow,
} from '../../../src/knowledge/search/sqlite/vector/vector-index.js';
import { createTestApp, type TestApp } from '../../helpers.js';
import { KnowledgeClient, MemoryVectorTable } from '../helpers.js';

const DIMS = 20;

function rows(random: () => number, n: number, docs: number): IndexRow[] {
  return Array.from({ length: n }, (_, i) => ({
    chunkId: `c${i}`,
    documentId: `d${i % docs}`,
    projectKey: i % 2 === 0 ? 'even' : 'odd',
    vector: Float32Array.from({ length: DIMS }, () => random() * 2 - 1),
  }));
}

function bruteForce(
  all: IndexRow[],
  query: Float32Array,
  limit: number,
  keep = (_: IndexRow) => true,
) {
  const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return all
    .filter(keep)
    .map((r) => ({
      chunkId: r.chunkId,
      score:
        r.vector.reduce((s, x, j) => s + x * (query[j] ?? 0), 0) / (norm(r.vector) * norm(query)),
    }))
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
}

describe('Int8Matrix', () => {
  it('computes the same integer dot products with and without WebAssembly', () => {
    const random = seededRandom(1);
    const results = [true, false].map((wasm) => {
      const m = new Int8Matrix(13, wasm);
      m.reserve(2000);
      for (let r = 0; r < 2000; r++) {
        const row = m.row(r);
        for (let j = 0; j < 13; j++) row[j] = Math.round((random() * 2 - 1) * 127);
      }
      return m;
    });
    expect(results[0]!.simd).toBe(true); // Node 20 has WebAssembly SIMD
    const query = Array.from({ length: 13 }, () => Math.round((random() * 2 - 1) * 30000));
    const a = [...results[0]!.scan(query, 2000)];
    // Same rows in the fallback matrix.
    for (let r = 0; r < 2000; r++) results[1]!.row(r).set(results[0]!.row(r));
    expect([...results[1]!.scan(query, 2000)]).toEqual(a);
    let expected = 0;
    for (let j = 0; j < 13; j++) expected += (results[0]!.row(7)[j] ?? 0) * (query[j] ?? 0);
    expect(a[7]).toBe(expected);
  });
});

describe('VectorIndex', () => {
  const random = seededRandom(42);
  const all = rows(random, 5000, 50);
  const table = new MemoryVectorTable();
  const index = new VectorIndex(DIMS, table);
  index.add(table.put(all));
  const queries = Array.from({ length: 20 }, () =>
    Float32Array.from({ length: DIMS }, () => random() * 2 - 1),
  );

  it('returns the exact nearest chunks by cosine similarity', () => {
    for (const q of queries) {
      const got = index.search(q, {}, 100);
      const want = bruteForce(all, q, 100);
      expect(got.map((c) => c.chunkId)).toEqual(want.map((c) => c.chunkId));
      got.forEach((c, i) => {
        expect(c.score).toBeCloseTo(want[i]!.score, 5);
      });
    }
  });

  it('scores from the table: the stored vectors normalised in float32, bit for bit', () => {
    const unit = (v: Float32Array) => {
      const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
      return Float32Array.from(v, (x) => x / norm);
    };
    const q = unit(queries[2]!);
    const reads = table.reads;
    const got = index.search(q, {}, 10);
    // One read of the candidates per search, none of the float32 copy kept in memory.
    expect(table.reads).toBe(reads + 1);
    expect(Object.keys(index.memoryReport()).some((k) => k.includes('float'))).toBe(false);
    for (const hit of got) {
      const row = unit(all[Number(hit.chunkId.slice(1))]!.vector);
      expect(hit.score).toBe(row.reduce((s, x, j) => s + x * q[j]!, 0));
    }
  });

  it('applies the project and document filters before ranking', () => {
    const q = queries[0]!;
    expect(index.search(q, { projectId: 'odd' }, 30).map((c) => c.chunkId)).toEqual(
      bruteForce(all, q, 30, (r) => r.projectKey === 'odd').map((c) => c.chunkId),
    );
    expect(index.search(q, { documents: new Set(['d7']) }, 30).map((c) => c.chunkId)).toEqual(
      bruteForce(all, q, 30, (r) => r.documentId === 'd7').map((c) => c.chunkId),
    );
    expect(index.search(q, { documents: new Set(['d7']), projectId: 'even' }, 30)).toEqual([]);
  });

  it('bounds each similarity from both sides by its int8 row alone, closely', () => {
    const ids = all.map((r) => r.chunkId);
    let widest = 0;
    for (const q of queries) {
      const exact = index.similarities(q, ids);
      const bounds = index.cosineBounds(q, [...ids, 'missing']);
      expect(bounds.has('missing')).toBe(false);
      for (const [id, cosine] of exact) {
        const { lower, upper } = bounds.get(id) ?? { lower: Number.NaN, upper: Number.NaN };
        expect(upper).toBeGreaterThanOrEqual(cosine);
        expect(lower).toBeLessThanOrEqual(cosine);
        widest = Math.max(widest, upper - cosine, cosine - lower);
      }
    }
    // Half a step of each row's int8 scale times Σ|query|: a few hundredths at 20 dimensions.
    expect(widest).toBeLessThan(0.05);
  });

  it('reads only the candidates that can make the top k (the int8 bounds rule out the rest)', () => {
    const before = table.vectorsRead;
    for (const q of queries) {
      const got = index.search(q, {}, 10);
      const want = bruteForce(all, q, 10);
      expect(got.map((c) => c.chunkId)).toEqual(want.map((c) => c.chunkId));
    }
    // 64 candidates each (the int8 scan's best) without the bounds.
    expect(table.vectorsRead - before).toBeLessThan(queries.length * 64 * 0.75);
  });

  it('gives the candidates a search would read, with bounds of their cosines, reading none', () => {
    for (const q of queries) {
      const before = table.vectorsRead;
      const bounded = index.nearestBounds(q, {}, 10);
      expect(table.vectorsRead).toBe(before);
      const exact = index.similarities(
        q,
        bounded.map((b) => b.chunkId),
      );
      for (const b of bounded) {
        const cosine = exact.get(b.chunkId) ?? Number.NaN;
        expect(b.lower).toBeLessThanOrEqual(cosine);
        expect(b.upper).toBeGreaterThanOrEqual(cosine);
        expect(b.documentId).toBe(all[Number(b.chunkId.slice(1))]?.documentId);
      }
      // The search's answer is among them.
      const ids = new Set(bounded.map((b) => b.chunkId));
      for (const c of index.search(q, {}, 10)) expect(ids.has(c.chunkId)).toBe(true);
    }
  });

  it('gives similarities of given chunks, and forgets deleted documents (with compaction)', () => {
    const q = queries[1]!;
    const sims = index.similarities(q, ['c3', 'missing']);
    expect([...sims.keys()]).toEqual(['c3']);
    expect(sims.get('c3')).toBeCloseTo(bruteForce([all[3]!], q, 1)[0]!.score, 5);
    // 40 of 50 documents: past the compaction threshold.
    for (let d = 0; d < 40; d++) index.deleteDocument(`d${d}`);
    const left = all.filter((r) => Number(r.documentId.slice(1)) >= 40);
    expect(index.size).toBe(left.length);
    for (const query of queries.slice(0, 5)) {
      expect(index.search(query, {}, 50).map((c) => c.chunkId)).toEqual(
        bruteForce(left, query, 50).map((c) => c.chunkId),
      );
    }
    // Re-adding a chunk id replaces its row.
    index.add(table.put([{ ...all[45]!, vector: q }]));
    expect(index.search(q, {}, 1)[0]).toMatchObject({ chunkId: 'c45' });
    expect(index.size).toBe(left.length);
  });

  it('learns the table rowids its rows lacked (a snapshot being written from it is voided)', () => {
    const small = new VectorIndex(DIMS, table);
    small.add(table.put(all.slice(0, 10)));
    expect(small.rowidsUnknown()).toBe(true);
    const before = small.mutations;
    expect(small.learnRowid('c3', 103)).toBe(true);
    expect(small.learnRowid('c3', 999)).toBe(false);
    expect(small.learnRowid('missing', 1)).toBe(false);
    expect(small.mutations).toBe(before + 1);
    for (let i = 0; i < 10; i++) small.learnRowid(`c${i}`, 100 + i);
    expect(small.rowidsUnknown()).toBe(false);
    expect(Array.from(small.state().rowids ?? [])).toEqual(
      Array.from({ length: 10 }, (_, i) => 100 + i),
    );
  });
});

describe('the store and writes by another process', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    for (const app of apps.reverse()) await app.close(true);
  });

  it('sees chunks indexed and deleted through another connection to the same database', async () => {
    const a = await createTestApp();
    apps.push(a);
    const b = await createTestApp({ dir: a.dir }); // a second process on the same SQLite file
    apps.push(b);
    const ka = new KnowledgeClient(a);
    const kb = new KnowledgeClient({ ...b, key: a.key });
    const first = await ka.uploadOk('planets.md', '# Planets\n\nJupiter is the largest planet.');
    await ka.indexOk(first.id);
    const query = {
      query: 'bread dough rises in a warm oven',
      mode: 'semantic',
      topK: 5,
      minScore: -1,
    };
    // Keyword search has its own in-process index (keyword-index.ts), kept in step the same way.
    const words = { query: 'bread dough', mode: 'keyword', topK: 5, minScore: 0 };
    const before = await ka.hits(query);
    expect(before.map((i) => i.documentId)).toEqual([first.id]);
    expect(await ka.hits(words)).toEqual([]);

    const second = await kb.uploadOk(
      'bread.md',
      '# Bread\n\nKnead the bread dough and let it rise.',
    );
    await kb.indexOk(second.id);
    const after = await ka.hits(query);
    expect(after[0]?.documentId).toBe(second.id);
    expect((await ka.hits(words)).map((i) => i.documentId)).toEqual([second.id]);

    expect((await kb.delete(second.id)).json()).toEqual({ ok: true });
    const gone = await ka.hits(query);
    expect(gone.map((i) => i.documentId)).toEqual([first.id]);
    expect(await ka.hits(words)).toEqual([]);
  });

  it('catches up with another process by reloading only the documents it changed', async () => {
    const a = await createTestApp();
    apps.push(a);
    const b = await createTestApp({ dir: a.dir });
    apps.push(b);
    const ka = new KnowledgeClient(a);
    const kb = new KnowledgeClient({ ...b, key: a.key });
    const texts = [
      '# Planets\n\nJupiter is the largest planet; Saturn has rings.',
      '# Bread\n\nKnead the bread dough and let it rise in a warm oven.',
      '# Refunds\n\nRefunds are paid within fourteen days of a return.',
    ];
    const docs = [];
    for (const [i, text] of texts.entries()) {
      const doc = await ka.uploadOk(`d${i}.md`, text);
      await ka.indexOk(doc.id);
      docs.push(doc);
    }
    const queries = ['planet rings', 'bread oven', 'refund return days', 'warm days'];
    const search = (k: KnowledgeClient, mode: string) =>
      Promise.all(queries.map((query) => k.hits({ query, mode, topK: 10, minScore: -1 })));
    await search(ka, 'hybrid'); // both in-process indexes loaded in A
    // The store's in-process copies of its indexes (private; SQLite only): the same objects after
    // catching up, not reloads.
    const sqlite = a.ctx.database.driver === 'sqlite';
    const indexesOf = (app: TestApp) => {
      if (!sqlite) return [];
      const { copies } = (app.ctx.knowledge.retrieval as unknown as { store: object }).store as {
        copies: { keyword?: { index: object }; vectors: Map<string, { index: object }> };
      };
      return [copies.keyword?.index, ...[...copies.vectors.values()].map((l) => l.index)];
    };
    const before = indexesOf(a);
    expect(before).toHaveLength(sqlite ? 2 : 0);

    // B (another process on the same file) re-indexes one document, deletes one, adds one.
    await kb.indexOk(docs[0]!.id, { maxChars: 200 });
    expect((await kb.delete(docs[1]!.id)).json()).toEqual({ ok: true });
    const added = await kb.uploadOk('d3.md', '# Ovens\n\nA stone oven bakes bread evenly.');
    await kb.indexOk(added.id);

    const fresh = await createTestApp({ dir: a.dir }); // loads everything from the tables
    apps.push(fresh);
    const kf = new KnowledgeClient({ ...fresh, key: a.key });
    for (const mode of ['keyword', 'semantic', 'hybrid']) {
      expect(await search(ka, mode)).toEqual(await search(kf, mode));
    }
    const after = indexesOf(a);
    after.forEach((index, i) => {
      expect(index).toBe(before[i]);
    });
    expect((await ka.hits({ query: 'stone oven', mode: 'keyword' }))[0]?.documentId).toBe(added.id);
  });
});
