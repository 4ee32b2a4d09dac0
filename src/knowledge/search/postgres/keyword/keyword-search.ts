/**
 * Keyword search on PostgreSQL: BM25 exactly as FTS5's bm25() scores it (../bm25.ts), with N, n
 * and the average length from the statistics tables kept by keyword-rows.ts, over the packed
 * postings of the query's lexemes (postings.ts), scored here (keyword-scoring.ts) with the same
 * arithmetic in the same order as SQLite's in-process index, so both engines give the same scores
 * to the bit and the same ranking (ties in index order).
 *
 * Why not in SQL: scoring in SQL reads every matching chunk's tsvector and runs ts_rank_cd on it;
 * the postings of a lexeme are a few packed rows per document, so a search reads ~10 bytes per
 * matching chunk and scores them in a typed array. Reading those bytes is still most of the time
 * (~2 MB for a few common words at 100k chunks; docs/performance.md): the statistics, n(t) and
 * the rows of hot lexemes stay in this process (postings-cache.ts), valid for one keyword
 * generation; what is missing is read in one statement (keyword-statements.ts).
 *
 * Round trips are the rest: a search whose words are all in memory is scored before it reads
 * anything (`fromMemory`), and the statement that then loads the ranked rows also reads the
 * generation; the caller (postgres-searches.ts) keeps the answer only if that is the generation
 * it was scored at, so it is what one snapshot would have given.
 */
import type { PoolClient } from 'pg';
import { idf, maxBm25 } from '../../bm25.js';
import type { SearchFilter } from '../../chunk-store.js';
import { KeywordScorer, type QueryLexeme, type ScoredSeq } from './keyword-scoring.js';
import { readTerms } from './keyword-statements.js';
import {
  PostingsCache,
  type CachedTerm,
  type KeywordStats,
  type PostingsRow,
} from './postings-cache.js';
import type { Stemmer } from './words.js';

/** Seq → chunk id pairs kept (~100 bytes each). */
const CHUNK_IDS_KEPT = 100_000;

/** A keyword ranking and what it was computed from. */
export interface KeywordRanking {
  /** The best chunks by BM25, best first (ties by seq). */
  top: ScoredSeq[];
  /** The BM25 of the chunks asked for besides (`rank`'s `also`) that match. */
  also: ScoredSeq[];
  /** The largest BM25 a chunk could score for these words (bm25.ts maxBm25). */
  max: number;
  /** The keyword generation of the statistics and postings used (-1: no statistics row). */
  generation: number;
}

/** The statistics and lexemes of one search's words, and where their rows are. */
interface Terms {
  generation: number;
  stats: KeywordStats;
  words: QueryLexeme[];
  rowsOf: (lexeme: string) => readonly PostingsRow[];
}

export class KeywordSearch {
  private readonly scorer = new KeywordScorer();
  /** Chunk ids of the seqs of recent top k's (rememberChunkId). */
  private readonly idsBySeq = new Map<number, string>();
  private highestGeneration = 0;

  constructor(
    private readonly stemmer: Stemmer,
    private readonly cache = new PostingsCache(),
  ) {}

  /**
   * The best keyword candidates of the query word groups (keywordQueryWords) by BM25, with N, n
   * and the average length over every chunk in the index (the statistics tables); and `max`, the
   * largest BM25 a chunk could score for these words (bm25.ts maxBm25: every word, also one in no
   * chunk, with its idf), as the SQLite store computes it. With `fromMemory`, a search whose
   * statistics and lexemes are all held is answered without a statement, at the generation they
   * were read at: the caller must check that the database is still at it. `also`: seqs of chunks
   * whose BM25 is wanted whatever their rank.
   */
  async rank(
    client: PoolClient,
    groups: readonly string[][],
    filter: SearchFilter,
    limit: number,
    fromMemory: boolean,
    also: readonly number[] = [],
  ): Promise<KeywordRanking> {
    const words = groups.flat();
    const terms =
      (fromMemory ? this.held(words) : undefined) ?? (await this.read(client, words, filter));
    if (terms === null) return { top: [], also: [], max: 0, generation: -1 };
    const { generation, stats } = terms;
    if (stats.chunks === 0) return { top: [], also: [], max: 0, generation };
    const max = maxBm25(terms.words.map((w) => idf(stats.chunks, w.df)));
    // A generation lower than one seen: a database restored under this process (seqs reused).
    if (generation < this.highestGeneration) this.idsBySeq.clear();
    this.highestGeneration = generation;
    // As on SQLite, where the project filter compares the documents' project_id.
    if (filter.projectId === '' || limit <= 0) return { top: [], also: [], max, generation };
    // The groups as lexemes (a lexeme in no chunk: its group matches and scores nothing).
    let at = 0;
    const lexemeGroups: QueryLexeme[][] = [];
    for (const group of groups) {
      const lexemes = group.map(() => terms.words[at++] ?? { lexeme: '', df: 0 });
      if (lexemes.every((r) => r.df > 0)) lexemeGroups.push(lexemes);
    }
    const avgdl = stats.tokens / stats.chunks;
    const scored = this.scorer.top(
      lexemeGroups,
      terms.rowsOf,
      filter,
      stats.chunks,
      avgdl,
      limit,
      also,
    );
    return { ...scored, max, generation };
  }

  /** Forgets what is held (the database was found at another generation than a search used). */
  forget(): void {
    this.cache.reset();
  }

  /**
   * The chunk ids of keyword rows, by seq: from memory, the others in one statement. A keyword
   * row's seq names one chunk for good (a bigserial, never reused; a re-index writes new rows):
   * the pairs met stay, in insertion order, the oldest out beyond CHUNK_IDS_KEPT. Only seqs of
   * postings valid in the caller's snapshot are asked for.
   */
  async chunkIds(client: PoolClient, seqs: readonly number[]): Promise<Map<number, string>> {
    const unknown = seqs.filter((seq) => !this.idsBySeq.has(seq));
    if (unknown.length > 0) {
      const ids = await client.query<{ seq: number; chunk_id: string }>(
        'select seq::float8 as seq, chunk_id from knowledge_chunks_fts where seq = any($1::bigint[])',
        [unknown],
      );
      for (const r of ids.rows) this.rememberChunkId(r.seq, r.chunk_id);
    }
    const found = new Map<number, string>();
    for (const seq of seqs) {
      const id = this.idsBySeq.get(seq);
      if (id !== undefined) found.set(seq, id);
    }
    return found;
  }

  private rememberChunkId(seq: number, chunkId: string): void {
    if (this.idsBySeq.size >= CHUNK_IDS_KEPT) {
      const oldest = this.idsBySeq.keys().next();
      if (oldest.done !== true) this.idsBySeq.delete(oldest.value);
    }
    this.idsBySeq.set(seq, chunkId);
  }

  /** The terms of the words from memory, if every one is held at the held generation. */
  private held(words: readonly string[]): Terms | undefined {
    const generation = this.cache.generation;
    const stats = this.cache.stats(generation);
    if (stats === undefined) return undefined;
    const held = new Map<string, CachedTerm>();
    const lexemes: QueryLexeme[] = [];
    for (const word of words) {
      const lexeme = this.stemmer.known(word);
      if (lexeme === undefined) return undefined;
      const term = held.get(lexeme) ?? this.cache.get(lexeme, generation);
      if (term === undefined) return undefined;
      held.set(lexeme, term);
      lexemes.push({ lexeme, df: term.df });
    }
    return {
      generation,
      stats,
      words: lexemes,
      rowsOf: (lexeme) => held.get(lexeme)?.rows ?? [],
    };
  }

  /**
   * The statistics, the words' lexemes and n(t), in one statement with the postings rows of the
   * lexemes not held (every one's when the database is at another generation than the held one):
   * every searchable document's, then kept, unless the scope names documents (then only theirs,
   * not kept). Null when there is no statistics row.
   */
  private async read(
    client: PoolClient,
    words: readonly string[],
    filter: SearchFilter,
  ): Promise<Terms | null> {
    const heldAt = this.cache.generation;
    const held = new Map<string, CachedTerm>();
    const wanted: number[] = [];
    for (const [i, word] of words.entries()) {
      const lexeme = this.stemmer.known(word);
      const term = lexeme === undefined ? undefined : this.cache.get(lexeme, heldAt);
      if (lexeme === undefined || term === undefined) wanted.push(i);
      else held.set(lexeme, term);
    }
    const keep = filter.documentId === undefined && filter.documentIds === undefined;
    // Only candidates are needed (not `max` alone): otherwise no postings at all.
    const candidates = filter.projectId !== '';
    const read = await readTerms(client, words, {
      words: candidates ? wanted : [],
      unlessGeneration: candidates ? heldAt : null,
      ...(keep ? {} : { documentIds: scopeDocuments(filter), projectKey: filter.projectId }),
    });
    if (read === null) return null;
    const fresh = read.generation !== heldAt;
    this.cache.setStats(read.generation, read.stats);
    const readLexemes = new Set<string>();
    for (const [i, word] of words.entries()) {
      const { lexeme, df } = read.words[i] ?? { lexeme: word, df: 0 };
      this.stemmer.remember(word, lexeme);
      if (!candidates || (!fresh && held.has(lexeme))) continue;
      readLexemes.add(lexeme);
      // A lexeme in no chunk is read again next time: nothing to hold, and no answer from memory
      // then rests on n(t) = 0 (a migration's backfill of keyword rows bumps no generation).
      if (keep && df > 0) {
        this.cache.set(lexeme, read.generation, { df, rows: read.postings.get(lexeme) ?? [] });
      }
    }
    return {
      generation: read.generation,
      stats: read.stats,
      words: read.words,
      rowsOf: (lexeme) =>
        readLexemes.has(lexeme)
          ? (read.postings.get(lexeme) ?? [])
          : (held.get(lexeme)?.rows ?? []),
    };
  }
}

/** The documents a filter names (both conditions: those in both), or undefined. */
function scopeDocuments(filter: SearchFilter): readonly string[] | undefined {
  const { documentId, documentIds } = filter;
  if (documentId === undefined) return documentIds;
  if (documentIds === undefined) return [documentId];
  return documentIds.includes(documentId) ? [documentId] : [];
}
