/**
 * The statements of a PostgreSQL keyword search (keyword-search.ts), each one round trip and one
 * snapshot, named so that each connection parses and plans them once:
 *
 * - `readTerms`: the keyword generation and statistics, each query word's lexeme and n(t), and
 *   the postings rows of the lexemes the search does not hold in memory (all of them when the
 *   generation is not the one it holds);
 * - `rowsBySeq` / `rowsById`: the ranked chunks with their documents, and the generation again
 *   (in the snapshot of that statement), so that a search scored from memory or from an earlier
 *   statement knows whether anything changed in between.
 */
import type { PoolClient } from 'pg';
import type { KnowledgeChunksTable } from '../../../../db/schema.js';
import { SEARCHABLE, type ChunkHit } from '../../chunk-store.js';
import type { KeywordStats, PostingsRow } from './postings-cache.js';
import { PackedPostings } from './postings.js';
import { stemSql } from './words.js';

/** What `readTerms` found: null when the statistics row is missing (an empty index). */
export interface TermsRead {
  generation: number;
  stats: KeywordStats;
  /** Per query word, in order: its lexeme and n(t). */
  words: { lexeme: string; df: number }[];
  /** Postings rows of the lexemes read, by lexeme (absent: no searchable document has it). */
  postings: Map<string, PostingsRow[]>;
}

/** Which postings `readTerms` reads besides the statistics. */
export interface PostingsWanted {
  /** Positions (0-based) of the words whose postings are read... */
  words: readonly number[];
  /** ...or every word's, when the generation is not this one (-1: none held; null: never). */
  unlessGeneration: number | null;
  /** Only these documents' rows (a filter naming documents: not kept), or all. */
  documentIds?: readonly string[];
  /** Only this project's rows (with `documentIds`). */
  projectKey?: string;
}

const READ_TERMS = `with s as (
    select chunks, tokens, generation from knowledge_fts_stats where id = 1
  ), w as (
    select w.ord, ${stemSql('w.word')} as lexeme
    from unnest($1::text[]) with ordinality as w(word, ord)
  ), wanted as (
    select distinct w.lexeme from w cross join s
    where w.ord = any($2::bigint[]) or s.generation <> $3::bigint
  )
  select w.ord::int as ord, w.lexeme, coalesce(t.chunks, 0)::float8 as df,
    s.chunks::float8 as n, s.tokens::float8 as tokens, s.generation::float8 as generation,
    null::text as document_id, null::text as project_key, null::float8 as base,
    null::text as postings
  from w cross join s left join knowledge_fts_terms t on t.lexeme = w.lexeme
  union all
  select null, p.lexeme, null, null, null, null, p.document_id, p.project_key,
    p.seq_base::float8, encode(p.postings, 'base64')
  from wanted join knowledge_fts_postings p on p.lexeme = wanted.lexeme
    join knowledge_documents d on d.id = p.document_id
  where ${SEARCHABLE}
    and ($4::text[] is null or p.document_id = any($4::text[]))
    and ($5::text is null or p.project_key = $5::text)`;

/** The statistics, the words' lexemes and n(t), and the wanted postings, in one snapshot. */
export async function readTerms(
  client: PoolClient,
  words: readonly string[],
  wanted: PostingsWanted,
): Promise<TermsRead | null> {
  const { rows } = await client.query<{
    ord: number | null;
    lexeme: string;
    df: number | null;
    n: number | null;
    tokens: number | null;
    generation: number | null;
    document_id: string | null;
    project_key: string | null;
    base: number | null;
    /** Base64: a third fewer bytes to encode, send and decode than bytea's hex (~30% faster). */
    postings: string | null;
  }>({
    // Renamed with its text: a pool one process shares between builds (bench:pg-keyword --before)
    // must not meet one name for two texts.
    name: 'aps_keyword_terms_b64',
    text: READ_TERMS,
    values: [
      words,
      wanted.words.map((i) => i + 1),
      wanted.unlessGeneration,
      wanted.documentIds ?? null,
      wanted.documentIds === undefined ? null : (wanted.projectKey ?? null),
    ],
  });
  let read: TermsRead | null = null;
  const lexemes: { lexeme: string; df: number }[] = [];
  const postings = new Map<string, PostingsRow[]>();
  for (const row of rows) {
    if (row.ord !== null) {
      lexemes[row.ord - 1] = { lexeme: row.lexeme, df: row.df ?? 0 };
      read ??= {
        generation: row.generation ?? 0,
        stats: { chunks: row.n ?? 0, tokens: row.tokens ?? 0 },
        words: lexemes,
        postings,
      };
      continue;
    }
    if (row.postings === null) continue;
    const decoded = Buffer.from(row.postings, 'base64');
    // A small Buffer is a view of a shared 8 KB slab: a kept row holds its own bytes only.
    const bytes =
      decoded.byteLength === decoded.buffer.byteLength ? decoded : new Uint8Array(decoded);
    const item: PostingsRow = {
      documentId: row.document_id ?? '',
      projectKey: row.project_key ?? '',
      base: row.base ?? 0,
      postings: new PackedPostings(bytes),
    };
    const list = postings.get(row.lexeme);
    if (list === undefined) postings.set(row.lexeme, [item]);
    else list.push(item);
  }
  return read;
}

/**
 * Every column of a chunk row, named: a prepared statement's result must keep its shape when a
 * later migration adds a column (`c.*` would fail on the instances still running). `Missing`
 * names a column of the table (but SQLite's own `fts_rowid`) left out here: it must be none.
 */
const CHUNK_COLUMNS = [
  'id',
  'document_id',
  'chunk_index',
  'section_path',
  'page',
  'content',
  'token_estimate',
  'metadata',
  'embedding_model',
  'embedding_dimensions',
  'content_hash',
  'created_at',
  'run_token',
  'page_end',
] as const satisfies readonly (keyof KnowledgeChunksTable)[];
type Missing = Exclude<keyof KnowledgeChunksTable, (typeof CHUNK_COLUMNS)[number] | 'fts_rowid'>;
/** The list of columns, when it names them all (a compile error otherwise). */
const columns = <T>(list: [Missing] extends [never] ? T : never): T => list;

/** The columns of a ranked chunk (ChunkHit) and the generation of the statement's snapshot. */
const HIT_COLUMNS = `s.generation::float8 as generation,
  ${columns(CHUNK_COLUMNS)
    .map((c) => `c.${c}`)
    .join(', ')}, d.name as document_name,
  d.project_id as project_id, d.source as source, d.metadata as document_metadata`;

/** Rows of ranked chunks, and the keyword generation of the snapshot they were read in. */
export interface RankedRows<K> {
  generation: number;
  rows: Map<K, ChunkHit>;
}

type HitRow = ChunkHit & { generation: number; seq?: number };

function rankedRows<K>(rows: HitRow[], key: (row: HitRow) => K): RankedRows<K> {
  const found = new Map<K, ChunkHit>();
  let generation = -1;
  for (const row of rows) {
    generation = row.generation;
    // The statistics row joined to no chunk: only the generation.
    if ((row.id as string | null) === null) continue;
    const k = key(row);
    // The row becomes the hit: without the columns that are not the chunk's.
    const hit: ChunkHit & Partial<Pick<HitRow, 'generation' | 'seq'>> = row;
    delete hit.generation;
    delete hit.seq;
    found.set(k, hit);
  }
  return { generation, rows: found };
}

/** The chunks of these keyword rows (by seq), with their documents. */
export async function rowsBySeq(
  client: PoolClient,
  seqs: readonly number[],
): Promise<RankedRows<number>> {
  const { rows } = await client.query<HitRow>({
    name: 'aps_keyword_rows',
    text: `select ${HIT_COLUMNS}, f.seq::float8 as seq
      from knowledge_fts_stats s left join (knowledge_chunks_fts f
        join knowledge_chunks c on c.id = f.chunk_id
        join knowledge_documents d on d.id = c.document_id) on f.seq = any($1::bigint[])
      where s.id = 1`,
    values: [seqs],
  });
  return rankedRows(rows, (row) => row.seq ?? 0);
}

/** The chunks of these ids, with their documents. */
export async function rowsById(
  client: PoolClient,
  ids: readonly string[],
): Promise<RankedRows<string>> {
  const { rows } = await client.query<HitRow>({
    name: 'aps_keyword_rows_by_id',
    text: `select ${HIT_COLUMNS}
      from knowledge_fts_stats s left join (knowledge_chunks c
        join knowledge_documents d on d.id = c.document_id) on c.id = any($1::text[])
      where s.id = 1`,
    values: [ids],
  });
  return rankedRows(rows, (row) => row.id);
}
