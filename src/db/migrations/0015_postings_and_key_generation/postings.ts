/**
 * Frozen copy, as of migration 0015, of the postings writer in
 * knowledge/search/postgres/keyword/postings.ts (and the BM25 column weights of
 * knowledge/search/bm25.ts). Migrations import nothing from knowledge/: editing the live code
 * must never change what an old migration writes. Do not edit to follow the live code; a new
 * postings format is a new migration.
 *
 * One row per (lexeme, document) in `knowledge_fts_postings`, holding, for every chunk of the
 * document with the lexeme, what BM25 needs of it: its position in index order (`seq`, as an
 * offset from the document's first), its length in words (D) and the lexeme's weighted count in
 * it (f, doubled: an integer).
 */
import type { PoolClient } from 'pg';

/**
 * Weights of the searched columns: a word in the section path counts twice, in the document
 * name one and a half times, in the text once.
 */
const COLUMN_WEIGHTS = { name: 1.5, section: 2.0, content: 1.0 } as const;

/** Bytes per posting: uint32 seq offset, uint32 length, uint16 doubled count. */
const POSTING_BYTES = 10;

/** The BM25 column weights doubled (integers): section path A, document name B, text. */
export const DOUBLED_WEIGHTS = {
  section: COLUMN_WEIGHTS.section * 2,
  name: COLUMN_WEIGHTS.name * 2,
  content: COLUMN_WEIGHTS.content * 2,
} as const;

/** A doubled weighted count as the SQLite index keeps it (a Uint16, saturating). */
const MAX_COUNT = 0xffff;

/** One chunk's keyword facts for the postings: its seq, length and doubled counts per lexeme. */
export interface ChunkPostings {
  seq: number;
  length: number;
  counts: ReadonlyMap<string, number>;
}

/** The packed postings of one (lexeme, document): columns of seq offsets, lengths, counts. */
function packPostings(
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
