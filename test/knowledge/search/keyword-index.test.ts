/**
 * The in-process keyword index (keyword-index.ts, fts5-lexer.ts) against FTS5 itself, on the
 * real `knowledge_chunks_fts` table of a migrated database: the same lexemes for any text, and
 * the same ranking and bm25() scores for any corpus, query, scope filter and deletions.
 */
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import fc from 'fast-check';
import { keywordText } from '../../../src/knowledge/search/keyword-text.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteDatabase } from '../../../src/db/database.js';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import {
  Fts5Lexer,
  FTS5_TOKENIZE,
} from '../../../src/knowledge/search/sqlite/keyword/fts5-lexer.js';
import { queryWordGroups } from '../../../src/knowledge/search/query-terms.js';
import { segmentWords } from '../../../src/knowledge/search/segment.js';
import { buildFtsQuery } from '../../../src/knowledge/search/sqlite/keyword/fts-query.js';
import { KeywordIndex } from '../../../src/knowledge/search/sqlite/keyword/keyword-index.js';

interface Ranked {
  rowid: number;
  score: number;
}
import { tempDir } from '../../helpers.js';

let database: SqliteDatabase;
let db: BetterSqlite3.Database;
const lexer = new Fts5Lexer();

beforeAll(async () => {
  database = openSqlite(join(tempDir(), 'keyword.db'));
  const state = await migrate(database, MIGRATIONS);
  expect(state.status).toBe('ok');
  db = database.native;
  db.exec(
    `create virtual table temp.fts_instance using fts5vocab(main, knowledge_chunks_fts, instance)`,
  );
});

afterAll(async () => {
  await database.db.destroy();
  lexer.close();
});

beforeEach(() => {
  db.exec('delete from knowledge_chunks_fts');
});

/** The lexemes FTS5 indexes for each text (as the content column of the real table). */
function fts5Lexemes(texts: string[]): string[][] {
  db.exec('delete from knowledge_chunks_fts');
  const insert = db.prepare(
    `insert into knowledge_chunks_fts (rowid, chunk_id, document_id, document_name, section_path, content)
     values (?, '', '', '', '', ?)`,
  );
  texts.forEach((t, i) => insert.run(i + 1, t));
  const out = texts.map((): string[] => []);
  const rows = db
    .prepare(`select doc, term from temp.fts_instance order by doc, "offset"`)
    .raw()
    .all() as [number, string][];
  for (const [doc, term] of rows) out[doc - 1]?.push(term);
  db.exec('delete from knowledge_chunks_fts');
  return out;
}

/** Words that exercise the Porter rules (step 1 to 5 suffixes, y, double consonants). */
const STEMS = [
  'relat',
  'condit',
  'gener',
  'hop',
  'fil',
  'control',
  'troubl',
  'sky',
  'agre',
  'run',
  'ayy',
];
const SUFFIXES = [
  ...['', 's', 'es', 'ies', 'sses', 'ed', 'ing', 'eed', 'y', 'ly', 'ational', 'tional', 'enci'],
  ...['anci', 'izer', 'abli', 'alli', 'entli', 'eli', 'ousli', 'ization', 'ation', 'ator'],
  ...['alism', 'iveness', 'fulness', 'ousness', 'aliti', 'iviti', 'biliti', 'icate', 'ative'],
  ...['alize', 'iciti', 'ical', 'ful', 'ness', 'al', 'ance', 'ence', 'er', 'ic', 'able'],
  ...['ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive'],
  ...['ize', 'e', 'll', 'ement', 'ingly', 'edly'],
];
const english = fc
  .tuple(fc.constantFrom(...STEMS), fc.constantFrom(...SUFFIXES))
  .map(([a, b]) => a + b);
/** Letter soup biased to vowels and y: arbitrary shapes for the measure and cvc rules. */
const soup = fc.stringMatching(/^[aeiouyybcdlmnrstz]{1,16}(ed|ing)?$/);
/** Non-ASCII letters, digits, marks and separators of several scripts. */
const unicode = fc.constantFrom(
  ...['é', 'É', 'ß', 'µ', 'ſ', 'İ', 'ǅ', 'Ω', 'σ', 'ς', 'Ж', 'ё', 'ı', 'ﬁ', '中', '文', '٣', '²'],
  ...['\u0301', '\u0305', '\u200d', '\u00a0', '—', '’', '😀', '\ue000', 'Ⅻ', 'Å', 'ø', 'ž'],
);
const text = fc
  .array(
    fc.oneof(
      english,
      soup,
      unicode,
      fc.constantFrom(' ', ' ', '-', '.', "'", '_', '/', '9', 'X', 'A1', 'Running'),
      fc.stringMatching(/^[a-z]{60,70}$/),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

describe('Fts5Lexer', () => {
  it('uses the tokenizer of the migrated knowledge_chunks_fts table', () => {
    const ddl = db
      .prepare(`select sql from sqlite_master where name = 'knowledge_chunks_fts'`)
      .pluck()
      .get() as string;
    expect(ddl.replace(/\s+/g, ' ')).toContain(`tokenize = '${FTS5_TOKENIZE}'`);
  });

  it('gives FTS5 lexemes for any text: ASCII stemmed in process, the rest asked of FTS5', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 30 }), (texts) => {
        expect(lexer.lexemes(texts)).toEqual(fts5Lexemes(texts));
      }),
      { numRuns: 150 },
    );
  });

  it('gives FTS5 lexemes for segmented CJK and Thai text, and cuts their runs into words', () => {
    const cjk = fc
      .array(
        fc.oneof(
          fc.constantFrom(...CJK_WORDS),
          fc.constantFrom(' ', '', '。', '、', 'GPT', 'data', '42', '\u0301'),
          text,
        ),
        { maxLength: 20 },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.array(cjk, { minLength: 1, maxLength: 20 }), (texts) => {
        const segmented = texts.map(segmentWords);
        expect(lexer.lexemes(segmented)).toEqual(fts5Lexemes(segmented));
      }),
      { numRuns: 100 },
    );
    expect(lexer.lexemes([segmentWords('我们的训练数据集很大。GPT模型')])).toEqual([
      ['我们', '的', '训练', '数据', '集', '很大', 'gpt', '模型'],
    ]);
    expect(lexer.lexemes([segmentWords('東京都に住んでいる学生です')])[0]).toContain('学生');
    expect(lexer.lexemes([segmentWords('ภาษาไทยสวยงาม')])[0]).toEqual(['ภาษา', 'ไทย', 'สวยงาม']);
  });

  it('gives FTS5 lexemes for texts with their identifier tokens (keywordText)', () => {
    const identifiers = fc
      .array(
        fc.oneof(
          english,
          soup,
          fc.constantFrom('_', '::', '.', '-', '--', '/', ' ', 'Set', 'XMLParser', 'y', 'é', 'A1'),
        ),
        { maxLength: 30 },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(
        fc.array(fc.oneof(identifiers, text), { minLength: 1, maxLength: 20 }),
        (texts) => {
          const keyword = texts.map((x) => keywordText(x));
          expect(lexer.lexemes(keyword)).toEqual(fts5Lexemes(keyword));
        },
      ),
      { numRuns: 200 },
    );
    // The joined tokens the in-process lexer reads without FTS5, `y⁂y` among them.
    const joined = [keywordText('country-years asn1_der_decoding os.path.join x_yy_y')];
    expect(lexer.lexemes(joined)).toEqual(fts5Lexemes(joined));
  });

  it('stems every suffix combination as FTS5 does', () => {
    const words = STEMS.flatMap((s) => SUFFIXES.flatMap((a) => SUFFIXES.map((b) => s + a + b)));
    expect(lexer.lexemes(words)).toEqual(fts5Lexemes(words));
  });
});

/** Chinese, Japanese and Thai words and runs of them (no spaces: the segmenter cuts them). */
const CJK_WORDS = [
  ...['训练', '数据', '训练数据', '数据集', '机器学习', '模型', '我们的训练数据集很大', '的'],
  ...['東京', '東京都に住んでいる', 'データ', '学習', '機械学習のデータ', 'です'],
  ...['ภาษาไทย', 'ภาษา', 'สวยงาม', 'ภาษาไทยสวยงาม', 'ที่'],
];

// A corpus generator: documents with names and sections, content from a small vocabulary in
// inflected forms so that stems, repeats and every column weight matter.
const VOCABULARY = [
  ...['planet', 'planets', 'planetary', 'orbit', 'orbiting', 'orbital', 'star', 'stars'],
  ...['bread', 'breads', 'dough', 'oven', 'baking', 'baked', 'bake', 'refund', 'refunds'],
  ...['policy', 'policies', 'connect', 'connection', 'connected', 'runner', 'running', 'ran'],
  ...['the', 'of', 'and', 'a', 'is', 'café', 'naïve', 'µg', 'x', 'ox', 'big', 'data'],
  ...CJK_WORDS,
];
const word = fc.constantFrom(...VOCABULARY);
const sentence = fc.array(word, { minLength: 0, maxLength: 30 }).map((w) => w.join(' '));
const chunk = fc.record({ section: sentence, content: sentence });
const documentArb = fc.record({
  name: fc.array(word, { maxLength: 3 }).map((w) => `${w.join('-')}.md`),
  project: fc.constantFrom(null, 'p1', 'p2'),
  chunks: fc.array(chunk, { minLength: 1, maxLength: 8 }),
});
const query = fc.array(word, { minLength: 1, maxLength: 6 }).map((w) => w.join(' '));

interface Corpus {
  docs: { name: string; project: string | null; chunks: { section: string; content: string }[] }[];
  deleted: number[];
}

/** Writes the corpus to the FTS5 table and to a fresh index, then deletes the chosen documents. */
function load(corpus: Corpus, options: ConstructorParameters<typeof KeywordIndex>[0] = {}) {
  db.exec('delete from knowledge_chunks_fts');
  const index = new KeywordIndex(options);
  const insert = db.prepare(
    `insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content)
     values (?, ?, ?, ?, ?)`,
  );
  corpus.docs.forEach((doc, d) => {
    // As the store writes them: CJK and Thai runs cut into words (segment.ts).
    const texts = doc.chunks.flatMap((c) => [doc.name, c.section, c.content].map(segmentWords));
    const ids = lexer.tokenize(texts);
    const none = new Int32Array(0);
    index.add(
      doc.chunks.map((c, i) => {
        const rowid = Number(
          insert.run(
            `c${d}-${i}`,
            `d${d}`,
            segmentWords(doc.name),
            segmentWords(c.section),
            segmentWords(c.content),
          ).lastInsertRowid,
        );
        return {
          rowid,
          chunkId: `c${d}-${i}`,
          documentId: `d${d}`,
          projectId: doc.project,
          columns: [ids[3 * i] ?? none, ids[3 * i + 1] ?? none, ids[3 * i + 2] ?? none],
        };
      }),
    );
  });
  for (const d of new Set(corpus.deleted)) {
    if (d >= corpus.docs.length) continue;
    db.prepare('delete from knowledge_chunks_fts where document_id = ?').run(`d${d}`);
    index.deleteDocument(`d${d}`);
  }
  return index;
}

/** FTS5's ranking: rowid and minus bm25() with the store's weights, ties by rowid. */
function fts5Search(text: string, documents: string[] | null, limit: number): Ranked[] {
  const match = buildFtsQuery(text);
  if (match === null) return [];
  const scope = documents === null ? '' : ` and document_id in (select value from json_each(?))`;
  const params: unknown[] = [match, ...(documents === null ? [] : [JSON.stringify(documents)])];
  return db
    .prepare(
      `select rowid, -bm25(knowledge_chunks_fts, 0, 0, 1.5, 2.0, 1.0) as score
       from knowledge_chunks_fts where knowledge_chunks_fts match ?${scope}
       order by score desc, rowid limit ?`,
    )
    .all(...params, limit) as Ranked[];
}

/** The query's lexeme ids, a group per chosen word (-1 for a lexeme no text had). */
function phrases(text: string): number[][] {
  const groups = queryWordGroups(text);
  const words = lexer.lexemes(groups.flat());
  let at = 0;
  return groups.map((g) =>
    g.map(() => {
      const p = words[at++] ?? [];
      expect(p).toHaveLength(1);
      return lexer.idOf(p[0] ?? '');
    }),
  );
}

function expectSameRanking(actual: Ranked[], expected: Ranked[]): void {
  expect(actual.map((h) => h.rowid)).toEqual(expected.map((h) => h.rowid));
  if (actual.length > 0 && 'chunkId' in (actual[0] ?? {})) {
    // Each hit names its row's chunk.
    const chunkOf = db.prepare('select chunk_id from knowledge_chunks_fts where rowid = ?').pluck();
    for (const h of actual) expect((h as { chunkId?: string }).chunkId).toBe(chunkOf.get(h.rowid));
  }
  actual.forEach((h, i) => {
    const e = expected[i]?.score ?? Number.NaN;
    expect(Math.abs(h.score - e)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(e)));
  });
}

describe('KeywordIndex', () => {
  it('ranks and scores exactly as FTS5 bm25(), with scope filters and deletions', () => {
    const corpusArb = fc.record({
      docs: fc.array(documentArb, { minLength: 1, maxLength: 12 }),
      deleted: fc.array(fc.nat(11), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(corpusArb, fc.array(query, { minLength: 1, maxLength: 5 }), (corpus, queries) => {
        const index = load(corpus);
        const live = corpus.docs.map((d, i) => ({ ...d, id: `d${i}` }));
        for (const q of queries) {
          for (const limit of [3, 100]) {
            expectSameRanking(index.search(phrases(q), {}, limit), fts5Search(q, null, limit));
            const inP1 = live.filter((d) => d.project === 'p1').map((d) => d.id);
            expectSameRanking(
              index.search(phrases(q), { projectId: 'p1' }, limit),
              fts5Search(q, inP1, limit),
            );
            expectSameRanking(
              index.search(phrases(q), { documents: new Set(['d0']) }, limit),
              fts5Search(q, ['d0'], limit),
            );
            expectSameRanking(
              index.search(phrases(q), { documents: new Set(['d0']), projectId: 'p2' }, limit),
              fts5Search(q, live[0]?.project === 'p2' ? ['d0'] : [], limit),
            );
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('stays exact after compaction drops thousands of deleted rows', () => {
    const random = fc.sample(documentArb, { numRuns: 700, seed: 7 });
    const corpus: Corpus = {
      docs: random,
      deleted: random.map((_, i) => i).filter((i) => i % 3 !== 0),
    };
    const index = load(corpus);
    expect(index.size).toBe(
      db.prepare('select count(*) from knowledge_chunks_fts').pluck().get() as number,
    );
    for (const q of ['planet orbit', 'bread baking oven refund', 'café naïve µg', 'the of']) {
      expectSameRanking(index.search(phrases(q), {}, 50), fts5Search(q, null, 50));
    }
  });

  it('counts a query word twice when two words share its stem, as FTS5 does', () => {
    const index = load({
      docs: [
        { name: 'a.md', project: null, chunks: [{ section: '', content: 'running fast' }] },
        { name: 'b.md', project: null, chunks: [{ section: '', content: 'slow walk' }] },
        { name: 'c.md', project: null, chunks: [{ section: '', content: 'walk run' }] },
      ],
      deleted: [],
    });
    const q = 'run running';
    expect(phrases(q)).toEqual([[lexer.idOf('run')], [lexer.idOf('run')]]);
    const hits = index.search(phrases(q), {}, 10);
    expectSameRanking(hits, fts5Search(q, null, 10));
    const single = index.search(phrases('run'), {}, 10);
    expect(hits[0]?.score).toBeCloseTo(2 * (single[0]?.score ?? 0), 12);
  });
});

describe('pruned keyword search (MaxScore)', () => {
  // Common words in most chunks, rare ones in few: the case pruning is for.
  const COMMON = ['the', 'of', 'and', 'a'];
  const RARE = [
    'planet',
    'planets',
    'orbit',
    'bread',
    'dough',
    'oven',
    'refund',
    'refunds',
    'data',
  ];
  const words = (from: string[], min: number, max: number) =>
    fc.array(fc.constantFrom(...from), { minLength: min, maxLength: max });
  const text = fc
    .tuple(words(COMMON, 1, 12), words(RARE, 0, 2), fc.nat())
    .map(([common, rare, at]) => {
      const all = [...common];
      all.splice(at % (all.length + 1), 0, ...rare);
      return all.join(' ');
    });
  const skewed = fc.record({
    docs: fc.array(
      fc.record({
        name: fc.constantFrom('a.md', 'the-planet.md'),
        project: fc.constantFrom(null, 'p1'),
        chunks: fc.array(fc.record({ section: text, content: text }), {
          minLength: 1,
          maxLength: 30,
        }),
      }),
      { minLength: 1, maxLength: 10 },
    ),
    deleted: fc.array(fc.nat(9), { maxLength: 2 }),
  });
  const queries = fc.array(words([...COMMON, ...RARE], 2, 6), { minLength: 1, maxLength: 4 });

  it('ranks and scores as scoring every row does, bit for bit, and as FTS5 does', () => {
    let skipped = 0;
    fc.assert(
      fc.property(skewed, queries, (corpus, qs) => {
        const every = load(corpus, { prune: false });
        const pruned = load(corpus, { skipEvery: 2 });
        const live = corpus.docs.map((d, i) => ({ ...d, id: `d${i}` }));
        const inP1 = live.filter((d) => d.project === 'p1').map((d) => d.id);
        for (const q of qs.map((w) => w.join(' '))) {
          for (const limit of [1, 3, 10]) {
            for (const [scope, documents] of [
              [{}, null],
              [{ projectId: 'p1' }, inP1],
            ] as const) {
              const got = pruned.search(phrases(q), scope, limit);
              const want = every.search(phrases(q), scope, limit);
              expect(got.map((h) => [h.rowid, h.score])).toEqual(
                want.map((h) => [h.rowid, h.score]),
              );
              expectSameRanking(got, fts5Search(q, documents, limit));
            }
          }
        }
        skipped += pruned.memoryReport()['keyword skip entries'] ?? 0;
      }),
      { numRuns: 80 },
    );
    // The common words' lists were looked in, not walked: the pruning took place.
    expect(skipped).toBeGreaterThan(0);
  });

  it('scores chosen chunks as the search scores them, bit for bit (scoresOf)', () => {
    let scored = 0;
    fc.assert(
      fc.property(skewed, queries, fc.array(fc.nat(), { maxLength: 40 }), (corpus, qs, picks) => {
        const index = load(corpus, { skipEvery: 2 });
        // Any chunks, of deleted documents and unknown ones too, in any order.
        const all = corpus.docs.flatMap((doc, d) =>
          doc.chunks.map((_, i) => ({ chunkId: `c${d}-${i}`, documentId: `d${d}` })),
        );
        const chosen = picks.map(
          (p) => all[p % (all.length + 1)] ?? { chunkId: 'c99-0', documentId: 'd99' },
        );
        for (const q of qs.map((w) => w.join(' '))) {
          const single = phrases(q);
          // The first two words as one all-of group too (a segmented CJK word's lexemes).
          const grouped = [[...(single[0] ?? []), ...(single[1] ?? [])], ...single.slice(2)];
          for (const groups of [single, grouped]) {
            const want = new Map(
              index.search(groups, {}, 100_000).map((h) => [h.chunkId, h.score]),
            );
            const got = index.scoresOf(groups, chosen);
            for (const { chunkId } of chosen) expect(got.get(chunkId)).toBe(want.get(chunkId));
            expect([...got.keys()].every((id) => want.has(id))).toBe(true);
            scored += got.size;
          }
        }
      }),
      { numRuns: 80 },
    );
    expect(scored).toBeGreaterThan(100);
  });

  it('stays exact as lists grow past their skip entries and after a compaction', async () => {
    const [first, ...more] = fc.sample(skewed, { numRuns: 40, seed: 11 });
    const every = load(first!, { prune: false });
    const pruned = load(first!, { skipEvery: 2 });
    // Every long list's entries made up front (as after a start), sized to what they hold: the
    // rows added below extend them past that size.
    let slices = 0;
    await pruned.prepareLists(() => {
      slices++;
      return Promise.resolve();
    });
    expect(slices).toBeGreaterThan(0);
    const prepared = pruned.memoryReport()['keyword skip entries'] ?? 0;
    expect(prepared).toBeGreaterThan(0);
    // The same entries saved and loaded (as a snapshot keeps them): views of the saved arrays,
    // copied out when their lists grow.
    const state = pruned.state();
    const ids = Int32Array.from(state.postingLengths, (_, id) => id);
    const restored = KeywordIndex.fromState(state, ids, false, { skipEvery: 2 });
    expect(restored.state().skips).toEqual(state.skips);
    expect(state.skips?.table.length).toBeGreaterThan(0);
    let rowid = 1_000_000;
    const add = (corpus: Corpus, d: number) => {
      for (const doc of corpus.docs) {
        const ids = lexer.tokenize(doc.chunks.flatMap((c) => [doc.name, c.section, c.content]));
        const none = new Int32Array(0);
        const rows = doc.chunks.map((_, i) => ({
          rowid: rowid++,
          chunkId: `x${rowid}`,
          documentId: `x${d}`,
          projectId: doc.project,
          columns: [ids[3 * i] ?? none, ids[3 * i + 1] ?? none, ids[3 * i + 2] ?? none] as const,
        }));
        for (const index of [every, pruned, restored]) index.add(rows);
      }
    };
    const same = () => {
      for (const q of ['the planet', 'a of bread the', 'data and the of', 'oven dough a']) {
        const want = every.search(phrases(q), {}, 5).map((h) => [h.rowid, h.score]);
        for (const index of [pruned, restored]) {
          expect(index.search(phrases(q), {}, 5).map((h) => [h.rowid, h.score])).toEqual(want);
        }
      }
    };
    same();
    more.forEach((corpus, d) => {
      add(corpus, d);
      same();
    });
    const before = pruned.memoryReport()['keyword skip entries'] ?? 0;
    expect(before).toBeGreaterThan(prepared);
    // Most documents deleted: the lists are compacted (re-encoded), their entries dropped.
    for (let d = 0; d < more.length - 2; d++)
      for (const i of [every, pruned, restored]) i.deleteDocument(`x${d}`);
    expect(pruned.memoryReport()['keyword skip entries']).toBeLessThan(before);
    same();
  });
});

describe('CJK and Thai words', () => {
  it('finds a CJK query word inside a run, all of its words in one chunk, as FTS5 does', () => {
    const index = load({
      docs: [
        {
          name: '说明.md',
          project: null,
          chunks: [{ section: '', content: '我们的训练数据集很大' }],
        },
        { name: 'b.md', project: null, chunks: [{ section: '', content: '数据很重要' }] },
        { name: 'c.md', project: null, chunks: [{ section: '', content: 'ภาษาไทยสวยงาม' }] },
      ],
      deleted: [],
    });
    for (const q of ['训练数据', '数据', '训练数据 ภาษาไทย', 'สวยงาม', '训练模型']) {
      expectSameRanking(index.search(phrases(q), {}, 10), fts5Search(q, null, 10));
    }
    const rowOf = (q: string) => index.search(phrases(q), {}, 10).map((h) => h.chunkId);
    // All of 训练 and 数据: only the first chunk (the second has 数据 alone).
    expect(rowOf('训练数据')).toEqual(['c0-0']);
    expect(rowOf('数据').sort()).toEqual(['c0-0', 'c1-0']);
    expect(rowOf('训练模型')).toEqual([]);
    expect(rowOf('ภาษาไทย')).toEqual(['c2-0']);
  });
});

describe('migration 0007 and the store on existing chunks', () => {
  it('records the FTS rowid of every existing chunk; the store then searches and deletes by it', async () => {
    const old = openSqlite(join(tempDir(), 'old.db'));
    try {
      expect((await migrate(old, MIGRATIONS.slice(0, 6))).status).toBe('ok');
      const now = new Date().toISOString();
      const insertDoc = old.native.prepare(
        `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id, project_key,
           version, status, checksum, size_bytes, file_path, created_at, updated_at)
         values (?, ?, 'md', 'text/markdown', 'upload', null, '', 1, 'indexed', ?, 1, 'x', ?, ?)`,
      );
      const insertChunk = old.native.prepare(
        `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content,
           token_estimate, metadata, embedding_model, embedding_dimensions, content_hash, created_at)
         values (?, ?, ?, '', null, ?, 1, '{}', 'm', 1, 'h', ?)`,
      );
      const insertFts = old.native.prepare(
        `insert into knowledge_chunks_fts (rowid, chunk_id, document_id, document_name, section_path, content)
         values (?, ?, ?, ?, '', ?)`,
      );
      const contents = ['orbiting planets', 'baking bread', 'planets and stars', 'refund policy'];
      for (const d of ['a', 'b']) insertDoc.run(d, `${d}.md`, d, now, now);
      contents.forEach((content, i) => {
        const doc = i < 2 ? 'a' : 'b';
        insertChunk.run(`c${i}`, doc, i, content, now);
        // FTS rowids unrelated to the chunks' own rowids, as an old database may have them.
        insertFts.run(100 - 7 * i, `c${i}`, doc, `${doc}.md`, content);
      });

      expect((await migrate(old, MIGRATIONS)).status).toBe('ok');
      const rows = old.native
        .prepare(
          `select c.id, c.fts_rowid, f.chunk_id from knowledge_chunks c
           left join knowledge_chunks_fts f on f.rowid = c.fts_rowid order by c.id`,
        )
        .all() as { id: string; fts_rowid: number; chunk_id: string }[];
      expect(rows.map((r) => [r.id, r.fts_rowid, r.chunk_id])).toEqual(
        contents.map((_, i) => [`c${i}`, 100 - 7 * i, `c${i}`]),
      );

      const { SqliteChunkStore } =
        await import('../../../src/knowledge/search/sqlite/sqlite-chunk-store.js');
      const store = new SqliteChunkStore(old.native);
      expect(
        store
          .keywordSearch('planet', {}, 10)
          .map((c) => c.chunkId)
          .sort(),
      ).toEqual(['c0', 'c2']);
      expect(await store.deleteDocument('b')).toBe(true);
      expect(store.keywordSearch('planet', {}, 10).map((c) => c.chunkId)).toEqual(['c0']);
      const left = old.native
        .prepare('select chunk_id from knowledge_chunks_fts order by chunk_id')
        .pluck()
        .all();
      expect(left).toEqual(['c0', 'c1']);
      // From 0007 on, changes are logged per document: b's chunks were deleted.
      const changes = old.native
        .prepare('select document_id from knowledge_search_changes order by document_id')
        .pluck()
        .all();
      expect(changes).toEqual(['b']);
    } finally {
      await old.db.destroy();
    }
  });
});

describe('migration 0013', () => {
  it('segments the keyword rows of CJK and Thai chunks indexed before; the store then finds them', async () => {
    const old = openSqlite(join(tempDir(), 'old-cjk.db'));
    try {
      const before = MIGRATIONS.findIndex((m) => m.name === '0013_segmented_keywords');
      expect((await migrate(old, MIGRATIONS.slice(0, before))).status).toBe('ok');
      const now = new Date().toISOString();
      old.native
        .prepare(
          `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id, project_key,
             version, status, checksum, size_bytes, file_path, created_at, updated_at)
           values ('a', '说明.md', 'md', 'text/markdown', 'upload', null, '', 1, 'indexed', 'a', 1, 'x', ?, ?)`,
        )
        .run(now, now);
      const contents = ['我们的训练数据集很大', 'plain English text', 'ภาษาไทยสวยงาม'];
      contents.forEach((content, i) => {
        // As the previous build wrote them: the text as it is.
        const rowid = old.native
          .prepare(
            `insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content)
             values (?, 'a', '说明.md', '', ?)`,
          )
          .run(`c${i}`, content).lastInsertRowid;
        old.native
          .prepare(
            `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content,
               token_estimate, metadata, embedding_model, embedding_dimensions, content_hash, created_at, fts_rowid)
             values (?, 'a', ?, '', null, ?, 1, '{}', 'm', 1, 'h', ?, ?)`,
          )
          .run(`c${i}`, i, content, now, rowid);
      });
      expect((await migrate(old, MIGRATIONS)).status).toBe('ok');
      const fts = old.native
        .prepare('select content from knowledge_chunks_fts order by rowid')
        .pluck()
        .all();
      expect(fts).toEqual(contents.map(segmentWords));
      expect(fts[1]).toBe('plain English text');
      // The chunk rows keep their text.
      const chunks = old.native
        .prepare('select content from knowledge_chunks order by chunk_index')
        .pluck()
        .all();
      expect(chunks).toEqual(contents);
      const { SqliteChunkStore } =
        await import('../../../src/knowledge/search/sqlite/sqlite-chunk-store.js');
      const store = new SqliteChunkStore(old.native);
      expect(store.keywordSearch('训练数据', {}, 10).map((c) => c.chunkId)).toEqual(['c0']);
      expect(store.keywordSearch('สวยงาม', {}, 10).map((c) => c.chunkId)).toEqual(['c2']);
      expect(store.keywordSearch('说明', {}, 10)).toHaveLength(3);
    } finally {
      await old.db.destroy();
    }
  });
});
