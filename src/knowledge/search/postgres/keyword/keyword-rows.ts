/**
 * The keyword side of a PostgreSQL commit or delete: a chunk's words as a weighted tsvector (one
 * row per chunk in `knowledge_chunks_fts`), and the BM25 statistics kept beside them: chunks and
 * words in all (`knowledge_fts_stats`) and chunks per lexeme (`knowledge_fts_terms`), exactly the
 * N, avgD and n(t) FTS5 keeps for its bm25().
 */
import type { PoolClient } from 'pg';
import { sliceTurn } from '../../../../event-loop-turns.js';
import { COLUMN_WEIGHTS } from '../../bm25.js';
import type { NewChunk } from '../../chunk-store.js';
import { tsvectorLiteral } from '../encoding.js';
import { DOUBLED_WEIGHTS, type ChunkPostings } from './postings.js';
import { fitsTsvector, indexWords, type Stemmer } from './words.js';

/** FTS5 and tsvector both stop counting positions at some point; tsvector at 16383. */
const MAX_POSITION = 16_383;

/** A word's position carries its column's label: section path A, document name B, text D (none). */
const LABEL = { section: 'A', name: 'B', content: '' } as const;

/** ts_rank_cd's weights are at most 1: they hold the BM25 column weights divided by this. */
export const RANK_SCALE = 2;

/**
 * ts_rank_cd's weights, by label {D, C, B, A}: ts_rank_cd of a one-lexeme query then sums, over
 * the lexeme's positions, its column's BM25 weight / RANK_SCALE.
 */
export const RANK_WEIGHTS = `{${[
  COLUMN_WEIGHTS.content,
  COLUMN_WEIGHTS.content,
  COLUMN_WEIGHTS.name,
  COLUMN_WEIGHTS.section,
]
  .map((w) => w / RANK_SCALE)
  .join(',')}}`;

/**
 * The keyword rows of a commit's chunks: tsvector literals, word counts (BM25's D) and each
 * chunk's doubled weighted count per lexeme (for the postings, postings.ts).
 */
export interface KeywordRows {
  terms: string[];
  tokenCounts: number[];
  counts: Map<string, number>[];
}

/** Old lexeme counts of a document's keyword rows, returned by `deleteKeywordRows`. */
export interface Removed {
  lexemes: string[];
  counts: number[];
  chunks: number;
  tokens: number;
}

/** Chunks turned into keyword rows per slice by keywordRows (a few milliseconds of work). */
const KEYWORD_SLICE = 256;

/**
 * The weighted tsvector and word count of each chunk of a document named `name`, in slices that
 * yield to the event loop between them (one pass over a large document held it for seconds).
 */
export async function keywordRows(
  client: PoolClient,
  stemmer: Stemmer,
  name: string,
  chunks: readonly Pick<NewChunk, 'sectionPath' | 'content'>[],
): Promise<KeywordRows> {
  const nameWords = indexWords(name);
  const rows: KeywordRows = { terms: [], tokenCounts: [], counts: [] };
  for (let from = 0; from < chunks.length; from += KEYWORD_SLICE) {
    if (from > 0) await sliceTurn(); // requests waiting for a turn go first (event-loop-turns.ts)
    const slice = chunks.slice(from, from + KEYWORD_SLICE);
    const sectionWords = slice.map((c) => indexWords(c.sectionPath, 'path'));
    const contentWords = slice.map((c) => indexWords(c.content));
    const stem = await stemmer.lexemes(client, [nameWords, ...sectionWords, ...contentWords]);
    for (let i = 0; i < slice.length; i++) {
      const positions = new Map<string, string[]>();
      const counts = new Map<string, number>();
      let at = 0;
      const add = (words: readonly string[], label: string, weight: number) => {
        for (const word of words) {
          at = Math.min(at + 1, MAX_POSITION);
          const lexeme = stem(word);
          // Counted in the length, but not indexed: no query can name it.
          if (!fitsTsvector(lexeme)) continue;
          counts.set(lexeme, (counts.get(lexeme) ?? 0) + weight);
          const list = positions.get(lexeme);
          if (list === undefined) positions.set(lexeme, [`${at}${label}`]);
          else list.push(`${at}${label}`);
        }
      };
      add(nameWords, LABEL.name, DOUBLED_WEIGHTS.name);
      add(sectionWords[i] ?? [], LABEL.section, DOUBLED_WEIGHTS.section);
      add(contentWords[i] ?? [], LABEL.content, DOUBLED_WEIGHTS.content);
      rows.terms.push(tsvectorLiteral(positions));
      rows.counts.push(counts);
      rows.tokenCounts.push(
        nameWords.length + (sectionWords[i]?.length ?? 0) + (contentWords[i]?.length ?? 0),
      );
    }
  }
  return rows;
}

/**
 * Inserts the keyword rows of chunks `ids` of a document, which are `rows.keyword`'s rows from
 * `rows.from` on, and returns their postings (for insertPostings, postings.ts).
 */
export async function insertKeywordRows(
  client: PoolClient,
  ids: readonly string[],
  documentId: string,
  projectKey: string,
  rows: { keyword: KeywordRows; from: number },
): Promise<ChunkPostings[]> {
  const { keyword, from } = rows;
  const inserted = await client.query<{ id: string; seq: number }>(
    `insert into knowledge_chunks_fts (chunk_id, document_id, project_key, token_count, terms)
     select t.id, $2, $3, t.token_count, t.terms
     from unnest($1::text[], $4::int[], $5::tsvector[]) as t(id, token_count, terms)
     returning chunk_id as id, seq::float8 as seq`,
    [
      ids,
      documentId,
      projectKey,
      keyword.tokenCounts.slice(from, from + ids.length),
      keyword.terms.slice(from, from + ids.length),
    ],
  );
  const at = new Map(ids.map((id, i) => [id, from + i]));
  return inserted.rows.map(({ id, seq }) => {
    const i = at.get(id) ?? 0;
    return {
      seq,
      length: keyword.tokenCounts[i] ?? 0,
      counts: keyword.counts[i] ?? new Map<string, number>(),
    };
  });
}

/**
 * Deletes the keyword rows of the given chunks (a slice of a hidden document's) and subtracts
 * them from the BM25 statistics, in lexeme order (as updateStatistics: no deadlock with commits).
 */
export async function purgeKeywordRows(client: PoolClient, chunkIds: string[]): Promise<void> {
  const removed = await removeKeywordRows(client, 'chunk_id = any($1::text[])', chunkIds);
  if (removed.chunks === 0) return;
  await client.query(
    `insert into knowledge_fts_terms (lexeme, chunks)
     select lexeme, -n from unnest($1::text[], $2::int[]) as o(lexeme, n) order by lexeme
     on conflict (lexeme) do update set chunks = knowledge_fts_terms.chunks + excluded.chunks`,
    [removed.lexemes, removed.counts],
  );
  await client.query(
    'delete from knowledge_fts_terms where lexeme = any($1::text[]) and chunks <= 0',
    [removed.lexemes],
  );
  await client.query(
    'update knowledge_fts_stats set chunks = chunks - $1, tokens = tokens - $2 where id = 1',
    [removed.chunks, removed.tokens],
  );
}

/** Deletes the document's keyword rows, returning what they counted in the BM25 statistics. */
export function deleteKeywordRows(client: PoolClient, documentId: string): Promise<Removed> {
  return removeKeywordRows(client, 'document_id = $1', documentId);
}

/** Deletes the keyword rows `where` ($1 = `param`) selects; returns what they counted. */
async function removeKeywordRows(
  client: PoolClient,
  where: 'chunk_id = any($1::text[])' | 'document_id = $1',
  param: string | string[],
): Promise<Removed> {
  const { rows } = await client.query<Removed>(
    `with gone as (
       delete from knowledge_chunks_fts where ${where} returning terms, token_count
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
    [param],
  );
  return rows[0] ?? { lexemes: [], counts: [], chunks: 0, tokens: 0 };
}

/**
 * Applies the BM25 statistics change of a document (or of several documents written together,
 * whose keyword rows are all new): + their current keyword rows, − the removed ones. Last in the
 * transaction and in lexeme order, so that concurrent commits hold the shared counter rows
 * briefly and never deadlock.
 */
export async function updateStatistics(
  client: PoolClient,
  documentId: string | readonly string[],
  removed: Removed,
  added: { chunks: number; tokens: number },
): Promise<void> {
  await client.query(
    `with delta as (
       select lexeme, sum(n)::int as n from (
         select u.lexeme, count(*)::int as n
         from knowledge_chunks_fts f cross join lateral unnest(tsvector_to_array(f.terms)) as u(lexeme)
         where f.document_id = any($1::text[]) group by u.lexeme
         union all
         select o.lexeme, -o.n from unnest($2::text[], $3::int[]) as o(lexeme, n)
       ) x group by lexeme having sum(n) <> 0
     )
     insert into knowledge_fts_terms (lexeme, chunks)
     select lexeme, n from delta order by lexeme
     on conflict (lexeme) do update set chunks = knowledge_fts_terms.chunks + excluded.chunks`,
    [typeof documentId === 'string' ? [documentId] : documentId, removed.lexemes, removed.counts],
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

/**
 * Bumps the keyword generation (migration 0016) that the caches of the postings check
 * (postings-cache.ts): after any change of a transaction's postings, last in it (with the
 * statistics row, held briefly). Called on its own, after both the statistics and the postings
 * changed (a commit's updateStatistics, a purge's purgeKeywordRows and deletePostings).
 */
export async function bumpKeywordGeneration(client: PoolClient): Promise<void> {
  await client.query('update knowledge_fts_stats set generation = generation + 1 where id = 1');
}
