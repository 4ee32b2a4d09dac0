import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { PoolClient } from 'pg';
import type { Database } from '../database.js';
import {
  DOUBLED_WEIGHTS,
  insertPostings,
  type ChunkPostings,
} from './0015_postings_and_key_generation/postings.js';

/**
 * - both: `api_key_generation`, one counter bumped by every revocation and rotation, so that
 *   each instance can keep verified keys and tokens in memory and drop them the moment a key is
 *   revoked anywhere (auth/revocations.ts);
 * - PostgreSQL: `knowledge_fts_postings`, the keyword postings per (lexeme, document)
 *   (knowledge/search/postgres/keyword/postings.ts), filled from the existing tsvector rows by
 *   this migration's own frozen copy of the writer (./0015_postings_and_key_generation/), and an
 *   index on `knowledge_chunks_fts.seq` (a search finds its top chunks by seq).
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  await sql`create table api_key_generation (
    id integer primary key check (id = 1),
    generation bigint not null
  )`.execute(db);
  await sql`insert into api_key_generation (id, generation) values (1, 0)`.execute(db);
  if (driver !== 'postgres') return;
  // Every bump is announced to every instance (auth/revocations-postgres.ts), at commit.
  await sql`create function aps_api_key_generation_notify() returns trigger
    language plpgsql as $$
    begin
      perform pg_notify('aps_api_keys', json_build_object('e', 'generation', 'generation', new.generation)::text);
      return null;
    end $$`.execute(db);
  await sql`create trigger api_key_generation_notify after update on api_key_generation
    for each row execute function aps_api_key_generation_notify()`.execute(db);
  await sql`create table knowledge_fts_postings (
    lexeme text not null,
    document_id text not null,
    project_key text not null,
    seq_base bigint not null,
    postings bytea not null,
    primary key (lexeme, document_id)
  )`.execute(db);
  await sql`create index knowledge_fts_postings_document on knowledge_fts_postings (document_id)`.execute(
    db,
  );
  await sql`create index knowledge_chunks_fts_seq on knowledge_chunks_fts (seq)`.execute(db);
  await backfill(db);
}

/** Doubled weight of a tsvector position label (A section path, B document name, D text). */
const LABEL_WEIGHT: Record<string, number> = {
  A: DOUBLED_WEIGHTS.section,
  B: DOUBLED_WEIGHTS.name,
  D: DOUBLED_WEIGHTS.content,
};

/**
 * The postings of every indexed document, from its tsvector rows (their positions are the
 * weighted occurrences; a tsvector keeps at most 256 per lexeme, as the keyword search before
 * this migration counted them). A document indexed again writes its postings from its words.
 * Rebuilds every row, so running it again (or after migration 0013 re-keyed the tsvector rows:
 * languages.test.ts) leaves postings that match the rows.
 */
export async function backfill(db: Kysely<unknown>): Promise<void> {
  const client = {
    query: (text: string, params: unknown[] = []) =>
      db.executeQuery(CompiledQuery.raw(text, params)),
  } as unknown as PoolClient;
  // From scratch: the postings always equal the tsvector rows after it (whatever ran before).
  await sql`delete from knowledge_fts_postings`.execute(db);
  const { rows: documents } = await sql<{ document_id: string; project_key: string }>`
    select distinct document_id, project_key from knowledge_chunks_fts order by document_id`.execute(
    db,
  );
  for (const doc of documents) {
    const { rows } = await sql<{
      seq: number;
      token_count: number;
      lexeme: string;
      weights: string[];
    }>`
      select f.seq::float8 as seq, f.token_count, u.lexeme, u.weights::text[] as weights
      from knowledge_chunks_fts f cross join lateral unnest(f.terms) as u(lexeme, positions, weights)
      where f.document_id = ${doc.document_id}`.execute(db);
    const chunks = new Map<number, ChunkPostings & { counts: Map<string, number> }>();
    for (const r of rows) {
      let chunk = chunks.get(r.seq);
      if (chunk === undefined) {
        chunk = { seq: r.seq, length: r.token_count, counts: new Map() };
        chunks.set(r.seq, chunk);
      }
      const count = r.weights.reduce((sum, w) => sum + (LABEL_WEIGHT[w] ?? 0), 0);
      chunk.counts.set(r.lexeme, count);
    }
    await insertPostings(client, doc.document_id, doc.project_key, [...chunks.values()]);
  }
}
