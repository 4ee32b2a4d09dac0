/**
 * Keyword and hybrid retrieval in seven languages through HTTP, on SQLite and (with
 * TEST_DATABASE_URL) PostgreSQL: an exact word or phrase of a document finds it, in scripts with
 * spaces (Korean, Arabic, Russian, German) and without (Chinese, Japanese, Thai: segment.ts),
 * and the hit's highlights mark it.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up as segmentKeywords } from '../../../src/db/migrations/0013_segmented_keywords.js';
import { backfill as backfillPostings } from '../../../src/db/migrations/0015_postings_and_key_generation.js';
import { up as identifierKeywords } from '../../../src/db/migrations/0018_identifier_keywords.js';
import { bearer, type TestApp } from '../../helpers.js';
import { KnowledgeClient, knowledgeApp, type DocumentBody } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
const ids: Record<string, string> = {};

/** Per language: a document, and queries (a word, a phrase) with the text each must mark. */
const LANGUAGES: Record<string, { text: string; queries: [string, string][] }> = {
  zh: {
    text: '# 机器学习\n\n我们的训练数据集很大，模型在训练数据上学习。数据清洗是关键步骤。',
    queries: [
      ['训练数据', '训练数据'],
      ['数据清洗', '数据清洗'],
    ],
  },
  ja: {
    text: '# 機械学習\n\n東京都に住んでいる学生です。機械学習のデータを集めています。',
    queries: [
      ['データ', 'データ'],
      ['機械学習', '機械学習'],
    ],
  },
  ko: {
    text: '# 한국어 문서\n\n우리는 한국어 데이터를 사용하여 모델을 학습합니다. 검색 품질이 중요합니다.',
    queries: [
      ['검색', '검색'],
      ['한국어 데이터를', '한국어'],
    ],
  },
  th: {
    text: '# ภาษาไทย\n\nภาษาไทยเป็นภาษาที่สวยงาม ระบบค้นหาข้อมูลทำงานได้ดี',
    queries: [
      ['สวยงาม', 'สวยงาม'],
      ['ภาษาไทย', 'ภาษาไทย'],
    ],
  },
  ar: {
    text: '# البيانات\n\nتستخدم الشركة قاعدة البيانات لتخزين المعلومات. البحث في النصوص العربية مهم.',
    queries: [
      ['المعلومات', 'المعلومات'],
      ['قاعدة البيانات', 'قاعدة'],
    ],
  },
  ru: {
    text: '# Данные\n\nБольшие данные требуют быстрой обработки. Поисковая система находит документы.',
    queries: [
      ['обработки', 'обработки'],
      ['поисковая система', 'Поисковая'],
    ],
  },
  de: {
    text: '# Straßenbahn\n\nDie Straßenbahn fährt durch die Innenstadt. Größere Fahrzeuge brauchen breitere Gleise.',
    queries: [
      ['Innenstadt', 'Innenstadt'],
      ['Größere Fahrzeuge', 'Größere'],
    ],
  },
};

interface Hit {
  documentId: string;
  content: string;
  highlights: { start: number; end: number }[];
}

beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
  // An English document too: every query must find its own language's document only.
  const en = await k.uploadOk('en.md', '# Notes\n\nThe quarterly report lists revenue and costs.');
  await k.indexOk(en.id);
  for (const [lang, { text }] of Object.entries(LANGUAGES)) {
    if (['zh', 'ko', 'ar', 'de'].includes(lang)) {
      // Uploaded, then indexed.
      const doc = await k.uploadOk(`${lang}.md`, text);
      await k.indexOk(doc.id);
      ids[lang] = doc.id;
    } else {
      // Text ingest, indexed on creation.
      const res = await t.app.inject({
        method: 'POST',
        url: k.url('/documents/text'),
        headers: bearer(t.key),
        payload: { name: `${lang}.md`, text, index: true },
      });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json<DocumentBody>().id;
      expect((await k.waitFor(id, ['indexed', 'failed'])).status).toBe('indexed');
      ids[lang] = id;
    }
  }
}, 120_000); // eight documents indexed: slow on a busy machine

afterAll(async () => {
  await t.close();
});

async function hits(query: string, mode: string, topK = 5): Promise<Hit[]> {
  const res = await k.retrieve({ query, mode, topK });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ items: Hit[] }>().items;
}

const marked = (hit: Hit) => hit.highlights.map((h) => hit.content.slice(h.start, h.end));

describe.each(Object.keys(LANGUAGES))('%s', (lang) => {
  it('finds the document by an exact word or phrase, keyword and hybrid, and marks it', async () => {
    for (const [query, mark] of LANGUAGES[lang]?.queries ?? []) {
      const keyword = await hits(query, 'keyword');
      expect(
        keyword.map((h) => h.documentId),
        query,
      ).toEqual([ids[lang]]);
      expect(marked(keyword[0] as Hit), query).toContain(mark);
      // Found by hybrid retrieval too, marked. Its rank among these few documents is the
      // static model's (English only) cosine: noise for other languages (README).
      const hybrid = await hits(query, 'hybrid', 10);
      const found = hybrid.find((h) => h.documentId === ids[lang]);
      expect(found, query).toBeDefined();
      expect(marked(found as Hit), query).toContain(mark);
    }
  });
});

describe('a segmented query word', () => {
  it('matches all of its words (训练数据: 训练 and 数据), not one of them', async () => {
    const other = await k.uploadOk('zh2.md', '# 说明\n\n数据很重要。');
    await k.indexOk(other.id);
    try {
      const all = await hits('训练数据', 'keyword');
      expect(all.map((h) => h.documentId)).toEqual([ids.zh]);
      const one = await hits('数据', 'keyword');
      expect(one.map((h) => h.documentId).sort()).toEqual([ids.zh, other.id].sort());
      // Two query words: either may match (OR), the one with both first.
      const either = await hits('训练数据 重要', 'keyword');
      expect(either.map((h) => h.documentId)).toEqual([ids.zh, other.id]);
    } finally {
      expect((await k.delete(other.id)).statusCode).toBe(200);
    }
  });
});

describe('Korean particles', () => {
  it('a noun finds the words that carry it with a particle; a word with a particle finds the noun', async () => {
    // 데이터를 (data + object particle), 모델을, 품질이 are in the Korean document only.
    for (const query of ['데이터', '모델', '품질', '데이터가', '모델의']) {
      for (const mode of ['keyword', 'hybrid']) {
        const found = await hits(query, mode, 10);
        expect(
          found.some((h) => h.documentId === ids.ko),
          `${query} ${mode}`,
        ).toBe(true);
      }
    }
    expect((await hits('데이터', 'keyword'))[0]?.documentId).toBe(ids.ko);
  });
});

describe('highlights', () => {
  it('are in every mode: a semantic hit marks the query words it holds, or none', async () => {
    const semantic = await hits('quarterly revenue', 'semantic');
    const en = semantic.find((h) => h.content.includes('quarterly'));
    expect(en && marked(en)).toEqual(['quarterly', 'revenue']);
    for (const hit of semantic) expect(Array.isArray(hit.highlights)).toBe(true);
    const other = semantic.find((h) => !h.content.includes('quarterly'));
    if (other !== undefined) expect(other.highlights).toEqual([]);
    // Stemmed: "reports" marks "report".
    const keyword = await hits('reports', 'keyword');
    expect(marked(keyword[0] as Hit)).toEqual(['report']);
  });
});

describe('migration 0013 on PostgreSQL', () => {
  it('rebuilds the keyword rows and statistics of a document indexed unsegmented', async () => {
    if (t.ctx.database.driver !== 'postgres') return; // SQLite: keyword-index.test.ts
    const { db } = t.ctx.database;
    const doc = await k.uploadOk('old-zh.md', '# 旧文档\n\n深度学习框架很流行。');
    await k.indexOk(doc.id);
    /** BM25 statistics as stored, and as the rows say they should be. */
    const statistics = async () => {
      const stored = await sql<{ chunks: number; tokens: number; terms: string }>`
        select chunks::int, tokens::int, (select string_agg(lexeme || ':' || chunks, ' ' order by lexeme)
          from knowledge_fts_terms) as terms from knowledge_fts_stats`.execute(db);
      const counted = await sql<{ chunks: number; tokens: number; terms: string }>`
        select count(*)::int as chunks, sum(token_count)::int as tokens,
          (select string_agg(lexeme || ':' || n, ' ' order by lexeme) from (
            select u.lexeme, count(*) as n from knowledge_chunks_fts f
            cross join lateral unnest(tsvector_to_array(f.terms)) as u(lexeme) group by u.lexeme) x) as terms
        from knowledge_chunks_fts`.execute(db);
      return { stored: stored.rows[0], counted: counted.rows[0] };
    };
    const fresh = await statistics();
    expect(fresh.stored).toEqual(fresh.counted);
    // As the previous build indexed it: the run 深度学习框架很流行 one token (consistent statistics).
    await sql`insert into knowledge_fts_terms (lexeme, chunks)
      select u.lexeme, -count(*) from knowledge_chunks_fts f
      cross join lateral unnest(tsvector_to_array(f.terms)) as u(lexeme)
      where f.document_id = ${doc.id} group by u.lexeme
      on conflict (lexeme) do update set chunks = knowledge_fts_terms.chunks + excluded.chunks`.execute(
      db,
    );
    await sql`delete from knowledge_fts_terms where chunks <= 0`.execute(db);
    await sql`update knowledge_chunks_fts set terms = array_to_tsvector(array['深度学习框架很流行', '旧文档'])
      where document_id = ${doc.id}`.execute(db);
    await sql`insert into knowledge_fts_terms (lexeme, chunks)
      select u.lexeme, count(*) from knowledge_chunks_fts f
      cross join lateral unnest(tsvector_to_array(f.terms)) as u(lexeme)
      where f.document_id = ${doc.id} group by u.lexeme
      on conflict (lexeme) do update set chunks = knowledge_fts_terms.chunks + excluded.chunks`.execute(
      db,
    );
    expect(await hits('深度学习', 'keyword')).toEqual([]);

    // In an upgrade 0013 runs before 0015, whose backfill builds the postings from the rows 0013
    // wrote, and 0018 (identifier tokens) after both: the same order here.
    const migrate = async () => {
      await segmentKeywords(db as unknown as Kysely<unknown>, 'postgres');
      await backfillPostings(db as unknown as Kysely<unknown>);
      await identifierKeywords(db as unknown as Kysely<unknown>, 'postgres');
    };
    await migrate();
    const after = await statistics();
    expect(after).toEqual(fresh);
    expect((await hits('深度学习', 'keyword')).map((h) => h.documentId)).toEqual([doc.id]);
    // Nothing to change the second time.
    await migrate();
    expect(await statistics()).toEqual(fresh);
  });
});
