import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { PoolClient } from 'pg';
import type { Database } from '../database.js';
import {
  deleteKeywordRows,
  keywordRows,
  updateStatistics,
} from './0013_segmented_keywords/keyword-rows.js';
import { needsSegmenting, segmentWords } from './0013_segmented_keywords/segment.js';
import { Stemmer } from './0013_segmented_keywords/words.js';

/**
 * Keyword rows of Chinese, Japanese and Thai text cut into words: runs of scripts written
 * without spaces were one token each ("训练数据" found nothing) until the keyword indexes read
 * them through knowledge/search/segment.ts. This re-writes the keyword rows of the chunks indexed
 * before that hold such text, so they match segmented queries:
 * - SQLite: the FTS5 row's columns, segmented (the chunk row keeps its text);
 * - PostgreSQL: the tsvector rows and BM25 statistics of each document with such text, rebuilt
 *   as a commit builds them.
 * Other chunks are untouched (their keyword text is the same either way). The segmentation, words
 * and keyword rows it writes are its own frozen copies (./0013_segmented_keywords/), so that
 * later edits of knowledge/ do not change what it does.
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver === 'sqlite') await segmentSqlite(db);
  else await segmentPostgres(db);
}

/** Rows read per batch. */
const BATCH = 1000;

async function segmentSqlite(db: Kysely<unknown>): Promise<void> {
  for (let last = 0; ;) {
    const { rows } = await sql<{
      rowid: number;
      document_name: string;
      section_path: string;
      content: string;
    }>`select rowid, document_name, section_path, content from knowledge_chunks_fts
       where rowid > ${last} order by rowid limit ${BATCH}`.execute(db);
    if (rows.length === 0) return;
    last = rows[rows.length - 1]?.rowid ?? last;
    for (const r of rows) {
      if (!needsSegmenting(r.document_name + r.section_path + r.content)) continue;
      await sql`update knowledge_chunks_fts set document_name = ${segmentWords(r.document_name)},
          section_path = ${segmentWords(r.section_path)}, content = ${segmentWords(r.content)}
        where rowid = ${r.rowid}`.execute(db);
    }
  }
}

/** Code points of the scripts segment.ts cuts, as a PostgreSQL regular expression (a superset). */
const SCRIPTS =
  '[\u0E00-\u0EFF\u1000-\u109F\u1780-\u17FF\u3005\u3006\u3040-\u30FF\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\uFF66-\uFF9F\u{20000}-\u{3134F}]';

async function segmentPostgres(db: Kysely<unknown>): Promise<void> {
  // The keyword-row code talks to a pg client: the migration's connection, through Kysely.
  const client = {
    query: (text: string, params: unknown[] = []) =>
      db.executeQuery(CompiledQuery.raw(text, params)),
  } as unknown as PoolClient;
  const { rows: documents } = await sql<{ id: string; name: string; project_key: string }>`
    select d.id, d.name, d.project_key from knowledge_documents d
    where exists (select 1 from knowledge_chunks_fts f where f.document_id = d.id)
      and (d.name ~ ${SCRIPTS} or exists (select 1 from knowledge_chunks c
        where c.document_id = d.id and (c.content ~ ${SCRIPTS} or c.section_path ~ ${SCRIPTS})))
    order by d.id`.execute(db);
  const stemmer = new Stemmer();
  for (const doc of documents) {
    const { rows: chunks } = await sql<{ id: string; section_path: string; content: string }>`
      select c.id, c.section_path, c.content from knowledge_chunks c
      where c.document_id = ${doc.id}
        and exists (select 1 from knowledge_chunks_fts f where f.chunk_id = c.id)
      order by c.chunk_index`.execute(db);
    const removed = await deleteKeywordRows(client, doc.id);
    const rows = await keywordRows(
      client,
      stemmer,
      doc.name,
      chunks.map((c) => ({ sectionPath: c.section_path, content: c.content })),
    );
    await client.query(
      `insert into knowledge_chunks_fts (chunk_id, document_id, project_key, token_count, terms)
       select t.id, $2, $3, t.token_count, t.terms
       from unnest($1::text[], $4::int[], $5::tsvector[]) as t(id, token_count, terms)`,
      [chunks.map((c) => c.id), doc.id, doc.project_key, rows.tokenCounts, rows.terms],
    );
    await updateStatistics(client, doc.id, removed, {
      chunks: chunks.length,
      tokens: rows.tokenCounts.reduce((a, b) => a + b, 0),
    });
  }
}
