/**
 * The keyword index's posting lists as bytes (keyword-postings.ts, keyword-store.ts): any list
 * round-trips through its encoding, and an index that went through adds, deletes, re-adds,
 * compaction and a snapshot (written to a file and read back) holds exactly the postings of its
 * live rows and scores bit for bit as an index built from those rows alone.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Fts5Lexer } from '../../../src/knowledge/search/sqlite/keyword/fts5-lexer.js';
import {
  keywordFromSnapshot,
  keywordSections,
} from '../../../src/knowledge/search/sqlite/copies/snapshots.js';
import {
  KeywordIndex,
  type KeywordRow,
} from '../../../src/knowledge/search/sqlite/keyword/keyword-index.js';
import { listOf } from '../../../src/knowledge/search/sqlite/keyword/keyword-store.js';
import {
  decodePostings,
  encodePostings,
  MAX_ROWS,
} from '../../../src/knowledge/search/sqlite/keyword/keyword-postings.js';
import { PostingLists } from '../../../src/knowledge/search/sqlite/keyword/posting-lists.js';
import {
  readSnapshot,
  writeSnapshot,
} from '../../../src/knowledge/search/sqlite/copies/snapshot-file.js';
import { tempDir } from '../../helpers.js';

/** Ascending rows from gaps, each with a count (doubled weighted counts are 1 … 0xffff). */
const postingList = fc
  .array(
    fc.tuple(
      fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 2 ** 21 })),
      fc.oneof(fc.constant(2), fc.integer({ min: 1, max: 0xffff })),
    ),
    { maxLength: 200 },
  )
  .map((pairs) => {
    const rows: number[] = [];
    const counts: number[] = [];
    let row = -1;
    for (const [gap, count] of pairs) {
      row += gap;
      if (row >= MAX_ROWS) break;
      rows.push(row);
      counts.push(count);
    }
    return { rows, counts };
  });

describe('posting list bytes', () => {
  it('decode(encode(list)) is the list, for any gaps and counts', () => {
    fc.assert(
      fc.property(postingList, (list) => {
        expect(decodePostings(encodePostings(list.rows, list.counts))).toEqual(list);
      }),
      { numRuns: 300 },
    );
  });

  it('takes one byte for a posting with a small gap and the count 2, and keeps the edges', () => {
    expect(encodePostings([0, 1, 2, 40], [2, 2, 2, 2])).toHaveLength(4);
    const edges = { rows: [0, 127, MAX_ROWS - 1], counts: [1, 0xffff, 3] };
    expect(decodePostings(encodePostings(edges.rows, edges.counts))).toEqual(edges);
    expect(() => encodePostings([3, 3], [2, 2])).toThrow(RangeError);
    expect(() => encodePostings([MAX_ROWS], [2])).toThrow(RangeError);
  });
});

describe('posting lists in one arena', () => {
  type ListOp =
    { append: number; gap: number; doubled: number } | { repack: 'tight' | 'room' | 'if sparse' };
  const listOp: fc.Arbitrary<ListOp> = fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({
        append: fc.nat(15),
        gap: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 2 ** 20 })),
        doubled: fc.oneof(fc.constant(2), fc.integer({ min: 1, max: 0xffff })),
      }),
    },
    { weight: 1, arbitrary: fc.record({ repack: fc.constantFrom('tight', 'room', 'if sparse') }) },
  );

  it('every list decodes to what was appended to it, through moves, repacks and a small arena', () => {
    fc.assert(
      fc.property(fc.array(listOp, { maxLength: 400 }), fc.nat(64), (ops, minArena) => {
        const lists = new PostingLists(minArena);
        lists.reserve(16);
        const model = Array.from({ length: 16 }, () => ({
          rows: [] as number[],
          counts: [] as number[],
        }));
        for (const o of ops) {
          if ('repack' in o) {
            if (o.repack === 'if sparse') lists.packIfSparse();
            else lists.repack(0, o.repack === 'room');
            continue;
          }
          const m = model[o.append]!;
          const row = (m.rows.at(-1) ?? -1) + o.gap;
          lists.append(o.append, row, o.doubled);
          m.rows.push(row);
          m.counts.push(o.doubled);
        }
        model.forEach((m, id) => {
          const start = lists.start[id]!;
          const used = lists.used[id]!;
          expect(start + used).toBeLessThanOrEqual(lists.end);
          expect(lists.end).toBeLessThanOrEqual(lists.bytes.length);
          expect(decodePostings(lists.bytes.subarray(start, start + used))).toEqual(m);
          expect(lists.last[id]).toBe(m.rows.at(-1) ?? -1);
        });
        // No two lists' bytes overlap.
        const spans = model
          .map((_, id) => [lists.start[id]!, lists.start[id]! + lists.room[id]!] as const)
          .filter(([a, b]) => b > a)
          .sort((a, b) => a[0] - b[0]);
        for (let i = 1; i < spans.length; i++) {
          expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('packs its lists tightly: a repack leaves no free byte, and the arena is one buffer', () => {
    const lists = new PostingLists();
    lists.reserve(1000);
    for (let row = 0; row < 50; row++)
      for (let id = 0; id < 1000; id += 1 + (row % 7)) lists.append(id, row, 2);
    lists.repack();
    expect(lists.bytes.length).toBe(lists.liveBytes());
    expect(lists.end).toBe(lists.bytes.length);
  });
});

/** An index whose compaction a test can run at any time. */
class Compactable extends KeywordIndex {
  compactNow(): void {
    this.compact();
  }
}

const LEXEMES = 12;
/** A row's columns: lexeme ids (some repeated, so counts other than 2 occur), short or long. */
const columns = fc.tuple(
  fc.array(fc.nat(LEXEMES - 1), { maxLength: 3 }),
  fc.array(fc.nat(LEXEMES - 1), { maxLength: 4 }),
  fc.array(fc.nat(LEXEMES - 1), { maxLength: 12 }),
);
type Op =
  | { add: number; rows: [number[], number[], number[]][]; project: string | null }
  | { remove: number }
  | { compact: true }
  | { snapshot: true };
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      add: fc.nat(5),
      rows: fc.array(columns, { minLength: 1, maxLength: 6 }),
      project: fc.constantFrom(null, 'p1'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ remove: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.constant({ compact: true as const }) },
  { weight: 1, arbitrary: fc.constant({ snapshot: true as const }) },
);

interface ModelRow {
  row: KeywordRow;
  live: boolean;
}

/** The rows of `model` that are live, in rowid order, in a fresh index. */
function freshIndex(model: ModelRow[]): KeywordIndex {
  const index = new KeywordIndex();
  index.add(model.filter((m) => m.live).map((m) => m.row));
  return index;
}

const lexer = new Fts5Lexer();
afterAll(() => {
  lexer.close();
});
/** Lexeme ids of this lexer for 0 … LEXEMES-1 (a snapshot maps lexemes through it). */
const ids = Array.from({ length: LEXEMES }, (_, i) => lexer.intern(`postingword${i}`));

/** The index through a snapshot file and back (snapshots.ts, snapshot-file.ts). */
async function throughSnapshot(index: KeywordIndex, path: string): Promise<KeywordIndex> {
  const state = index.state();
  const meta = { count: state.count, tokens: state.tokens };
  expect(await writeSnapshot(path, meta, keywordSections(state, lexer), () => true)).toBe(true);
  return keywordFromSnapshot(await readSnapshot(path), lexer);
}

describe('postings of an index that changes', () => {
  it('hold exactly the live rows, and score as a fresh index, after any adds, deletes, compactions and snapshots', async () => {
    const dir = tempDir();
    let files = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        let index: KeywordIndex = new Compactable();
        const model: ModelRow[] = [];
        let rowid = 0;
        for (const o of ops) {
          if ('add' in o) {
            // A re-add replaces the document's rows, as a re-index does.
            const documentId = `d${o.add}`;
            index.deleteDocument(documentId);
            for (const m of model) if (m.row.documentId === documentId) m.live = false;
            const rows = o.rows.map(([name, section, content], i): KeywordRow => ({
              rowid: (rowid += 1 + (i % 3)),
              chunkId: `${documentId}-${rowid}`,
              documentId,
              projectId: o.project,
              columns: [
                Int32Array.from(name, (l) => ids[l] ?? 0),
                Int32Array.from(section, (l) => ids[l] ?? 0),
                Int32Array.from(content, (l) => ids[l] ?? 0),
              ],
            }));
            index.add(rows);
            for (const row of rows) model.push({ row, live: true });
          } else if ('remove' in o) {
            index.deleteDocument(`d${o.remove}`);
            for (const m of model) if (m.row.documentId === `d${o.remove}`) m.live = false;
          } else if ('compact' in o) {
            if (index instanceof Compactable) index.compactNow();
          } else {
            index = await throughSnapshot(index, join(dir, `k${files++}.snapshot`));
          }
        }
        // Every list decodes to ascending rows; its live ones are the model's rows holding it.
        const state = index.state();
        state.postingLengths.forEach((_, id) => {
          const { rows, counts } = decodePostings(listOf(state, id));
          rows.forEach((r, i) => {
            expect(r).toBeLessThan(state.count);
            if (i > 0) expect(r).toBeGreaterThan(rows[i - 1] ?? -1);
          });
          if (rows.length > 0) expect(state.postingLast[id]).toBe(rows.at(-1));
          const live = rows.flatMap((r, i) =>
            state.alive[r] === 1 ? [[state.rowids[r], counts[i]]] : [],
          );
          const expected = model.flatMap(({ row, live: isLive }) => {
            if (!isLive) return [];
            let doubled = 0;
            row.columns.forEach((c, column) => {
              for (const l of c) if (l === id) doubled += [3, 4, 2][column] ?? 0;
            });
            return doubled === 0 ? [] : [[row.rowid, doubled]];
          });
          expect(live).toEqual(expected);
        });
        // Ranked and scored as an index of the live rows alone, bit for bit.
        const fresh = freshIndex(model);
        expect(index.size).toBe(fresh.size);
        for (const groups of [
          [[ids[0] ?? 0]],
          [[ids[1] ?? 0], [ids[2] ?? 0], [ids[1] ?? 0]],
          [[ids[3] ?? 0, ids[4] ?? 0]],
        ]) {
          for (const filter of [{}, { projectId: 'p1' }, { documents: new Set(['d1', 'd2']) }]) {
            expect(index.search(groups, filter, 5)).toEqual(fresh.search(groups, filter, 5));
            expect(index.maxScore(groups.flat())).toBe(fresh.maxScore(groups.flat()));
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('compacts on its own once a quarter of its rows are deleted, and stays exact', async () => {
    const index = new KeywordIndex();
    const rows = (d: number, n: number): KeywordRow[] =>
      Array.from({ length: n }, (_, i) => ({
        rowid: d * 1000 + i + 1,
        chunkId: `d${d}-${i}`,
        documentId: `d${d}`,
        projectId: null,
        columns: [
          new Int32Array(0),
          Int32Array.from([ids[i % 5] ?? 0]),
          Int32Array.from([ids[i % LEXEMES] ?? 0, ids[(i * 7) % LEXEMES] ?? 0, ids[0] ?? 0]),
        ],
      }));
    for (let d = 0; d < 8; d++) index.add(rows(d, 600));
    const before = index.memoryReport()['keyword postings'] ?? 0;
    for (const d of [1, 3, 5]) index.deleteDocument(`d${d}`);
    const state = index.state();
    // Compacted: no dead row is left, and the lists shrank.
    expect(state.count).toBe(5 * 600);
    expect([...state.alive].every((a) => a === 1)).toBe(true);
    expect(index.memoryReport()['keyword postings']).toBeLessThan(before);
    const fresh = new KeywordIndex();
    for (const d of [0, 2, 4, 6, 7]) fresh.add(rows(d, 600));
    const query = [[ids[3] ?? 0], [ids[5] ?? 0]];
    expect(index.search(query, {}, 20)).toEqual(fresh.search(query, {}, 20));
    const restored = await throughSnapshot(index, join(tempDir(), 'k.snapshot'));
    expect(restored.search(query, {}, 20)).toEqual(fresh.search(query, {}, 20));
  });
});
