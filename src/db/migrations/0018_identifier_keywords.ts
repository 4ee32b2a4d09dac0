import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { PoolClient } from 'pg';
import type { Database } from '../database.js';
import { deleteKeywordRows, updateStatistics } from './0013_segmented_keywords/keyword-rows.js';
import { Stemmer } from './0013_segmented_keywords/words.js';
import { backfill as backfillPostings } from './0015_postings_and_key_generation.js';
import { keywordText } from './0018_identifier_keywords/keyword-text.js';
import { keywordRows } from './0018_identifier_keywords/keyword-rows.js';

/**
 * Keyword rows with compound identifiers whole: since knowledge/search/identifiers.ts, the keyword
 * indexes read after each text the tokens of its identifiers (`asn1_der_decoding` as one token
 * beside its parts, the parts of CamelCase words), so an exact identifier outranks its cousins.
 * This re-writes the keyword rows of the chunks indexed before, so that they match as new ones do:
 * - SQLite: the FTS5 row's columns of every chunk whose name, section path or text has an
 *   identifier, re-written from the chunk row (the in-process copies see another tokenizer in
 *   their snapshots and are rebuilt from the rows at the next start);
 * - PostgreSQL: the tsvector rows and BM25 statistics of every indexed document, rebuilt as a
 *   commit builds them, then the postings from those rows (migration 0015's backfill) and one
 *   bump of the keyword generation, so that no instance keeps postings read before.
 * The identifier tokens, words and keyword rows it writes are its own frozen copies
 * (./0018_identifier_keywords/, with 0013's segmentation, stemmer and statistics), so that later
 * edits of knowledge/ do not change what it does.
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver === 'sqlite') await rewriteSqlite(db);
  else await rewritePostgres(db);
}

/** Rows read per batch. */
const BATCH = 1000;

async function rewriteSqlite(db: Kysely<unknown>): Promise<void> {
  for (let last = 0; ;) {
    // By the chunk table's own rowid (its b-tree): fts_rowid has no index.
    const { rows } = await sql<{
      at: number;
      rowid: number | null;
      name: string | null;
      section_path: string;
      content: string;
    }>`select c.rowid as at, c.fts_rowid as rowid, d.name, c.section_path, c.content
       from knowledge_chunks c left join knowledge_documents d on d.id = c.document_id
       where c.rowid > ${last} order by c.rowid limit ${BATCH}`.execute(db);
    if (rows.length === 0) return;
    last = rows[rows.length - 1]?.at ?? last;
    for (const r of rows) {
      // A staged chunk of an interrupted run has no document row: its run is over (leftovers.ts).
      if (r.rowid === null || r.name === null) continue;
      const name = keywordText(r.name);
      const section = keywordText(r.section_path, 'path');
      const content = keywordText(r.content);
      if (name === r.name && section === r.section_path && content === r.content) continue;
      await sql`update knowledge_chunks_fts set document_name = ${name},
          section_path = ${section}, content = ${content} where rowid = ${r.rowid}`.execute(db);
    }
  }
}

async function rewritePostgres(db: Kysely<unknown>): Promise<void> {
  // The keyword-row code talks to a pg client: the migration's connection, through Kysely.
  const client = {
    query: (text: string, params: unknown[] = []) =>
      db.executeQuery(CompiledQuery.raw(text, params)),
  } as unknown as PoolClient;
  const { rows: documents } = await sql<{ id: string; name: string; project_key: string }>`
    select d.id, d.name, d.project_key from knowledge_documents d
    where exists (select 1 from knowledge_chunks_fts f where f.document_id = d.id)
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
  if (documents.length === 0) return;
  await backfillPostings(db);
  await sql`update knowledge_fts_stats set generation = generation + 1 where id = 1`.execute(db);
}
