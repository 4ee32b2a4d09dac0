/**
 * The keyword postings on PostgreSQL: one row per (lexeme, document) in
 * `knowledge_fts_postings`, holding, for every chunk of the document with the lexeme, what BM25
 * needs of it: its position in index order (`seq`, as an offset from the document's first), its
 * length in words (D) and the lexeme's weighted count in it (f, doubled: an integer). A search
 * reads the rows of its lexemes only (a few per document, packed) and scores them exactly in
 * memory (keyword-search.ts, keyword-scoring.ts), instead of decoding every matching chunk's
 * tsvector in SQL.
 *
 * Rows are written and deleted with their document's keyword rows, in the same transaction; one
 * document's rows are its own, so concurrent commits never touch the same row.
 */
import type { PoolClient } from 'pg';
import { COLUMN_WEIGHTS } from '../../bm25.js';

/** Bytes per posting: uint32 seq offset, uint32 length, uint16 doubled count. */
const POSTING_BYTES = 10;

/** The BM25 column weights doubled (integers): section path A, document name B, text. */
export const DOUBLED_WEIGHTS = {
  section: COLUMN_WEIGHTS.section * 2,
  name: COLUMN_WEIGHTS.name * 2,
  content: COLUMN_WEIGHTS.content * 2,
} as const;

/** A doubled weighted count as the SQLite index keeps it (a Uint16, saturating). */
export const MAX_COUNT = 0xffff;

/** One chunk's keyword facts for the postings: its seq, length and doubled counts per lexeme. */
export interface ChunkPostings {
  seq: number;
  length: number;
  counts: ReadonlyMap<string, number>;
}

/** The packed postings of one (lexeme, document): columns of seq offsets, lengths, counts. */
export function packPostings(
  entries: readonly { offset: number; length: number; count: number }[],
): Buffer {
  const n = entries.length;
  const buffer = Buffer.allocUnsafe(n * POSTING_BYTES);
  for (let i = 0; i < n; i++) {
    const e = entries[i];
    if (e === undefined) continue;
    buffer.writeUInt32LE(e.offset, 4 * i);
    buffer.writeUInt32LE(Math.min(e.length, 0xffffffff), 4 * (n + i));
    buffer.writeUInt16LE(Math.min(e.count, MAX_COUNT), 8 * n + 2 * i);
  }
  return buffer;
}

/** A packed postings row read back: typed-array columns of seq offsets, lengths and counts. */
export class PackedPostings {
  readonly size: number;
  /** Bytes of the packed row. */
  readonly byteLength: number;
  readonly offsets: Uint32Array;
  readonly lengths: Uint32Array;
  readonly counts: Uint16Array;

  constructor(buffer: Uint8Array) {
    const n = Math.floor(buffer.length / POSTING_BYTES);
    this.size = n;
    this.byteLength = buffer.length;
    // Views need 4-byte alignment (little-endian hosts only: the layout is little-endian).
    const bytes = buffer.byteOffset % 4 === 0 && LITTLE_ENDIAN ? buffer : new Uint8Array(buffer);
    if (!LITTLE_ENDIAN) {
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      this.offsets = Uint32Array.from({ length: n }, (_, i) => view.getUint32(4 * i, true));
      this.lengths = Uint32Array.from({ length: n }, (_, i) => view.getUint32(4 * (n + i), true));
      this.counts = Uint16Array.from({ length: n }, (_, i) => view.getUint16(8 * n + 2 * i, true));
      return;
    }
    this.offsets = new Uint32Array(bytes.buffer, bytes.byteOffset, n);
    this.lengths = new Uint32Array(bytes.buffer, bytes.byteOffset + 4 * n, n);
    this.counts = new Uint16Array(bytes.buffer, bytes.byteOffset + 8 * n, n);
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Writes the postings rows of a document from its chunks (all of them: rows are per document),
 * in batches of lexemes.
 */
export async function insertPostings(
  client: PoolClient,
  documentId: string,
  projectKey: string,
  chunks: readonly ChunkPostings[],
): Promise<void> {
  if (chunks.length === 0) return;
  let base = Number.POSITIVE_INFINITY;
  for (const c of chunks) base = Math.min(base, c.seq);
  const byLexeme = new Map<string, { offset: number; length: number; count: number }[]>();
  // In seq order, so that each row lists its chunks in index order.
  const ordered = [...chunks].sort((a, b) => a.seq - b.seq);
  for (const c of ordered) {
    for (const [lexeme, count] of c.counts) {
      const entry = { offset: c.seq - base, length: c.length, count };
      const list = byLexeme.get(lexeme);
      if (list === undefined) byLexeme.set(lexeme, [entry]);
      else list.push(entry);
    }
  }
  const lexemes = [...byLexeme.keys()].sort();
  const BATCH = 5000;
  for (let from = 0; from < lexemes.length; from += BATCH) {
    const slice = lexemes.slice(from, from + BATCH);
    await client.query(
      `insert into knowledge_fts_postings (lexeme, document_id, project_key, seq_base, postings)
       select t.lexeme, $2, $3, $4, t.postings from unnest($1::text[], $5::bytea[]) as t(lexeme, postings)`,
      [slice, documentId, projectKey, base, slice.map((l) => packPostings(byLexeme.get(l) ?? []))],
    );
  }
}

/** Deletes a document's postings rows. */
export async function deletePostings(client: PoolClient, documentId: string): Promise<void> {
  await client.query('delete from knowledge_fts_postings where document_id = $1', [documentId]);
}
