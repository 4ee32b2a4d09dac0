/**
 * Identifiers through HTTP, on SQLite and (with TEST_DATABASE_URL) PostgreSQL: a query that is a
 * compound identifier finds the section that documents it first, ahead of its cousins and of
 * passages that only share its parts (identifiers.ts); its parts still find it; a strong answer
 * comes without padding (ranking.ts PADDING_FRACTION); and migration 0018 gives chunks indexed
 * before the same ranking as chunks indexed now.
 */
import { join } from 'node:path';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteKeywordRows,
  keywordRows as oldKeywordRows,
  updateStatistics,
} from '../../../src/db/migrations/0013_segmented_keywords/keyword-rows.js';
import { Stemmer } from '../../../src/db/migrations/0013_segmented_keywords/words.js';
import { backfill as backfillPostings } from '../../../src/db/migrations/0015_postings_and_key_generation.js';
import { up as identifierKeywords } from '../../../src/db/migrations/0018_identifier_keywords.js';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { chunkMarkdown } from '../../../src/knowledge/chunking/markdown-chunker.js';
import { keywordText } from '../../../src/knowledge/search/keyword-text.js';
import { segmentWords } from '../../../src/knowledge/search/segment.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { tempDir, type TestApp } from '../../helpers.js';
import { type KnowledgeClient, knowledgeApp } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;

/** An API reference in the shape of libtasn1's and expat's: cousins that share every part. */
const REFERENCE = `# Reference

## Overview

This library performs DER decoding of ASN1 structures and encoding back to DER. The decoding
functions fill an element from a buffer; see the handlers for parsing XML with a default handler.

## asn1_der_decoding_startEnd

Like asn1_der_decoding, but returns the start and end positions of a named element inside the
DER encoded buffer, so the caller can hash the exact bytes of that element.

## asn1_der_decoding

Fill the structure element with values of a DER encoding string. The structure must just be
created with function asn1_create_element. Returns ASN1_SUCCESS when DER decoding succeeded.

## XML_SetDefaultHandlerExpand

Sets a default handler, but internal entity references are passed to it expanded, unlike
XML_SetDefaultHandler which passes them as they are written.

## XML_SetDefaultHandler

Sets a handler for any characters in the document which would not otherwise be handled. Entity
references are not expanded when this default handler is set.

## std::vector::emplace_back

Appends a new element to the end of the container, constructed in place from the arguments.

## Options

Use --num-callers=<number> to set the number of callers shown in stack traces; the default is 12.
Use --leak-check=full to show each leak in detail.
`;

/** Texts that share the words of the queries but define none of them (candidates for padding). */
const OTHERS = `# Notes

## Decoding

Decoding is the reverse of encoding; a decoder reads what an encoder wrote.

## Callers

A caller passes arguments to the function it calls; the number of arguments may vary.

## Vectors

A vector holds its elements in order; back and front are its two ends.
`;

let reference: string;

beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
  const doc = await k.uploadOk('reference.md', REFERENCE);
  await k.indexOk(doc.id);
  reference = doc.id;
  const other = await k.uploadOk('notes.md', OTHERS);
  await k.indexOk(other.id);
}, 60_000);
afterAll(() => t.close());

interface Hit {
  documentId: string;
  sectionPath: string;
  score: number;
}

async function hits(query: string, mode: string, topK = 5, minScore?: number): Promise<Hit[]> {
  const res = await k.retrieve({
    query,
    mode,
    topK,
    ...(minScore === undefined ? {} : { minScore }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ items: Hit[] }>().items;
}

const section = (h: Hit | undefined) => h?.sectionPath.split(' > ').at(-1);

describe('a compound identifier', () => {
  it.each([
    ['asn1_der_decoding', 'asn1_der_decoding'],
    ['asn1_der_decoding_startEnd', 'asn1_der_decoding_startEnd'],
    ['XML_SetDefaultHandler', 'XML_SetDefaultHandler'],
    ['XML_SetDefaultHandlerExpand', 'XML_SetDefaultHandlerExpand'],
    ['std::vector::emplace_back', 'std::vector::emplace_back'],
    ['how do I use asn1_der_decoding?', 'asn1_der_decoding'],
  ])('%s ranks its own section first, keyword and hybrid', async (query, expected) => {
    for (const mode of ['keyword', 'hybrid']) {
      expect(section((await hits(query, mode))[0]), `${query} ${mode}`).toBe(expected);
    }
  });

  it('is still found by its parts and by a qualified tail', async () => {
    for (const query of ['emplace_back', 'vector emplace', 'SetDefaultHandler', 'DefaultHandler']) {
      const found = await hits(query, 'keyword', 10);
      expect(
        found.some((h) => h.documentId === reference),
        query,
      ).toBe(true);
    }
    expect(section((await hits('emplace_back', 'keyword'))[0])).toBe('std::vector::emplace_back');
  });

  it('as a flag finds its option first, without padding next to it', async () => {
    const found = await hits('--num-callers', 'hybrid', 10);
    expect(section(found[0])).toBe('Options');
    const all = await hits('--num-callers', 'hybrid', 10, -1);
    // Without minScore the passages that merely share a word (callers) are dropped, not padded.
    expect(found.length).toBeLessThan(all.length);
    for (const h of found) expect(h.score).toBeGreaterThanOrEqual(0.1 * (found[0]?.score ?? 0));
  });
});

describe('migration 0018', () => {
  it('gives chunks indexed before identifier tokens the ranking of chunks indexed now', async () => {
    const { db, driver } = t.ctx.database;
    if (driver !== 'postgres') return; // SQLite: below, on a database of the previous build
    const kysely = db as unknown as Kysely<unknown>;
    const client = {
      query: (text: string, params: unknown[] = []) =>
        kysely.executeQuery(CompiledQuery.raw(text, params)),
    } as unknown as PoolClient;
    const now = await hits('asn1_der_decoding', 'keyword', 10, -1);
    // As the previous build indexed the reference: its keyword rows without identifier tokens.
    const chunks = await sql<{ id: string; section_path: string; content: string }>`
      select id, section_path, content from knowledge_chunks
      where document_id = ${reference} order by chunk_index`.execute(kysely);
    const removed = await deleteKeywordRows(client, reference);
    const rows = await oldKeywordRows(
      client,
      new Stemmer(),
      'reference.md',
      chunks.rows.map((c) => ({ sectionPath: c.section_path, content: c.content })),
    );
    await client.query(
      `insert into knowledge_chunks_fts (chunk_id, document_id, project_key, token_count, terms)
       select t.id, $2, '', t.token_count, t.terms
       from unnest($1::text[], $3::int[], $4::tsvector[]) as t(id, token_count, terms)`,
      [chunks.rows.map((c) => c.id), reference, rows.tokenCounts, rows.terms],
    );
    await updateStatistics(client, reference, removed, {
      chunks: chunks.rows.length,
      tokens: rows.tokenCounts.reduce((a, b) => a + b, 0),
    });
    await backfillPostings(kysely);
    const old = await hits('asn1_der_decoding', 'keyword', 10, -1);
    expect(old.map((h) => h.score)).not.toEqual(now.map((h) => h.score));

    await identifierKeywords(kysely, driver);
    const migrated = await hits('asn1_der_decoding', 'keyword', 10, -1);
    expect(migrated.map((h) => [h.sectionPath, h.score])).toEqual(
      now.map((h) => [h.sectionPath, h.score]),
    );
    // Nothing to change the second time.
    await identifierKeywords(kysely, driver);
    expect(await hits('asn1_der_decoding', 'keyword', 10, -1)).toEqual(migrated);
  });

  it('re-writes the FTS5 rows of a SQLite database indexed before, from the chunk rows', async () => {
    const old = openSqlite(join(tempDir(), 'old-identifiers.db'));
    try {
      const before = MIGRATIONS.findIndex((m) => m.name === '0018_identifier_keywords');
      expect((await migrate(old, MIGRATIONS.slice(0, before))).status).toBe('ok');
      const stamp = new Date().toISOString();
      old.native
        .prepare(
          `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id, project_key,
             version, status, checksum, size_bytes, file_path, created_at, updated_at)
           values ('a', 'api_reference.md', 'md', 'text/markdown', 'upload', null, '', 1, 'indexed', 'a', 1, 'x', ?, ?)`,
        )
        .run(stamp, stamp);
      const chunks = chunkMarkdown(REFERENCE, { maxChars: 400, overlapChars: 0 });
      for (const c of chunks) {
        // As the previous build wrote them: the text segmented, nothing after it.
        const rowid = old.native
          .prepare(
            `insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content)
             values (?, 'a', 'api_reference.md', ?, ?)`,
          )
          .run(
            `c${c.chunkIndex}`,
            segmentWords(c.sectionPath),
            segmentWords(c.content),
          ).lastInsertRowid;
        old.native
          .prepare(
            `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content,
               token_estimate, metadata, embedding_model, embedding_dimensions, content_hash, created_at, fts_rowid)
             values (?, 'a', ?, ?, null, ?, 1, '{}', 'm', 1, 'h', ?, ?)`,
          )
          .run(`c${c.chunkIndex}`, c.chunkIndex, c.sectionPath, c.content, stamp, rowid);
      }
      expect((await migrate(old, MIGRATIONS)).status).toBe('ok');
      const fts = old.native
        .prepare(
          `select f.document_name as name, f.section_path as section, f.content from knowledge_chunks c
           join knowledge_chunks_fts f on f.rowid = c.fts_rowid order by c.chunk_index`,
        )
        .all();
      // Exactly what the live writer writes (sqlite-chunk-writes.ts).
      expect(fts).toEqual(
        chunks.map((c) => ({
          name: keywordText('api_reference.md'),
          section: keywordText(c.sectionPath, 'path'),
          content: keywordText(c.content),
        })),
      );
      const store = new SqliteChunkStore(old.native);
      const found = store.keywordSearch('asn1_der_decoding', {}, 3);
      const first = chunks.find((c) => `c${c.chunkIndex}` === found[0]?.chunkId);
      expect(first?.sectionPath.endsWith('asn1_der_decoding')).toBe(true);
    } finally {
      await old.db.destroy();
    }
  });
});
