/**
 * PostgresChunkStore: atomic commits and deletes, BM25 statistics, scope filters, the embedding
 * cache, keyword rankings equal to SqliteChunkStore's, vector recall under filters (exact search
 * for narrow scopes, iterative HNSW scans otherwise), one snapshot per search, no N+1 queries and
 * the pgvector error of the migration. Runs only when TEST_DATABASE_URL is set.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type PostgresDatabase } from '../../src/db/database.js';
import { backfill } from '../../src/db/migrations/0015_postings_and_key_generation.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { migrate } from '../../src/db/migrator.js';
import type { Db } from '../../src/db/schema.js';
import { openSqlite } from '../../src/db/sqlite.js';
import { chunkMarkdown } from '../../src/knowledge/chunking/markdown-chunker.js';
import { parseFilter } from '../../src/knowledge/filter/filter.js';
import type { Evidence, NewChunk, SearchRequest } from '../../src/knowledge/search/chunk-store.js';
import { seededRandom } from '../../src/knowledge/embeddings/static/sif.js';
import { PostgresChunkStore } from '../../src/knowledge/search/postgres/postgres-chunk-store.js';
import {
  graphOrder,
  graphQuery,
  parseCentre,
} from '../../src/knowledge/search/postgres/vector/vector-graph.js';
import { SqliteChunkStore } from '../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { tempDir } from '../helpers.js';
import { instrumentedPool, migratedDatabase, TEST_DATABASE_URL } from './pg.js';
import {
  addDocument,
  chunk,
  commit,
  cosine,
  DIMS,
  ids,
  keywordOnly,
  MODEL,
  near,
  newToken,
  randomVector,
  request,
  semanticOnly,
  type Doc,
} from './chunks.js';

/** The BM25 statistics equal a recount of the keyword rows. */
async function expectStatisticsExact(pool: pg.Pool): Promise<void> {
  const stored = await pool.query('select chunks, tokens from knowledge_fts_stats');
  const counted = await pool.query(
    'select count(*) as chunks, coalesce(sum(token_count), 0) as tokens from knowledge_chunks_fts',
  );
  expect(stored.rows).toEqual(counted.rows);
  const wrong = await pool.query(
    `select coalesce(t.lexeme, a.lexeme) as lexeme, t.chunks as stored, a.chunks as counted
     from knowledge_fts_terms t
     full join (
       select u.lexeme, count(*)::int as chunks
       from knowledge_chunks_fts f cross join lateral unnest(tsvector_to_array(f.terms)) as u(lexeme)
       group by u.lexeme
     ) a on a.lexeme = t.lexeme
     where t.chunks is distinct from a.chunks`,
  );
  expect(wrong.rows).toEqual([]);
}

describe.skipIf(TEST_DATABASE_URL === undefined)('PostgresChunkStore', () => {
  const fresh = migratedDatabase();
  let pool: pg.Pool;
  let db: Db;
  let store: PostgresChunkStore;
  const random = seededRandom(7);

  beforeAll(() => {
    ({ pool, db } = fresh.database);
    store = new PostgresChunkStore(pool);
  });

  describe('commits and deletes', () => {
    it('commits chunks, keyword rows and vectors together and finds them', async () => {
      const doc = await addDocument(db, 'solar-system.md', 'science');
      const chunks = [
        chunk(
          'Jupiter is the largest planet; its Great Red Spot is a storm.',
          randomVector(random),
          {
            sectionPath: 'Solar system > Planets',
            page: 3,
          },
        ),
        chunk('A supernova is the explosion of a massive star.', randomVector(random), {
          sectionPath: 'Solar system > Stars',
        }),
      ];
      expect(await commit(store, doc, chunks)).toBe('committed');

      const row = await db
        .selectFrom('knowledge_documents')
        .selectAll()
        .where('id', '=', doc.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        status: 'indexed',
        version: 1,
        index_token: null,
        embedding_model: MODEL,
        converter_command: 'test',
        markdown_path: `knowledge/${doc.id}/md`,
      });
      const listed = await store.listChunks(doc.id);
      expect(listed.map((c) => [c.id, c.chunk_index, c.section_path, c.page])).toEqual([
        [chunks[0]!.id, 0, 'Solar system > Planets', 3],
        [chunks[1]!.id, 1, 'Solar system > Stars', null],
      ]);
      expect(JSON.parse(listed[0]!.metadata)).toEqual({ startOffset: 0 });

      // "planets" finds "planet" (stemming); the hit carries its document.
      const hits = await store.search(
        request({ text: 'planets', filter: { documentId: doc.id } }),
        keywordOnly,
      );
      expect(ids(hits)).toEqual([chunks[0]!.id]);
      expect(hits[0]!.chunk).toMatchObject({
        document_name: 'solar-system.md',
        project_id: 'science',
        source: 'upload',
        content: chunks[0]!.content,
      });
      expect(hits[0]!.score).toBeGreaterThan(0);

      const semantic = await store.search(
        request({ vector: chunks[1]!.vector, filter: { documentId: doc.id } }),
        semanticOnly,
      );
      expect(ids(semantic)[0]).toBe(chunks[1]!.id);
      expect(semantic[0]!.score).toBeCloseTo(1, 5);
      await expectStatisticsExact(pool);
    });

    it('discards a run whose token is gone and writes nothing', async () => {
      const doc = await addDocument(db, 'stale.md');
      const outcome = await commit(store, { id: doc.id, token: 'superseded' }, [
        chunk('stale words', randomVector(random)),
      ]);
      expect(outcome).toBe('discarded');
      expect(await store.listChunks(doc.id)).toEqual([]);
      const row = await db
        .selectFrom('knowledge_documents')
        .select(['status', 'version', 'index_token'])
        .where('id', '=', doc.id)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status: 'indexing', version: 0, index_token: doc.token });
      const missing = await commit(store, { id: randomUUID(), token: 'x' }, [
        chunk('no such document', randomVector(random)),
      ]);
      expect(missing).toBe('discarded');
    });

    it('re-indexing replaces every row; deleting removes them; the statistics follow', async () => {
      const doc = await addDocument(db, 'replace.md', 'replace');
      const first = [
        chunk('zanzibar cloves and nutmeg', randomVector(random)),
        chunk('zanzibar spice markets', randomVector(random)),
      ];
      await commit(store, doc, first);
      const second = [chunk('quokka island wildlife', randomVector(random))];
      expect(await commit(store, await newToken(db, doc), second)).toBe('committed');
      expect((await store.listChunks(doc.id)).map((c) => c.id)).toEqual([second[0]!.id]);
      const vectorTables = (
        await pool.query<{ table_name: string }>('select table_name from knowledge_vector_tables')
      ).rows.map((r) => r.table_name);
      for (const table of ['knowledge_chunks_fts', ...vectorTables]) {
        const { rows } = await pool.query(`select chunk_id from ${table} where document_id = $1`, [
          doc.id,
        ]);
        expect(rows.map((r: { chunk_id: string }) => r.chunk_id)).toEqual([second[0]!.id]);
      }
      expect(await store.search(request({ text: 'zanzibar' }), keywordOnly)).toEqual([]);
      expect(ids(await store.search(request({ text: 'quokka' }), keywordOnly))).toEqual([
        second[0]!.id,
      ]);
      const version = await db
        .selectFrom('knowledge_documents')
        .select('version')
        .where('id', '=', doc.id)
        .executeTakeFirstOrThrow();
      expect(version.version).toBe(2);
      await expectStatisticsExact(pool);

      expect(await store.deleteDocument(doc.id)).toBe(true);
      expect(await store.deleteDocument(doc.id)).toBe(false);
      for (const table of ['knowledge_chunks', 'knowledge_chunks_fts', ...vectorTables]) {
        const { rows } = await pool.query(
          `select count(*)::int as n from ${table} where document_id = $1`,
          [doc.id],
        );
        expect(rows[0]).toEqual({ n: 0 });
      }
      expect(await store.search(request({ text: 'quokka' }), keywordOnly)).toEqual([]);
      await expectStatisticsExact(pool);
      // Lexemes no chunk holds any more are dropped, not kept at zero.
      const { rows } = await pool.query(
        "select count(*)::int as n from knowledge_fts_terms where chunks <= 0 or lexeme in ('quokka', 'zanzibar')",
      );
      expect(rows[0]).toEqual({ n: 0 });
    });
  });

  describe('searching', () => {
    let science: Doc;
    let kitchen: Doc;
    let failed: Doc;
    const base = randomVector(seededRandom(99));
    const scienceChunks = [
      chunk('Telescopes gather light from distant galaxies.', near(base, random, 0.3)),
      chunk('The telescope mirror was polished for months.', near(base, random, 0.3)),
    ];
    const kitchenChunks = [
      chunk('A telescope-shaped cake for the astronomy club.', near(base, random, 0.3)),
    ];
    const failedChunks = [chunk('Telescope notes of a failed re-index.', near(base, random, 0.01))];

    beforeAll(async () => {
      science = await addDocument(db, 'science.md', 'astro');
      kitchen = await addDocument(db, 'kitchen.md', 'cooking');
      failed = await addDocument(db, 'failed.md', 'astro');
      await commit(store, science, scienceChunks);
      await commit(store, kitchen, kitchenChunks);
      await commit(store, failed, failedChunks);
      // A re-index that failed leaves the chunks but the document is not searchable.
      await db
        .updateTable('knowledge_documents')
        .set({ status: 'failed' })
        .where('id', '=', failed.id)
        .execute();
    });

    it('searches indexed and indexing documents only', async () => {
      const keyword = ids(await store.search(request({ text: 'telescope' }), keywordOnly));
      const semantic = ids(await store.search(request({ vector: base }), semanticOnly));
      for (const found of [keyword, semantic]) {
        expect(found).toEqual(
          expect.arrayContaining([...scienceChunks, ...kitchenChunks].map((c) => c.id)),
        );
        expect(found).not.toContain(failedChunks[0]!.id);
      }
      // A document being re-indexed keeps answering with its current chunks.
      await newToken(db, kitchen);
      expect(ids(await store.search(request({ text: 'telescope' }), keywordOnly))).toContain(
        kitchenChunks[0]!.id,
      );
    });

    it('applies the projectId and documentId filters to both indexes', async () => {
      for (const rank of [keywordOnly, semanticOnly]) {
        const search = (filter: SearchRequest['filter']) =>
          store
            .search(request({ text: 'telescope', vector: base, filter }), rank)
            .then((hits) => ids(hits).sort());
        expect(await search({ projectId: 'astro' })).toEqual(scienceChunks.map((c) => c.id).sort());
        expect(await search({ projectId: 'cooking' })).toEqual([kitchenChunks[0]!.id]);
        expect(await search({ documentId: science.id })).toEqual(
          scienceChunks.map((c) => c.id).sort(),
        );
        expect(await search({ projectId: 'cooking', documentId: science.id })).toEqual([]);
        expect(await search({ projectId: 'nobody' })).toEqual([]);
      }
    });

    it('gives the cosine of every keyword candidate that has a vector of the model', async () => {
      let evidence: Evidence | undefined;
      await store.search(request({ text: 'telescope', vector: base, limit: 1 }), {
        rank: (e) => {
          evidence = e;
          return [];
        },
      });
      // The best keyword match, and the nearest chunk when it holds the word too.
      expect(evidence!.semantic).toHaveLength(1);
      const nearest = evidence!.semantic[0]!.chunkId;
      expect(evidence!.keyword.map((k) => k.chunkId)).toContain(nearest);
      expect(evidence!.keyword.length).toBeLessThanOrEqual(2);
      for (const c of [...evidence!.keyword, ...evidence!.semantic]) {
        const all = [...scienceChunks, ...kitchenChunks];
        const v = all.find((x) => x.id === c.chunkId)!.vector;
        expect(evidence!.cosine.get(c.chunkId)).toBeCloseTo(cosine(base, v), 5);
      }
      // Another model has no vectors: no semantic candidates, no cosines.
      await store.search(request({ text: 'telescope', vector: base, model: 'other' }), {
        rank: (e) => {
          evidence = e;
          return [];
        },
      });
      expect(evidence!.semantic).toEqual([]);
      expect(evidence!.cosine.size).toBe(0);
      expect(evidence!.keyword.length).toBeGreaterThan(0);
    });

    it('never throws on keyword input', async () => {
      const nasty = [
        `"); drop table knowledge_chunks; --`,
        "o'reilly's \\ back\\slash",
        '* : ^ | & ! <-> () \'\' ""',
        'NEAR(a b) AND OR NOT',
        '🚀 ✨',
        '   ',
        'x'.repeat(5000),
        'é'.repeat(3000),
        Array.from({ length: 500 }, (_, i) => `word${i}`).join(' '),
      ];
      for (const text of nasty) {
        await expect(store.search(request({ text }), keywordOnly)).resolves.toBeInstanceOf(Array);
      }
      // Only stop words: they are searched (as on SQLite) rather than nothing.
      expect((await store.search(request({ text: 'the of' }), keywordOnly)).length).toBeGreaterThan(
        0,
      );
    });

    it('keeps the embedding cache by model, dimensions and content hash', async () => {
      const [a, b] = scienceChunks;
      const found = await store.cachedVectors(MODEL, DIMS, [
        a!.contentHash,
        b!.contentHash,
        'unknown',
      ]);
      expect([...found.keys()].sort()).toEqual([a!.contentHash, b!.contentHash].sort());
      // Bit for bit: a re-index stores the cached vector again.
      expect(Buffer.from(found.get(a!.contentHash)!.buffer)).toEqual(Buffer.from(a!.vector.buffer));
      expect((await store.cachedVectors('other', DIMS, [a!.contentHash])).size).toBe(0);
      expect((await store.cachedVectors(MODEL, DIMS + 1, [a!.contentHash])).size).toBe(0);
      expect((await store.cachedVectors(MODEL, DIMS, [])).size).toBe(0);
    });

    it('answers from one snapshot: a re-index committed while ranking leaves the ranked rows', async () => {
      const reindex: { pending: Promise<'committed' | 'discarded'> | null } = { pending: null };
      // Holds back the statement that loads the ranked rows until the re-index has committed.
      const slow = new PostgresChunkStore(
        instrumentedPool(pool, async (sql) => {
          if (sql.includes('document_name') && reindex.pending !== null) await reindex.pending;
        }),
      );
      const next = await newToken(db, science);
      const replacement = [chunk('Telescopes, rewritten.', randomVector(random))];
      const hits = await slow.search(
        request({ text: 'galaxies', filter: { documentId: science.id } }),
        {
          rank: (e) => {
            reindex.pending = commit(store, next, replacement);
            return e.keyword;
          },
        },
      );
      expect(await reindex.pending).toBe('committed');
      expect(ids(hits)).toEqual([scienceChunks[0]!.id]);
      expect(hits[0]!.chunk.content).toBe(scienceChunks[0]!.content);
      expect((await store.listChunks(science.id)).map((c) => c.id)).toEqual([replacement[0]!.id]);
    });
  });

  describe('statements', () => {
    it('commits, deletes and searches in a fixed number of statements (no N+1)', async () => {
      const statements: string[] = [];
      const counted = new PostgresChunkStore(
        instrumentedPool(pool, (sql) => {
          statements.push(sql);
        }),
      );
      const run = async (n: number) => {
        const doc = await addDocument(db, `n1-${n}.md`, 'n1');
        statements.length = 0;
        await commit(
          counted,
          doc,
          Array.from({ length: n }, (_, i) =>
            chunk(`statement counting ${i} word${i}`, randomVector(random)),
          ),
        );
        const commitStatements = statements.length;
        statements.length = 0;
        await counted.search(
          request({
            text: 'statement counting',
            vector: randomVector(random),
            filter: { projectId: 'n1' },
          }),
          { rank: (e) => [...e.keyword, ...e.semantic] },
        );
        const searchStatements = statements.length;
        statements.length = 0;
        await counted.deleteDocument(doc.id);
        return [commitStatements, searchStatements, statements.length];
      };
      await run(1); // warms the caches (vector table, pgvector features)
      // The vector table's count (vector-graph.ts): commits within its room count nothing more.
      await counted.buildGraphs();
      const few = await run(5);
      const many = await run(200);
      expect([many[0], many[2]]).toEqual([few[0], few[2]]);
      // begin, count, vectors, terms, chunk ids, cosines, rows, commit; with 5 chunks every keyword
      // candidate is among the nearest, whose cosines the search has: no cosines statement.
      expect(many[1]).toBe((few[1] ?? 0) + 1);
      expect(many[1]).toBeLessThanOrEqual(10);
    });
  });

  describe('keyword ranking equal to SQLite', () => {
    const corpusDir = resolve(import.meta.dirname, '../../test-data/paraphrase');
    let sqlite: ReturnType<typeof openSqlite>;
    let lite: SqliteChunkStore;
    let pgStore: PostgresChunkStore;
    // Its own database: BM25 statistics are collection-wide.
    const isolated = migratedDatabase();
    let pgDatabase: PostgresDatabase;
    let sqliteDir: string;
    const queries: string[] = [];

    beforeAll(async () => {
      pgDatabase = isolated.database;
      pgStore = new PostgresChunkStore(pgDatabase.pool);
      sqliteDir = tempDir();
      sqlite = openSqlite(join(sqliteDir, 'parity.sqlite'));
      const state = await migrate(sqlite, MIGRATIONS);
      expect(state.status).toBe('ok');
      lite = new SqliteChunkStore(sqlite.native);

      const docs = readdirSync(join(corpusDir, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => ({ name: f, markdown: readFileSync(join(corpusDir, 'docs', f), 'utf8') }));
      // Tokenizer corner cases: punctuation inside tokens, diacritics, digits, short words.
      docs.push({
        name: 'corner-cases.md',
        markdown: `# Corner cases\n\n## Addresses\n\nWrite to ops@example.com or read /usr/share/doc/README; state-of-the-art café naïve Straße x² 3.14 v2 OS is as us.\n\n## Repeats\n\n${'echo '.repeat(300)}\n`,
      });
      // Scripts without spaces, cut into words by both engines (segment.ts).
      docs.push({
        name: '训练数据.md',
        markdown: `# 机器学习\n\n## 数据\n\n我们的训练数据集很大，模型在训练数据上学习。数据清洗是关键步骤。\n\n## 日本語\n\n東京都に住んでいる学生です。機械学習のデータを集めています。\n\n## ภาษาไทย\n\nภาษาไทยเป็นภาษาที่สวยงาม ระบบค้นหาข้อมูลทำงานได้ดี\n`,
      });
      docs.push({ name: 'data.md', markdown: '# 说明\n\n数据很重要。GPT模型的数据。\n' });
      // Identifiers (identifiers.ts): whole, by part, where defined, in links and escapes.
      docs.push({
        name: 'api_reference.md',
        markdown: `# std::vector::emplace\\_back\n\nAppends an element; see [push_back](vector/push_back.html "cpp/container/vector/push back").\n\n## Errors\n\nerrno.ENOENT\n\nNo such file. Like asn1_der_decoding_startEnd, asn1_der_decoding decodes DER.\n\nint asn1_der_decoding (asn1_node * element)\n\n\`\`\`\n--num-callers=<number> [default: 12]\n>>> json.dumps([1])\n\`\`\`\n\nXML_SetDefaultHandlerExpand and XML_SetDefaultHandler; os.path.join; CVE-2024-3094 in 5.6.1; is_valid.\n`,
      });
      const random = seededRandom(3);
      for (const [i, doc] of docs.entries()) {
        const chunks = chunkMarkdown(doc.markdown, { maxChars: 600, overlapChars: 60 }).map((c) =>
          chunk(c.content, randomVector(random), {
            sectionPath: c.sectionPath,
            chunkIndex: c.chunkIndex,
          }),
        );
        const project = i % 2 === 0 ? 'even' : null;
        for (const [target, targetStore] of [
          [sqlite.db, lite],
          [pgDatabase.db, pgStore],
        ] as const) {
          const added = await addDocument(target, doc.name, project, `doc-${i}`);
          expect(await commit(targetStore, added, chunks)).toBe('committed');
        }
      }
      const lines = readFileSync(join(corpusDir, 'queries.jsonl'), 'utf8').split('\n');
      for (const line of lines)
        if (line.trim() !== '') queries.push((JSON.parse(line) as { query: string }).query);
      queries.push(
        'ops@example.com',
        '/usr/share',
        'cafe',
        'CAFÉ naive',
        'strasse',
        'x² 3',
        'is as',
        'os',
        'echo',
        'the of and',
        '训练数据',
        '数据',
        '数据集 模型',
        '训练模型',
        '数据数据 gpt',
        '東京 データ',
        '機械学習のデータ',
        'ภาษาไทย',
        'สวยงาม ที่',
        'asn1_der_decoding',
        'asn1_der_decoding_startEnd',
        'std::vector::emplace_back',
        'emplace_back',
        'push_back',
        '--num-callers',
        'DefaultHandler',
        'XML_SetDefaultHandler',
        'errno.ENOENT',
        'ENOENT',
        'os.path.join',
        'json.dumps',
        'CVE-2024-3094 5.6.1',
        'is_valid',
        'cpp container',
      );
    }, 120_000);
    afterAll(async () => {
      await sqlite.close();
      rmSync(sqliteDir, { recursive: true, force: true });
    });

    it('returns the same chunks in the same order with the same BM25 scores', async () => {
      expect(queries.length).toBeGreaterThan(150);
      let compared = 0;
      for (const [filter, limit] of [
        [{}, 20],
        [{}, 3],
        [{ projectId: 'even' }, 10],
        [{ documentId: 'doc-1' }, 10],
        [{ documentIds: ['doc-0', 'doc-3', 'doc-4'] }, 10],
      ] as const) {
        for (const text of queries) {
          const req = request({ text, filter, limit });
          const [a, b] = await Promise.all([
            lite.search(req, keywordOnly),
            pgStore.search(req, keywordOnly),
          ]);
          const label = `${text} ${JSON.stringify(filter)} ${limit}`;
          expect(ids(b), label).toEqual(ids(a));
          for (const [i, hit] of a.entries()) {
            // The same arithmetic in the same order: equal to the bit.
            expect(b[i]!.score, label).toBe(hit.score);
          }
          compared += a.length;
        }
      }
      expect(compared).toBeGreaterThan(1000);
    }, 90_000); // ~700 searches on three stores: ~20 s on a busy machine

    it('ranks the same with postings rebuilt from the tsvector rows (migration 0015)', async () => {
      const before = await pgDatabase.pool.query<{
        lexeme: string;
        document_id: string;
        p: string;
      }>(
        `select lexeme, document_id, encode(postings, 'hex') as p from knowledge_fts_postings
         order by lexeme, document_id`,
      );
      await pgDatabase.pool.query('delete from knowledge_fts_postings');
      await backfill(pgDatabase.db as never);
      const after = await pgDatabase.pool.query<{ lexeme: string; document_id: string; p: string }>(
        `select lexeme, document_id, encode(postings, 'hex') as p from knowledge_fts_postings
         order by lexeme, document_id`,
      );
      // No lexeme here has over 256 occurrences in a chunk (a tsvector's cap): the same rows.
      expect(after.rows.length).toBeGreaterThan(1000);
      expect(after.rows).toEqual(before.rows);
      for (const text of queries.slice(0, 40)) {
        const req = request({ text, limit: 10 });
        const [a, b] = await Promise.all([
          lite.search(req, keywordOnly),
          pgStore.search(req, keywordOnly),
        ]);
        expect(ids(b), text).toEqual(ids(a));
      }
    });

    it('scores a hybrid search’s nearest chunks by their keywords, as SQLite does', async () => {
      const random = seededRandom(8);
      let matched = 0;
      for (const text of queries) {
        const vector = randomVector(random);
        const evidenceOf = async (store: SqliteChunkStore | PostgresChunkStore) => {
          let seen: Evidence | undefined;
          await store.search(request({ text, vector, limit: 5 }), {
            fusedTop: 3,
            rank: (e) => {
              seen = e;
              return [];
            },
          });
          return new Map(seen!.keyword.map((k) => [k.chunkId, k.score]));
        };
        const [a, b] = await Promise.all([evidenceOf(lite), evidenceOf(pgStore)]);
        // Below the keyword depth (5), a candidate is one of the nearest chunks, with the BM25 a
        // deeper keyword search gives it; the same on both engines.
        const ranked = await pgStore.search(request({ text, limit: 5 }), keywordOnly);
        const deep = await pgStore.search(request({ text, limit: 1000 }), keywordOnly);
        const bm25 = new Map(deep.map((h) => [h.chunk.id, h.score]));
        for (const [chunkId, score] of b) {
          if (a.has(chunkId)) expect(score, text).toBe(a.get(chunkId));
          if (ranked.some((h) => h.chunk.id === chunkId)) continue;
          expect(score, text).toBe(bm25.get(chunkId));
          matched++;
        }
      }
      expect(matched).toBeGreaterThan(50);
    });

    it("gives the same largest attainable BM25 of each query (the fusion's keywordMax)", async () => {
      const maxOf = async (store: SqliteChunkStore | PostgresChunkStore, text: string) => {
        let max = Number.NaN;
        await store.search(request({ text }), {
          rank: (e) => {
            max = e.keywordMax;
            return [];
          },
        });
        return max;
      };
      // A word in no chunk counts too (with the idf of a word in none).
      for (const text of [...queries, 'zyzzyva quokka', 'the']) {
        const [a, b] = await Promise.all([maxOf(lite, text), maxOf(pgStore, text)]);
        expect(a, text).toBeGreaterThan(0);
        expect(b, text).toBeCloseTo(a, 9);
      }
      expect(await maxOf(lite, '!!!')).toBe(0);
      expect(await maxOf(pgStore, '!!!')).toBe(0);
    });
  });

  describe('vector recall under filters', () => {
    const D = 16;
    const random = seededRandom(11);
    const query = randomVector(random, D);
    const model = 'recall-model';
    // Many chunks close to the query, few far from it: unfiltered, the few never make the top.
    const big = Array.from({ length: 1500 }, (_, i) => chunk(`big ${i}`, near(query, random, 0.6)));
    const mid = Array.from({ length: 150 }, (_, i) => chunk(`mid ${i}`, randomVector(random, D)));
    const small = Array.from({ length: 25 }, (_, i) =>
      chunk(`small ${i}`, randomVector(random, D)),
    );
    const docs: Record<string, Doc> = {};
    const isolated = migratedDatabase();
    let recallDb: PostgresDatabase;

    const exact = (chunks: readonly NewChunk[], q: Float32Array, k: number) =>
      [...chunks]
        .map((c) => ({ id: c.id, score: cosine(q, c.vector) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, k)
        .map((c) => c.id);

    beforeAll(async () => {
      recallDb = isolated.database;
      // Past 1,000 chunks the table gets its (centred) HNSW graph.
      const s = new PostgresChunkStore(recallDb.pool, { exactSearchMax: 1000 });
      for (const [name, chunks, project] of [
        ['big', big, 'big'],
        ['mid', mid, 'mid'],
        ['small', small, 'small'],
      ] as const) {
        docs[name] = await addDocument(recallDb.db, `${name}.md`, project);
        expect(await commit(s, docs[name], chunks, model, D)).toBe('committed');
      }
      await s.buildGraphs();
    }, 120_000);

    it('finds every chunk of a narrow scope, in exact order (exact search)', async () => {
      const s = new PostgresChunkStore(recallDb.pool);
      for (const filter of [{ projectId: 'small' }, { documentId: docs.small!.id }]) {
        const hits = await s.search(
          { text: null, vector: query, model, filter, limit: 100 },
          semanticOnly,
        );
        expect(ids(hits)).toEqual(exact(small, query, 100));
      }
      const unfiltered = await s.search(
        { text: null, vector: query, model, filter: {}, limit: 100 },
        semanticOnly,
      );
      expect(ids(unfiltered).filter((id) => small.some((c) => c.id === id))).toEqual([]);
    });

    it('keeps recall through the HNSW index too (iterative scan), where a plain scan loses it', async () => {
      // exactSearchMax 0: every filtered search walks the HNSW graph.
      const s = new PostgresChunkStore(recallDb.pool, { exactSearchMax: 0 });
      const row = (
        await recallDb.pool.query<{ table_name: string; centre: string | null }>(
          'select table_name, centre from knowledge_vector_tables where model = $1',
          [model],
        )
      ).rows[0]!;
      const graph = { name: row.table_name, dimensions: D, centre: parseCentre(row.centre) };
      const table = graph.name;
      expect(graph.centre).not.toBeNull();
      const walk = `[${graphQuery(graph, query).join(',')}]`;
      const plan = await recallDb.pool.query<{ 'QUERY PLAN': string }>(
        `explain select chunk_id from ${table} order by ${graphOrder(graph, 'embedding', '$1')} limit 10`,
        [walk],
      );
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('_hnsw_centred');

      for (const [filter, chunks] of [
        [{ projectId: 'small' }, small],
        [{ documentId: docs.small!.id }, small],
        [{ projectId: 'mid' }, mid],
      ] as const) {
        const hits = await s.search(
          { text: null, vector: query, model, filter, limit: 100 },
          semanticOnly,
        );
        expect(ids(hits)).toEqual(exact(chunks, query, 100));
      }
      // Recall@10 against exact search, unfiltered and within the 'mid' project (9 % of chunks).
      const q = seededRandom(5);
      let found = 0;
      let total = 0;
      for (let i = 0; i < 20; i++) {
        const v = randomVector(q, D);
        for (const [filter, chunks] of [
          [{}, [...big, ...mid, ...small]],
          [{ projectId: 'mid' }, mid],
        ] as const) {
          const hits = await s.search(
            { text: null, vector: v, model, filter, limit: 10 },
            semanticOnly,
          );
          const truth = new Set(exact(chunks, v, 10));
          found += ids(hits).filter((id) => truth.has(id)).length;
          total += 10;
        }
      }
      expect(found / total).toBeGreaterThanOrEqual(0.98);

      // Without iterative scans (pgvector < 0.8 behaviour) the filter applies to the 40 nearest
      // chunks only, and the narrow scope finds (next to) nothing: the case the above guards.
      const client = await recallDb.pool.connect();
      try {
        await client.query('begin');
        await client.query('set local hnsw.iterative_scan = off');
        await client.query('set local enable_seqscan = off');
        const { rows } = await client.query(
          `select chunk_id from ${table} where (project_key = 'small') is true
           order by ${graphOrder(graph, 'embedding', '$1')} limit 25`,
          [walk],
        );
        expect(rows.length).toBeLessThan(5);
        await client.query('rollback');
      } finally {
        client.release();
      }
    });

    it('a metadata filter through the HNSW index still returns every match, with or without iterative scans', async () => {
      await recallDb.pool.query(
        `update knowledge_documents set metadata = '{"size": "s", "tags": ["few"]}' where id = $1`,
        [docs.small!.id],
      );
      const where = parseFilter({ 'metadata.tags': 'few', 'metadata.size': { $in: ['s', 'xs'] } });
      for (const iterativeScan of [true, false]) {
        const s = new PostgresChunkStore(recallDb.pool, { exactSearchMax: 0 });
        if (!iterativeScan) {
          // As with pgvector before 0.8: the graph scan stops after its beam, the filter after.
          const vectors = (s as unknown as { vectors: { loadFeatures(): Promise<object> } })
            .vectors;
          const features = { ...(await vectors.loadFeatures()), iterativeScan: false };
          vectors.loadFeatures = () => Promise.resolve(features);
        }
        const hits = await s.search(
          { text: null, vector: query, model, filter: { where }, limit: 20 },
          semanticOnly,
        );
        expect(ids(hits), `iterative ${iterativeScan}`).toEqual(exact(small, query, 20));
      }
    });
  });

  describe('instances racing', () => {
    it('two instances creating the vector table of a new model: one table, both commits land', async () => {
      const other = new pg.Pool({ connectionString: fresh.url, max: 4 });
      try {
        const a = new PostgresChunkStore(pool);
        const b = new PostgresChunkStore(other);
        const docs = await Promise.all([
          addDocument(db, 'race-a.md'),
          addDocument(db, 'race-b.md'),
        ]);
        const vectors = [randomVector(random, 12), randomVector(random, 12)];
        const outcomes = await Promise.all(
          [a, b].map((s, i) =>
            commit(
              s,
              docs[i]!,
              [chunk('racing shared words everywhere', vectors[i]!)],
              'race-model',
              12,
            ),
          ),
        );
        expect(outcomes).toEqual(['committed', 'committed']);
        const { rows } = await pool.query(
          'select table_name from knowledge_vector_tables where model = $1',
          ['race-model'],
        );
        expect(rows).toHaveLength(1);
        for (const [i, s] of [a, b].entries()) {
          const hits = await s.search(
            {
              text: null,
              vector: vectors[i]!,
              model: 'race-model',
              filter: { documentId: docs[i]!.id },
              limit: 5,
            },
            semanticOnly,
          );
          expect(hits).toHaveLength(1);
        }
        await expectStatisticsExact(pool);
      } finally {
        await other.end();
      }
    });
  });

  describe('migration', () => {
    it('explains what to do when the role may not create the pgvector extension', async () => {
      const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
      const role = `aps_t_role_${suffix}`;
      const name = `aps_t_novec_${suffix}`;
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      try {
        await admin.query(`create role ${role} login password 'pw-${suffix}'`);
        // template0: a database without the extension that the template1 of the tests carries.
        await admin.query(`create database ${name} owner ${role} template template0`);
        const url = new URL(TEST_DATABASE_URL ?? '');
        url.username = role;
        url.password = `pw-${suffix}`;
        url.pathname = `/${name}`;
        const limited = await openDatabase({
          driver: 'postgres',
          url: url.toString(),
          poolMax: 2,
          statementTimeoutMs: 30_000,
          connectTimeoutMs: 5000,
        });
        try {
          const state = await migrate(limited, MIGRATIONS);
          expect(state.status).toBe('degraded');
          expect(state.errorMessage).toContain('0002_knowledge');
          expect(state.errorMessage).toContain(`role "${role}" may not create it`);
          expect(state.errorMessage).toContain(`CREATE EXTENSION vector`);
          expect(state.pending).toContain('0002_knowledge');
        } finally {
          await limited.close();
        }
      } finally {
        await admin.query(`drop database if exists ${name} with (force)`);
        await admin.query(`drop role if exists ${role}`);
        await admin.end();
      }
    });
  });
});
