/**
 * What keyword searches read, kept in this process for one keyword generation: the BM25
 * statistics (N, words in all), and per lexeme its chunk count n(t) and postings rows. Reading a
 * common lexeme's postings is most of a keyword search on PostgreSQL: at 100k chunks a query of a
 * few common words reads ~2 MB of packed postings (out of TOAST, hex-encoded, over the socket),
 * where scoring them takes a few ms (docs/performance.md).
 *
 * Exact across instances: entries are valid for one keyword generation (migration 0016), which
 * every change of the postings, the statistics or the searchable documents bumps in its
 * transaction. A search uses an entry only if the generation it reads in its own snapshot is the
 * one the entry was read at (keyword-search.ts), so it sees what it would have read from the
 * tables. Bounded: least recently used lexemes leave beyond `maxBytes` of postings.
 */
import type { PackedPostings } from './postings.js';

/** One (lexeme, document) postings row of a searchable document. */
export interface PostingsRow {
  documentId: string;
  projectKey: string;
  /** The seq of the document's first chunk (postings hold offsets from it). */
  base: number;
  postings: PackedPostings;
  /** Its BM25 parts at an idf and average length (keyword-scoring.ts), computed on first use. */
  impacts?: { w: number; avgdl: number; values: Float64Array };
}

/** A lexeme as a search needs it: n(t), and the postings rows of every searchable document. */
export interface CachedTerm {
  df: number;
  rows: PostingsRow[];
}

/** The index-wide BM25 statistics: chunks (N) and their words in all (N · avgD). */
export interface KeywordStats {
  chunks: number;
  tokens: number;
}

/** Bytes held by a row besides its postings (strings, object, typed-array headers). */
const ROW_OVERHEAD = 200;
/** Bytes held by a term besides its rows (the key, the entry). */
const TERM_OVERHEAD = 100;

/** Default budget: the postings of the commonest lexemes at ~100k chunks. */
export const DEFAULT_POSTINGS_CACHE_BYTES = 128 * 2 ** 20;

export class PostingsCache {
  private heldGeneration = -1;
  private statistics: KeywordStats | undefined;
  /** Lexeme → its term, in least-recently-used order (a Map keeps insertion order). */
  private readonly entries = new Map<string, { term: CachedTerm; bytes: number }>();
  private held = 0;

  constructor(private readonly maxBytes = DEFAULT_POSTINGS_CACHE_BYTES) {}

  /** The generation the entries were read at (-1: none yet). */
  get generation(): number {
    return this.heldGeneration;
  }

  /** The statistics, if they were read at `generation`. */
  stats(generation: number): KeywordStats | undefined {
    return generation === this.heldGeneration ? this.statistics : undefined;
  }

  /** Keeps the statistics read at `generation` (another generation drops every entry first). */
  setStats(generation: number, stats: KeywordStats): void {
    if (this.maxBytes <= 0) return;
    if (generation !== this.heldGeneration) this.clear(generation);
    this.statistics = stats;
  }

  /** The term of `lexeme` if it was read at `generation`. */
  get(lexeme: string, generation: number): CachedTerm | undefined {
    if (generation !== this.heldGeneration) return undefined;
    const entry = this.entries.get(lexeme);
    if (entry === undefined) return undefined;
    this.entries.delete(lexeme);
    this.entries.set(lexeme, entry);
    return entry.term;
  }

  /**
   * Keeps the term of `lexeme` (every searchable document's rows) read at `generation`. Another
   * generation than the one held drops every entry first (older or newer: a restored database
   * may count again from a lower value).
   */
  set(lexeme: string, generation: number, term: CachedTerm): void {
    if (this.maxBytes <= 0) return;
    if (generation !== this.heldGeneration) this.clear(generation);
    let bytes = TERM_OVERHEAD;
    // The packed postings, then their BM25 parts (8 bytes each) once scored.
    for (const row of term.rows) {
      bytes += row.postings.byteLength + 8 * row.postings.size + ROW_OVERHEAD;
    }
    if (bytes > this.maxBytes) return;
    const old = this.entries.get(lexeme);
    if (old !== undefined) {
      this.entries.delete(lexeme);
      this.held -= old.bytes;
    }
    for (const [key, entry] of this.entries) {
      if (this.held + bytes <= this.maxBytes) break;
      this.entries.delete(key);
      this.held -= entry.bytes;
    }
    this.entries.set(lexeme, { term, bytes });
    this.held += bytes;
  }

  /** Forgets everything (a search found the database at another generation). */
  reset(): void {
    this.clear(-1);
  }

  /** What the cache holds: lexemes and bytes (for tests and benchmarks). */
  get size(): { lexemes: number; bytes: number; generation: number } {
    return { lexemes: this.entries.size, bytes: this.held, generation: this.heldGeneration };
  }

  private clear(generation: number): void {
    this.entries.clear();
    this.statistics = undefined;
    this.held = 0;
    this.heldGeneration = generation;
  }
}
