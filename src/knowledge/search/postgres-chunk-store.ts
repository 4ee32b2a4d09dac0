/**
 * ChunkStore on PostgreSQL: chunk rows, a tsvector keyword index scored with FTS5's BM25, and
 * pgvector tables with HNSW indexes, written together in one transaction.
 */
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../../db/postgres.js';
import type { ChunkRow } from '../../db/schema.js';
import {
  SEARCHABLE,
  type Candidate,
  type ChunkHit,
  type ChunkStore,
  type IndexCommit,
  type RankedHit,
  type Ranking,
  type SearchFilter,
  type SearchRequest,
} from './chunk-store.js';
import { chooseQueryTerms } from './fts-query.js';

/**
 * The stemmer (a dictionary of the migration): Snowball's Porter stemmer, the algorithm of FTS5's
 * `porter` tokenizer, without stop words. With the same words (indexWords) it gives the same
 * lexemes as SQLite, hence the same BM25 scores. PostgreSQL's `english` configuration differs:
 * its parser keeps `a@b.com` or `/usr/bin` whole, and its stemmer (Porter2) and stop words
 * change the counts.
 */
const STEMMER = 'aps_porter';

/**
 * SQL for the lexeme of a word: its stem, or the word itself when it has under 3 or over 64
 * bytes (FTS5's porter tokenizer leaves those alone: `is` stays `is`, not `i`).
 */
const stemSql = (word: string) =>
  `case when octet_length(${word}) between 3 and 64
     then coalesce((ts_lexize('${STEMMER}', ${word}))[1], ${word}) else ${word} end`;

/** The longest lexeme a tsvector holds, in bytes. */
const MAX_LEXEME_BYTES = 2046;

/** Whether a word (or its lexeme) fits a tsvector: a UTF-16 unit takes at most 3 UTF-8 bytes. */
const fitsTsvector = (word: string) =>
  word.length <= MAX_LEXEME_BYTES / 3 || Buffer.byteLength(word) <= MAX_LEXEME_BYTES;

/** BM25 parameters of FTS5's bm25(). */
const K1 = 1.2;
const B = 0.75;

/** A MaxScore round takes words while they match at most this many chunks together. */
const ROUND_POSTINGS = 5000;

/** Chunks written per statement by commitIndex. */
const INSERT_BATCH = 1000;

/** Words stemmed in memory at most (then the cache starts over). */
const STEM_CACHE_MAX = 200_000;

/** FTS5 and tsvector both stop counting positions at some point; tsvector at 16383. */
const MAX_POSITION = 16_383;

/** Advisory-lock class of vector-table creation ("aps" in ASCII, as the migration lock). */
const LOCK_CLASS = 0x617073;

/**
 * Up to this many chunks in scope (filtered, or the whole collection), vector search is exact:
 * as fast as the graph at that size, and faster than walking it past chunks outside a scope.
 */
const EXACT_SEARCH_MAX = 10_000;

/**
 * HNSW beam width (`hnsw.ef_search`) at least. Measured on 100k GloVe-SIF vectors (m 16,
 * ef_construction 64): recall@10 vs exact 0.50 at 40, 0.79 at 200, 0.88 at 400, 0.94 at 1000.
 */
const HNSW_EF_SEARCH = 400;

/** HNSW indexes `vector` up to 2,000 dimensions and `halfvec` up to 4,000. */
const HNSW_MAX_VECTOR = 2000;
const HNSW_MAX_HALFVEC = 4000;

const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
const LATIN_MARKS = /(\p{Script=Latin})\p{Mn}+/gu;

/**
 * The words of a text as SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer sees them:
 * runs of letters and digits, lower-cased, diacritics of Latin letters removed. The keyword
 * index is built from these words joined by spaces, so PostgreSQL's parser never sees
 * punctuation (it would keep `foo@bar.com` or `/usr/bin` as one token where FTS5 splits them).
 */
export function indexWords(text: string): string[] {
  const folded = text.toLowerCase().normalize('NFD').replace(LATIN_MARKS, '$1').normalize('NFC');
  return folded.match(WORD) ?? [];
}

/**
 * The query words, chosen as SQLite's buildFtsQuery chooses them: distinct, stop words dropped
 * unless every word is one, at most 64; then normalised like the indexed text.
 */
export function keywordQueryWords(text: string, maxTerms = 64): string[] {
  const chosen = chooseQueryTerms(text, maxTerms);
  // A word too long for a tsvector is in no chunk's lexemes either.
  return chosen.flatMap((t) => indexWords(t)).filter(fitsTsvector);
}

/** A tsvector literal: `'lexeme':1A,4 …`. */
function tsvectorLiteral(positions: Map<string, string[]>): string {
  let literal = '';
  for (const [lexeme, list] of positions) {
    literal += `${literal === '' ? '' : ' '}'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}':${list.join(',')}`;
  }
  return literal;
}

/** pgvector's binary format of a vector: int16 dimensions, int16 0, float4 values (big-endian). */
function vectorBinary(v: Float32Array): Buffer {
  const buffer = Buffer.allocUnsafe(4 + 4 * v.length);
  buffer.writeInt16BE(v.length, 0);
  buffer.writeInt16BE(0, 2);
  for (let i = 0; i < v.length; i++) buffer.writeFloatBE(v[i] ?? 0, 4 + 4 * i);
  return buffer;
}

/** A one-dimensional `vector[]` in PostgreSQL's binary array format (sent as one parameter). */
function vectorArrayBinary(vectorOid: number, vectors: readonly Float32Array[]): Buffer {
  let size = 20;
  for (const v of vectors) size += 8 + 4 * v.length;
  const buffer = Buffer.allocUnsafe(size);
  buffer.writeInt32BE(1, 0); // dimensions of the array
  buffer.writeInt32BE(0, 4); // no nulls
  buffer.writeUInt32BE(vectorOid, 8);
  buffer.writeInt32BE(vectors.length, 12);
  buffer.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (const v of vectors) {
    buffer.writeInt32BE(4 + 4 * v.length, at);
    buffer.writeInt16BE(v.length, at + 4);
    buffer.writeInt16BE(0, at + 6);
    at += 8;
    for (let i = 0; i < v.length; i++, at += 4) buffer.writeFloatBE(v[i] ?? 0, at);
  }
  return buffer;
}

/** pgvector's text output (`[1,2.5,…]`, shortest float4 digits) back to a vector. */
function parseVector(text: string): Float32Array {
  const body = text.slice(1, -1);
  if (body === '') return new Float32Array(0);
  return Float32Array.from(body.split(','), Number);
}

/** A cosine similarity from a cosine distance; a zero vector (NaN) has none, as on SQLite. */
function similarity(distance: number): number {
  return Number.isNaN(distance) ? 0 : 1 - distance;
}

/**
 * `and …` conditions of the scope filters on a vector table `v`, parameters appended. With
 * `indexable` false they are written so that no B-tree index can serve them (`(…) is true`),
 * which leaves the planner the HNSW index as the only ordered path.
 */
function vectorScope(filter: SearchFilter, params: unknown[], indexable = true): string {
  const conditions: string[] = [];
  if (filter.projectId !== undefined) {
    params.push(filter.projectId);
    conditions.push(`v.project_key = $${params.length}`);
  }
  if (filter.documentId !== undefined) {
    params.push(filter.documentId);
    conditions.push(`v.document_id = $${params.length}`);
  }
  return conditions.map((c) => (indexable ? ` and ${c}` : ` and (${c}) is true`)).join('');
}

interface VectorTable {
  name: string;
  dimensions: number;
}

/**
 * The expression the HNSW index is built on and searched by: the vector itself, or up to 4,000
 * dimensions its half-precision copy; null above that (exact search only).
 */
function annExpression(table: VectorTable, column: string): string | null {
  if (table.dimensions <= HNSW_MAX_VECTOR) return column;
  if (table.dimensions <= HNSW_MAX_HALFVEC) return `(${column}::halfvec(${table.dimensions}))`;
  return null;
}

function annQuery(table: VectorTable, param: string): string {
  return table.dimensions <= HNSW_MAX_VECTOR
    ? `${param}::vector`
    : `${param}::vector::halfvec(${table.dimensions})`;
}

/** Old lexeme counts of a document's keyword rows, returned by `deleteKeywordRows`. */
interface Removed {
  lexemes: string[];
  counts: number[];
  chunks: number;
  tokens: number;
}

/** A query lexeme for BM25: `weight` = its idf times the number of query words it stems from. */
interface Bm25Term {
  lexeme: string;
  df: number;
  idf: number;
  weight: number;
}

interface ScoredChunk {
  chunkId: string;
  seq: number;
  score: number;
}

/** A tsquery matching any of the lexemes (quoted: no lexeme is read as tsquery syntax). */
function tsqueryOr(terms: readonly Bm25Term[]): string {
  return terms
    .map((t) => `'${t.lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`)
    .join(' | ');
}

interface Features {
  /** pgvector 0.8+: `hnsw.iterative_scan` keeps scanning until the filters leave enough rows. */
  iterativeScan: boolean;
  vectorOid: number;
}

export class PostgresChunkStore implements ChunkStore {
  private readonly vectorTables = new Map<string, VectorTable>();
  private readonly exactSearchMax: number;
  private readonly roundPostings: number;
  /** Word → lexeme: stemming is deterministic, and a commit's words are mostly known ones. */
  private readonly stems = new Map<string, string>();
  private features: Promise<Features> | null = null;

  constructor(
    private readonly pool: Pool,
    options: {
      /** Scopes of up to this many chunks are searched exactly (default 10,000). */
      exactSearchMax?: number;
      /** Postings a MaxScore round takes at most (default 5,000); tests force rounds with 1. */
      roundPostings?: number;
    } = {},
  ) {
    this.exactSearchMax = options.exactSearchMax ?? EXACT_SEARCH_MAX;
    this.roundPostings = options.roundPostings ?? ROUND_POSTINGS;
  }

  // --- plumbing ---------------------------------------------------------------------------------

  private transaction<T>(begin: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
    return withTransaction(this.pool, begin, fn);
  }

  private loadFeatures(): Promise<Features> {
    this.features ??= (async () => {
      // Casting loads pgvector's library, which defines its settings in this session.
      const { rows } = await this.pool.query<{ oid: number; iterative: boolean }>(
        `select 'vector'::regtype::oid::int as oid,
           '[1]'::vector is not null and exists (select 1 from pg_settings where name = 'hnsw.iterative_scan') as iterative`,
      );
      const row = rows[0];
      if (row === undefined) throw new Error('pgvector is not available');
      return { iterativeScan: row.iterative, vectorOid: row.oid };
    })().catch((error: unknown) => {
      this.features = null;
      throw error;
    });
    return this.features;
  }

  /** The vector table of a (model, dimensions): created (race-safe) when `create` is true. */
  private async vectorTable(
    client: PoolClient | Pool,
    model: string,
    dimensions: number,
    create: boolean,
  ): Promise<VectorTable | null> {
    const key = `${model}\u0000${dimensions}`;
    const cached = this.vectorTables.get(key);
    if (cached !== undefined) return cached;
    const find = async () =>
      (
        await client.query<{ table_name: string }>(
          'select table_name from knowledge_vector_tables where model = $1 and dimensions = $2',
          [model, dimensions],
        )
      ).rows[0]?.table_name;
    let name = await find();
    let created = false;
    if (name === undefined && create) {
      name = `knowledge_vec_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
      // Instances indexing their first document of a new model together: one creates the table,
      // the others wait here until it commits and then find it.
      await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, name]);
      if ((await find()) === undefined) {
        created = true;
        const table = { name, dimensions };
        const ann = annExpression(table, 'embedding');
        const opclass = dimensions <= HNSW_MAX_VECTOR ? 'vector_cosine_ops' : 'halfvec_cosine_ops';
        await client.query(
          `create table if not exists ${name} (
             chunk_id text primary key references knowledge_chunks (id) on delete cascade,
             document_id text not null,
             project_key text not null,
             embedding vector(${dimensions}) not null
           )`,
        );
        await client.query(`create index if not exists ${name}_document on ${name} (document_id)`);
        await client.query(`create index if not exists ${name}_project on ${name} (project_key)`);
        if (ann !== null) {
          await client.query(
            `create index if not exists ${name}_hnsw on ${name} using hnsw (${ann} ${opclass})`,
          );
        }
        await client.query(
          `insert into knowledge_vector_tables (model, dimensions, table_name) values ($1, $2, $3)
           on conflict do nothing`,
          [model, dimensions, name],
        );
      }
    }
    if (name === undefined) return null;
    const table = { name, dimensions };
    // Not a table this transaction created: other searches must not use it before it commits.
    if (!created) this.vectorTables.set(key, table);
    return table;
  }

  /**
   * The lexeme of every given word: stems from the cache, the others from PostgreSQL's stemmer
   * in one query (the same SQL the keyword query uses, so index and query always agree).
   */
  private async stemmer(
    client: PoolClient,
    lists: readonly (readonly string[])[],
  ): Promise<(word: string) => string> {
    const known = new Map<string, string>();
    const missing = new Set<string>();
    for (const words of lists) {
      for (const word of words) {
        if (known.has(word) || missing.has(word)) continue;
        const lexeme = this.stems.get(word);
        if (lexeme === undefined) missing.add(word);
        else known.set(word, lexeme);
      }
    }
    if (missing.size > 0) {
      const { rows } = await client.query<{ word: string; lexeme: string }>(
        `select w.word, ${stemSql('w.word')} as lexeme from unnest($1::text[]) as w(word)`,
        [[...missing]],
      );
      if (this.stems.size + rows.length > STEM_CACHE_MAX) this.stems.clear();
      for (const r of rows) {
        known.set(r.word, r.lexeme);
        this.stems.set(r.word, r.lexeme);
      }
    }
    return (word) => known.get(word) ?? word;
  }

  private async allVectorTables(client: PoolClient): Promise<string[]> {
    const { rows } = await client.query<{ table_name: string }>(
      'select table_name from knowledge_vector_tables order by table_name',
    );
    return rows.map((r) => r.table_name);
  }

  // --- writing ----------------------------------------------------------------------------------

  /** Deletes the document's keyword rows, returning what they counted in the BM25 statistics. */
  private async deleteKeywordRows(client: PoolClient, documentId: string): Promise<Removed> {
    const { rows } = await client.query<Removed>(
      `with gone as (
         delete from knowledge_chunks_fts where document_id = $1 returning terms, token_count
       ),
       counted as (
         select u.lexeme, count(*)::int as n
         from gone cross join lateral unnest(tsvector_to_array(gone.terms)) as u(lexeme)
         group by u.lexeme
       )
       select coalesce((select array_agg(lexeme order by lexeme) from counted), '{}') as lexemes,
              coalesce((select array_agg(n order by lexeme) from counted), '{}') as counts,
              (select count(*)::int from gone) as chunks,
              (select coalesce(sum(token_count), 0)::int from gone) as tokens`,
      [documentId],
    );
    return rows[0] ?? { lexemes: [], counts: [], chunks: 0, tokens: 0 };
  }

  /** Deletes the document's chunks and their index rows (vectors of every model). */
  private async deleteChunks(client: PoolClient, documentId: string): Promise<Removed> {
    const removed = await this.deleteKeywordRows(client, documentId);
    for (const table of await this.allVectorTables(client)) {
      await client.query(`delete from ${table} where document_id = $1`, [documentId]);
    }
    await client.query('delete from knowledge_chunks where document_id = $1', [documentId]);
    return removed;
  }

  /**
   * Applies the BM25 statistics change of a document: + its current keyword rows, − the removed
   * ones. Last in the transaction and in lexeme order, so that concurrent commits hold the
   * shared counter rows briefly and never deadlock.
   */
  private async updateStatistics(
    client: PoolClient,
    documentId: string,
    removed: Removed,
    added: { chunks: number; tokens: number },
  ): Promise<void> {
    await client.query(
      `with delta as (
         select lexeme, sum(n)::int as n from (
           select u.lexeme, count(*)::int as n
           from knowledge_chunks_fts f cross join lateral unnest(tsvector_to_array(f.terms)) as u(lexeme)
           where f.document_id = $1 group by u.lexeme
           union all
           select o.lexeme, -o.n from unnest($2::text[], $3::int[]) as o(lexeme, n)
         ) x group by lexeme having sum(n) <> 0
       )
       insert into knowledge_fts_terms (lexeme, chunks)
       select lexeme, n from delta order by lexeme
       on conflict (lexeme) do update set chunks = knowledge_fts_terms.chunks + excluded.chunks`,
      [documentId, removed.lexemes, removed.counts],
    );
    if (removed.lexemes.length > 0) {
      await client.query(
        'delete from knowledge_fts_terms where lexeme = any($1::text[]) and chunks <= 0',
        [removed.lexemes],
      );
    }
    const chunks = added.chunks - removed.chunks;
    const tokens = added.tokens - removed.tokens;
    if (chunks !== 0 || tokens !== 0) {
      await client.query(
        'update knowledge_fts_stats set chunks = chunks + $1, tokens = tokens + $2 where id = 1',
        [chunks, tokens],
      );
    }
  }

  async commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    const features = await this.loadFeatures();
    try {
      return await this.transaction('begin', async (client) => {
        const doc = (
          await client.query<{ name: string; project_key: string }>(
            `select name, project_key from knowledge_documents
             where id = $1 and index_token = $2 for update`,
            [commit.documentId, commit.indexToken],
          )
        ).rows[0];
        if (doc === undefined) return 'discarded';
        const table = await this.vectorTable(client, commit.model, commit.dimensions, true);
        if (table === null) throw new Error('the vector table was not created');
        const removed = await this.deleteChunks(client, commit.documentId);
        const now = new Date().toISOString();
        const chunks = commit.chunks;
        // Keyword rows: positions weighted A (section path, 2.0), B (name, 1.5), D (content, 1.0).
        const nameWords = indexWords(doc.name);
        const sectionWords = chunks.map((c) => indexWords(c.sectionPath));
        const contentWords = chunks.map((c) => indexWords(c.content));
        const stem = await this.stemmer(client, [nameWords, ...sectionWords, ...contentWords]);
        const terms: string[] = [];
        const tokenCounts: number[] = [];
        for (let i = 0; i < chunks.length; i++) {
          const positions = new Map<string, string[]>();
          let at = 0;
          const add = (words: readonly string[], weight: string) => {
            for (const word of words) {
              at = Math.min(at + 1, MAX_POSITION);
              const lexeme = stem(word);
              // Counted in the length, but not indexed: no query can name it.
              if (!fitsTsvector(lexeme)) continue;
              const list = positions.get(lexeme);
              if (list === undefined) positions.set(lexeme, [`${at}${weight}`]);
              else list.push(`${at}${weight}`);
            }
          };
          add(nameWords, 'B');
          add(sectionWords[i] ?? [], 'A');
          add(contentWords[i] ?? [], '');
          terms.push(tsvectorLiteral(positions));
          tokenCounts.push(
            nameWords.length + (sectionWords[i]?.length ?? 0) + (contentWords[i]?.length ?? 0),
          );
        }
        // In batches: every statement stays well inside the statement timeout (inserting into the
        // HNSW index takes a few milliseconds per vector).
        for (let from = 0; from < chunks.length; from += INSERT_BATCH) {
          const batch = chunks.slice(from, from + INSERT_BATCH);
          const ids = batch.map((c) => c.id);
          await client.query(
            `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content,
               token_estimate, metadata, embedding_model, embedding_dimensions, content_hash, created_at)
             select t.id, $2, t.chunk_index, t.section_path, t.page, t.content, t.token_estimate,
               t.metadata, $3, $4, t.content_hash, $5
             from unnest($1::text[], $6::int[], $7::text[], $8::int[], $9::text[], $10::int[],
               $11::text[], $12::text[])
               as t(id, chunk_index, section_path, page, content, token_estimate, metadata, content_hash)`,
            [
              ids,
              commit.documentId,
              commit.model,
              commit.dimensions,
              now,
              batch.map((c) => c.chunkIndex),
              batch.map((c) => c.sectionPath),
              batch.map((c) => c.page),
              batch.map((c) => c.content),
              batch.map((c) => c.tokenEstimate),
              batch.map((c) => JSON.stringify(c.metadata)),
              batch.map((c) => c.contentHash),
            ],
          );
          await client.query(
            `insert into knowledge_chunks_fts (chunk_id, document_id, project_key, token_count, terms)
             select t.id, $2, $3, t.token_count, t.terms
             from unnest($1::text[], $4::int[], $5::tsvector[]) as t(id, token_count, terms)`,
            [
              ids,
              commit.documentId,
              doc.project_key,
              tokenCounts.slice(from, from + INSERT_BATCH),
              terms.slice(from, from + INSERT_BATCH),
            ],
          );
          await client.query(
            `insert into ${table.name} (chunk_id, document_id, project_key, embedding)
             select t.id, $2, $3, t.embedding from unnest($1::text[], $4::vector[]) as t(id, embedding)`,
            [
              ids,
              commit.documentId,
              doc.project_key,
              vectorArrayBinary(
                features.vectorOid,
                batch.map((c) => c.vector),
              ),
            ],
          );
        }
        await client.query(
          `update knowledge_documents set status = 'indexed', version = version + 1,
             markdown_path = $1, converter_command = $2, converter_meta = $3, error_message = null,
             embedding_model = $4, index_token = null, updated_at = $5
           where id = $6`,
          [
            commit.document.markdown_path,
            commit.document.converter_command,
            commit.document.converter_meta,
            commit.model,
            now,
            commit.documentId,
          ],
        );
        await this.updateStatistics(client, commit.documentId, removed, {
          chunks: chunks.length,
          tokens: tokenCounts.reduce((a, b) => a + b, 0),
        });
        return 'committed';
      });
    } catch (error) {
      this.features = null; // e.g. pgvector re-created with another type oid
      throw error;
    }
  }

  async deleteDocument(documentId: string): Promise<boolean> {
    return this.transaction('begin', async (client) => {
      const found = await client.query(
        'select 1 from knowledge_documents where id = $1 for update',
        [documentId],
      );
      if (found.rowCount === 0) return false;
      const removed = await this.deleteChunks(client, documentId);
      await client.query('delete from knowledge_documents where id = $1', [documentId]);
      await this.updateStatistics(client, documentId, removed, { chunks: 0, tokens: 0 });
      return true;
    });
  }

  // --- reading ----------------------------------------------------------------------------------

  async listChunks(documentId: string): Promise<ChunkRow[]> {
    const { rows } = await this.pool.query<ChunkRow>(
      'select * from knowledge_chunks where document_id = $1 order by chunk_index',
      [documentId],
    );
    return rows;
  }

  async cachedVectors(
    model: string,
    dimensions: number,
    hashes: string[],
  ): Promise<Map<string, Float32Array>> {
    const result = new Map<string, Float32Array>();
    if (hashes.length === 0) return result;
    const table = await this.vectorTable(this.pool, model, dimensions, false);
    if (table === null) return result;
    // One vector per hash, of its smallest chunk id (as on SQLite).
    const { rows } = await this.pool.query<{ hash: string; embedding: string }>(
      `select distinct on (c.content_hash) c.content_hash as hash, v.embedding::text as embedding
       from knowledge_chunks c join ${table.name} v on v.chunk_id = c.id
       where c.embedding_model = $1 and c.embedding_dimensions = $2
         and c.content_hash = any($3::text[])
       order by c.content_hash, c.id`,
      [model, dimensions, hashes],
    );
    for (const row of rows) result.set(row.hash, parseVector(row.embedding));
    return result;
  }

  warm(): Promise<number> {
    return Promise.resolve(0);
  }

  async search(request: SearchRequest, rank: Ranking): Promise<RankedHit[]> {
    const { text, vector, model, filter, limit } = request;
    const features = vector === null ? null : await this.loadFeatures();
    const words = text === null ? [] : keywordQueryWords(text);
    // One snapshot for the evidence and the rows: no commit lands in between.
    let begin = 'begin isolation level repeatable read read only';
    if (vector !== null) {
      // A much wider HNSW beam than the default 40 (recall over speed); with pgvector 0.8+ the
      // scan goes on past filtered-out rows until `limit` pass (re-ordered by exact distance).
      begin += `; set local hnsw.ef_search = ${Math.min(1000, Math.max(HNSW_EF_SEARCH, 2 * limit))}`;
      if (features?.iterativeScan === true) {
        begin += '; set local hnsw.iterative_scan = relaxed_order';
        begin += `; set local hnsw.max_scan_tuples = ${Math.max(20_000, 200 * limit)}`;
      }
    }
    return this.transaction(begin, async (client) => {
      const keyword =
        words.length === 0 ? [] : await this.keywordSearch(client, words, filter, limit);
      const table =
        vector === null ? null : await this.vectorTable(client, model, vector.length, false);
      const semantic =
        vector === null || table === null
          ? []
          : await this.vectorSearch(client, table, vector, filter, limit);
      const cosine =
        vector === null || table === null
          ? new Map<string, number>()
          : await this.similarities(
              client,
              table,
              vector,
              keyword.map((k) => k.chunkId),
            );
      for (const s of semantic) cosine.set(s.chunkId, s.score);
      const top = rank({ keyword, semantic, cosine });
      const rows = new Map(
        (
          await this.hits(
            client,
            top.map((c) => c.chunkId),
          )
        ).map((r) => [r.id, r]),
      );
      return top.flatMap((c) => {
        const chunk = rows.get(c.chunkId);
        return chunk === undefined ? [] : [{ score: c.score, chunk }];
      });
    });
  }

  /**
   * Keyword candidates ranked by BM25 exactly as FTS5's bm25() scores them: per query word
   * idf · f·(k1 + 1) / (f + k1·(1 − b + b·len/avglen)), k1 1.2, b 0.75, idf =
   * ln((N − n + 0.5) / (n + 0.5)) (1e-6 when not positive), f the occurrences weighted by column
   * (section path 2.0, document name 1.5, content 1.0), N, n and the average length over every
   * chunk in the index (the statistics tables), len the chunk's length in words.
   *
   * Every chunk matching a word must be scored, but not those that cannot reach the top (MaxScore):
   * the rarest words first, then the commoner ones only while a chunk holding nothing else could
   * still beat the current `limit`-th score (a word adds less than idf · (k1 + 1)).
   */
  private async keywordSearch(
    client: PoolClient,
    words: string[],
    filter: SearchFilter,
    limit: number,
  ): Promise<Candidate[]> {
    // As on SQLite, where the project filter compares the documents' project_id.
    if (filter.projectId === '') return [];
    const { rows } = await client.query<{ lexeme: string; df: number; n: number; tokens: number }>(
      `select l.lexeme, coalesce(t.chunks, 0)::float8 as df, s.chunks::float8 as n,
         s.tokens::float8 as tokens
       from unnest($1::text[]) with ordinality as w(word, ord)
         cross join lateral (select ${stemSql('w.word')} as lexeme) as l
         left join knowledge_fts_terms t on t.lexeme = l.lexeme
         cross join knowledge_fts_stats s
       order by w.ord`,
      [words],
    );
    const stats = rows[0];
    if (stats === undefined || stats.n === 0) return [];
    // One term per lexeme; a lexeme of several words counts once per word, as FTS5 phrases do.
    const byLexeme = new Map<string, Bm25Term>();
    for (const r of rows) {
      if (r.df === 0) continue; // in no chunk: it matches and scores nothing
      const term = byLexeme.get(r.lexeme);
      if (term !== undefined) {
        term.weight += term.idf;
        continue;
      }
      const raw = Math.log((stats.n - r.df + 0.5) / (r.df + 0.5));
      const idf = raw > 0 ? raw : 1e-6;
      byLexeme.set(r.lexeme, { lexeme: r.lexeme, df: r.df, idf, weight: idf });
    }
    const terms = [...byLexeme.values()];
    if (terms.length === 0) return [];
    const avgdl = stats.tokens / stats.n;
    const fast = await this.bm25TopK(client, terms, avgdl, filter, limit + 32, false);
    // The status of the documents is checked on the ranked rows: unsearchable chunks (of failed
    // re-indexes) are rare. Too many of them to be sure of the top `limit`: rank again, joined.
    const searchable = await this.searchableChunks(
      client,
      fast.map((c) => c.chunkId),
    );
    const kept = fast.filter((c) => searchable.has(c.chunkId));
    if (kept.length >= limit || fast.length < limit + 32) return kept.slice(0, limit);
    return this.bm25TopK(client, terms, avgdl, filter, limit, true);
  }

  /** The `fetch` best-scoring chunks (ties in index order), by MaxScore rounds. */
  private async bm25TopK(
    client: PoolClient,
    terms: Bm25Term[],
    avgdl: number,
    filter: SearchFilter,
    fetch: number,
    joined: boolean,
  ): Promise<Candidate[]> {
    // Rarest first: they bound the score of a chunk most, and match the fewest chunks.
    const order = [...terms].sort((a, b) => b.weight - a.weight);
    const bound = (from: number) =>
      order.slice(from).reduce((sum, t) => sum + t.weight * (K1 + 1), 0);
    let best: ScoredChunk[] = [];
    let done = 0;
    while (done < order.length) {
      // This round's words: the next one, and more while they match few chunks together.
      let end = done + 1;
      let postings = order[done]?.df ?? 0;
      while (end < order.length && postings + (order[end]?.df ?? 0) <= this.roundPostings) {
        postings += order[end]?.df ?? 0;
        end++;
      }
      const threshold = best.length < fetch ? null : (best[fetch - 1]?.score ?? null);
      const round = await this.bm25Round(client, {
        terms,
        avgdl,
        round: order.slice(done, end),
        before: order.slice(0, done),
        prune: threshold === null ? null : { threshold, rest: bound(end) },
        filter,
        fetch,
        joined,
      });
      best = [...best, ...round].sort((a, b) => b.score - a.score || a.seq - b.seq).slice(0, fetch);
      done = end;
      // A chunk with none of the words scored so far scores less than the rest's bounds together.
      if (best.length === fetch && bound(done) <= (best[fetch - 1]?.score ?? 0)) break;
    }
    return best.map((c) => ({ chunkId: c.chunkId, score: c.score }));
  }

  /**
   * One MaxScore round: the chunks matching one of `round`'s words and none of `before`'s, best
   * `fetch` first. With `prune`, a chunk is scored in full only if its score on the round's words
   * plus the bounds of the words after them (`rest`) can reach `threshold`. Scope filters apply
   * on the keyword rows themselves; `joined` checks the documents' status inside.
   */
  private async bm25Round(
    client: PoolClient,
    round: {
      terms: Bm25Term[];
      avgdl: number;
      round: Bm25Term[];
      before: Bm25Term[];
      prune: { threshold: number; rest: number } | null;
      filter: SearchFilter;
      fetch: number;
      joined: boolean;
    },
  ): Promise<ScoredChunk[]> {
    const { terms, filter } = round;
    const params: unknown[] = [round.avgdl, round.fetch, tsqueryOr(round.round)];
    const param = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    // Weighted occurrences of a lexeme: ts_rank_cd of a one-lexeme query sums the weights of its
    // positions ({D, C, B, A} = content 0.5, -, name 0.75, section 1.0: half of FTS5's weights).
    const frequency = (t: Bm25Term) =>
      `2 * ts_rank_cd('{0.5,0.5,0.75,1}', f.terms, ${param(tsqueryOr([t]))}::tsquery)::float8`;
    const k = `${K1}::float8 * (${1 - B}::float8 + ${B}::float8 * f.token_count / $1::float8)`;
    let where = 'f.terms @@ $3::tsquery';
    if (round.before.length > 0) {
      where += ` and not f.terms @@ ${param(tsqueryOr(round.before))}::tsquery`;
    }
    if (filter.projectId !== undefined) where += ` and f.project_key = ${param(filter.projectId)}`;
    if (filter.documentId !== undefined) {
      where += ` and f.document_id = ${param(filter.documentId)}`;
    }
    if (round.prune !== null) {
      // w·f·(k1+1)/(f+K) written as w·(k1+1)·(1 − K/(f+K)): f computed once. A bound only (the
      // score below is FTS5's formula), hence the margin.
      const partial = round.round
        .map(
          (t) => `${param(t.weight * (K1 + 1))}::float8 * (1 - (${k}) / (${frequency(t)} + ${k}))`,
        )
        .join(' + ');
      where += ` and ${partial} >= ${param(round.prune.threshold - round.prune.rest - 1e-9)}::float8`;
    }
    // The chunks hold none of the earlier words: those score 0 and are left out of the sum.
    const scored = terms.map((t, i) => ({ t, i })).filter(({ t }) => !round.before.includes(t));
    const frequencies = scored.map(({ t, i }) => `${frequency(t)} as f${i}`).join(', ');
    const score = scored
      .map(
        ({ t, i }) =>
          `${param(t.weight)}::float8 * (x.f${i} * ${K1 + 1}::float8) / (x.f${i} + x.k)`,
      )
      .join(' + ');
    const { rows } = await client.query<ScoredChunk>(
      `select f.chunk_id as "chunkId", f.seq::float8 as seq, ${score} as score
       from knowledge_chunks_fts f
         ${round.joined ? 'join knowledge_documents d on d.id = f.document_id' : ''}
         -- offset 0: each frequency computed once per chunk, not once per use
         cross join lateral (select ${frequencies}, ${k} as k offset 0) as x
       where ${where}${round.joined ? ` and ${SEARCHABLE}` : ''}
       order by score desc, f.seq
       limit $2`,
      params,
    );
    return rows;
  }

  /** Which of the chunks belong to searchable documents. */
  private async searchableChunks(client: PoolClient, chunkIds: string[]): Promise<Set<string>> {
    if (chunkIds.length === 0) return new Set();
    const { rows } = await client.query<{ id: string }>(
      `select f.chunk_id as id from knowledge_chunks_fts f
       join knowledge_documents d on d.id = f.document_id
       where f.chunk_id = any($1::text[]) and ${SEARCHABLE}`,
      [chunkIds],
    );
    return new Set(rows.map((r) => r.id));
  }

  private async vectorSearch(
    client: PoolClient,
    table: VectorTable,
    vector: Float32Array,
    filter: SearchFilter,
    limit: number,
  ): Promise<Candidate[]> {
    const ann = annExpression(table, 'v.embedding');
    let exact = ann === null;
    if (!exact) {
      // How many chunks are in scope (the whole table without filters), counted up to the
      // threshold: a small scope or collection is searched exactly (recall 1, and fast).
      const countParams: unknown[] = [];
      const { rows } = await client.query<{ n: number }>(
        `select count(*)::int as n from (
           select 1 from ${table.name} v
           where true${vectorScope(filter, countParams)} limit ${this.exactSearchMax + 1}
         ) s`,
        countParams,
      );
      exact = (rows[0]?.n ?? 0) <= this.exactSearchMax;
    }
    if (!exact) {
      const ranked = await this.nearest(client, table, vector, filter, limit);
      if (ranked !== null) return ranked;
    }
    // Exact: every chunk in scope, through a B-tree index on the filter (a narrow scope), or all
    // of them; and the fallback of `nearest`.
    const params: unknown[] = [vectorBinary(vector), limit];
    const { rows } = await client.query<{ chunkId: string; distance: number }>(
      `with scoped as materialized (
         select v.chunk_id, v.embedding <=> $1::vector as distance
         from ${table.name} v join knowledge_documents d on d.id = v.document_id
         where ${SEARCHABLE}${vectorScope(filter, params)}
       )
       select chunk_id as "chunkId", distance from scoped
       where distance <> 'NaN' order by distance, chunk_id limit $2`,
      params,
    );
    return rows.map((r) => ({ chunkId: r.chunkId, score: similarity(r.distance) }));
  }

  /**
   * The nearest chunks in scope by the HNSW index: the scope filters apply inside the scan
   * (pgvector 0.8+ scans on until `limit` rows pass them), and the result is re-ordered by exact
   * distance, since relaxed_order may swap a few. The status of the documents is checked after
   * the scan, on `limit + 32` rows (as on SQLite): null when too many were dropped to be sure of
   * the top `limit`, and the caller then searches exactly.
   */
  private async nearest(
    client: PoolClient,
    table: VectorTable,
    vector: Float32Array,
    filter: SearchFilter,
    limit: number,
  ): Promise<Candidate[] | null> {
    const fetch = limit + 32;
    const params: unknown[] = [vectorBinary(vector), fetch];
    // Filters that no B-tree can serve, on the vector table alone (a join would offer the planner
    // a path by document), and no sequential scan: the planner is left with the graph, where it
    // would rather sort every chunk of a scope it estimates small (or has no statistics for).
    const scope = vectorScope(filter, params, false);
    if (scope !== '') await client.query('set local enable_seqscan = off');
    const { rows } = await client.query<{
      chunkId: string;
      distance: number;
      searchable: boolean;
    }>(
      `select s.chunk_id as "chunkId", s.distance, ${SEARCHABLE} as searchable
       from (
         select v.chunk_id, v.document_id, v.embedding <=> $1::vector as distance
         from ${table.name} v
         where true${scope}
         order by ${annExpression(table, 'v.embedding') ?? 'v.embedding'} <=> ${annQuery(table, '$1')}
         limit $2
       ) s
       join knowledge_documents d on d.id = s.document_id
       order by s.distance, s.chunk_id`,
      params,
    );
    if (scope !== '') await client.query('set local enable_seqscan = on');
    const kept = rows.filter((r) => r.searchable && !Number.isNaN(r.distance));
    if (kept.length < limit && rows.length === fetch) return null;
    return kept.slice(0, limit).map((r) => ({ chunkId: r.chunkId, score: similarity(r.distance) }));
  }

  private async similarities(
    client: PoolClient,
    table: VectorTable,
    vector: Float32Array,
    chunkIds: string[],
  ): Promise<Map<string, number>> {
    const result = new Map<string, number>();
    if (chunkIds.length === 0) return result;
    const { rows } = await client.query<{ id: string; distance: number }>(
      `select chunk_id as id, embedding <=> $1::vector as distance from ${table.name}
       where chunk_id = any($2::text[])`,
      [vectorBinary(vector), chunkIds],
    );
    for (const r of rows) result.set(r.id, similarity(r.distance));
    return result;
  }

  private async hits(client: PoolClient, chunkIds: string[]): Promise<ChunkHit[]> {
    if (chunkIds.length === 0) return [];
    const { rows } = await client.query<ChunkHit>(
      `select c.*, d.name as document_name, d.project_id as project_id, d.source as source
       from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
       where c.id = any($1::text[])`,
      [chunkIds],
    );
    return rows;
  }
}
