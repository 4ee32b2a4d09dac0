/**
 * The postings rows of hot lexemes kept in this process (issue 13). Reading a common lexeme's
 * postings is most of a keyword search on PostgreSQL: at 100k chunks a query of a few common
 * words reads ~2 MB of packed postings (out of TOAST, hex-encoded, over the socket), 100+ ms on a
 * loaded machine, where scoring them takes a few.
 *
 * Exact across instances: entries are valid for one keyword generation (migration 0016), which
 * every change of the postings or of the searchable documents bumps in its transaction. A search
 * reads the generation in its own snapshot, with the statistics, and takes an entry only if it
 * was read at that same generation; so it sees what it would have read from the tables.
 * Bounded: least recently used lexemes leave beyond `maxBytes` of postings.
 */
import type { PackedPostings } from './postings.js';

/** One (lexeme, document) postings row of a searchable document. */
export interface PostingsRow {
  documentId: string;
  projectKey: string;
  /** The seq of the document's first chunk (postings hold offsets from it). */
  base: number;
  postings: PackedPostings;
  /** Its BM25 parts at an idf and average length (keyword-search.ts), computed on first use. */
  impacts?: { w: number; avgdl: number; values: Float64Array };
}

/** Bytes held by a row besides its postings (strings, object, typed-array headers). */
const ROW_OVERHEAD = 200;

/** Default budget: the postings of the commonest lexemes at ~100k chunks. */
export const DEFAULT_POSTINGS_CACHE_BYTES = 128 * 2 ** 20;

export class PostingsCache {
  private generation = -1;
  /** Lexeme → its rows, in least-recently-used order (a Map keeps insertion order). */
  private readonly entries = new Map<string, { rows: PostingsRow[]; bytes: number }>();
  private held = 0;

  constructor(private readonly maxBytes = DEFAULT_POSTINGS_CACHE_BYTES) {}

  /** The rows of `lexeme` if they were read at `generation`. */
  get(lexeme: string, generation: number): PostingsRow[] | undefined {
    if (generation !== this.generation) return undefined;
    const entry = this.entries.get(lexeme);
    if (entry === undefined) return undefined;
    this.entries.delete(lexeme);
    this.entries.set(lexeme, entry);
    return entry.rows;
  }

  /**
   * Keeps the rows of `lexeme` (every searchable document's) read at `generation`. Another
   * generation than the one held drops every entry first (older or newer: a restored database
   * may count again from a lower value).
   */
  set(lexeme: string, generation: number, rows: PostingsRow[]): void {
    if (this.maxBytes <= 0) return;
    if (generation !== this.generation) this.clear(generation);
    let bytes = 0;
    // The packed postings, then their BM25 parts (8 bytes each) once scored.
    for (const row of rows) bytes += row.postings.byteLength + 8 * row.postings.size + ROW_OVERHEAD;
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
    this.entries.set(lexeme, { rows, bytes });
    this.held += bytes;
  }

  /** What the cache holds: lexemes and bytes (for tests and benchmarks). */
  get size(): { lexemes: number; bytes: number; generation: number } {
    return { lexemes: this.entries.size, bytes: this.held, generation: this.generation };
  }

  private clear(generation: number): void {
    this.entries.clear();
    this.held = 0;
    this.generation = generation;
  }
}
