/**
 * Keyword search on PostgreSQL: BM25 exactly as FTS5's bm25() scores it (../bm25.ts), with N, n
 * and the average length from the statistics tables kept by keyword-rows.ts, over the packed
 * postings of the query's lexemes (postings.ts) read in one statement and scored here, the same
 * arithmetic in the same order as SQLite's in-process index (sqlite/keyword-index.ts), so both
 * engines give the same scores to the bit and the same ranking (ties in index order).
 *
 * Why not in SQL: scoring in SQL read every matching chunk's tsvector and ran ts_rank_cd on it
 * (68 ms p50 at 100k chunks); the postings of a lexeme are a few packed rows per document, so a
 * search reads ~10 bytes per matching chunk and scores them in a typed array. Those bytes were
 * still most of the time (~2 MB for a few common words at 100k chunks): the rows of hot lexemes
 * stay in this process (postings-cache.ts), checked against the keyword generation read in the
 * search's snapshot.
 */
import type { PoolClient } from 'pg';
import { B, idf, K1, maxBm25 } from '../bm25.js';
import { SEARCHABLE, type Candidate, type SearchFilter } from '../chunk-store.js';
import { PostingsCache, type PostingsRow } from './postings-cache.js';
import { PackedPostings } from './postings.js';
import { stemSql } from './words.js';

/** The postings rows of one lexeme in the scope: per document, its slot and its postings. */
interface LexemeRows {
  df: number;
  rows: { start: number; row: PostingsRow }[];
}

/** A document's slots in the score arrays: its chunks' seqs from `base`, `size` of them. */
interface DocumentSlots {
  base: number;
  start: number;
  size: number;
}

/** Seq → chunk id pairs kept (~100 bytes each). */
const CHUNK_IDS_KEPT = 100_000;

/** `a` ranks below `b`: a lower score, or the same score and a later seq. */
const below = (a: Ranked, b: Ranked) => a.score < b.score || (a.score === b.score && a.seq > b.seq);

interface Ranked {
  slot: number;
  seq: number;
  score: number;
}

/**
 * The `limit` best (score, slot) pairs, best first, ties by seq (index order, as SQLite's rowid):
 * one pass keeping a heap of the `limit` best so far (its worst on top), so that only slots that
 * enter it are looked up and turned into objects.
 */
function topK(
  scores: Float64Array,
  touched: readonly number[],
  seqOf: (slot: number) => number,
  limit: number,
): Ranked[] {
  const heap: Ranked[] = [];
  const down = (from: number) => {
    for (let i = from; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < heap.length && below(heap[l] as Ranked, heap[worst] as Ranked)) worst = l;
      if (r < heap.length && below(heap[r] as Ranked, heap[worst] as Ranked)) worst = r;
      if (worst === i) return;
      [heap[i], heap[worst]] = [heap[worst] as Ranked, heap[i] as Ranked];
      i = worst;
    }
  };
  for (const slot of touched) {
    const score = scores[slot] as number;
    if (heap.length < limit) {
      heap.push({ slot, seq: seqOf(slot), score });
      for (let i = heap.length - 1; i > 0;) {
        const parent = (i - 1) >> 1;
        if (!below(heap[i] as Ranked, heap[parent] as Ranked)) break;
        [heap[i], heap[parent]] = [heap[parent] as Ranked, heap[i] as Ranked];
        i = parent;
      }
      continue;
    }
    const top = heap[0] as Ranked;
    if (score < top.score) continue;
    const candidate = { slot, seq: seqOf(slot), score };
    if (!below(top, candidate)) continue;
    heap[0] = candidate;
    down(0);
  }
  return heap.sort((a, b) => b.score - a.score || a.seq - b.seq);
}

/**
 * A row's BM25 parts of its lexeme, one per posting (FTS5's formula, as keyword-index.ts writes
 * it): kept on the row, since a cached row is scored again with the same idf and average length
 * until the generation changes (checked here too: they are the row's key).
 */
function impactsOf(row: PostingsRow, w: number, avgdl: number): Float64Array {
  const kept = row.impacts;
  if (kept !== undefined && kept.w === w && kept.avgdl === avgdl) return kept.values;
  const { lengths, counts, size } = row.postings;
  const values = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    const f = (counts[i] as number) / 2;
    const d = lengths[i] as number;
    values[i] = w * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + (B * d) / avgdl)));
  }
  row.impacts = { w, avgdl, values };
  return values;
}

export class KeywordSearch {
  private scratch = new Float64Array(0);
  /** Chunk ids of the seqs of recent top k's (rememberChunkId). */
  private readonly chunkIds = new Map<number, string>();
  private highestGeneration = 0;

  constructor(private readonly cache = new PostingsCache()) {}

  /**
   * Keyword candidates of the query word groups (keywordQueryWords) ranked by BM25, with N, n and
   * the average length over every chunk in the index (the statistics tables); and `max`, the
   * largest BM25 a chunk could score for these words (bm25.ts maxBm25: every word, also one in no
   * chunk, with its idf), as the SQLite store computes it.
   */
  async search(
    client: PoolClient,
    groups: string[][],
    filter: SearchFilter,
    limit: number,
  ): Promise<{ candidates: Candidate[]; max: number }> {
    const words = groups.flat();
    const { rows } = await client.query<{
      lexeme: string;
      df: number;
      n: number;
      tokens: number;
      generation: number;
    }>(
      `select l.lexeme, coalesce(t.chunks, 0)::float8 as df, s.chunks::float8 as n,
         s.tokens::float8 as tokens, s.generation::float8 as generation
       from unnest($1::text[]) with ordinality as w(word, ord)
         cross join lateral (select ${stemSql('w.word')} as lexeme) as l
         left join knowledge_fts_terms t on t.lexeme = l.lexeme
         cross join knowledge_fts_stats s
       order by w.ord`,
      [words],
    );
    const stats = rows[0];
    if (stats === undefined || stats.n === 0) return { candidates: [], max: 0 };
    const max = maxBm25(rows.map((r) => idf(stats.n, r.df)));
    // A generation lower than one seen: a database restored under this process (seqs reused).
    if (stats.generation < this.highestGeneration) this.chunkIds.clear();
    this.highestGeneration = stats.generation;
    // As on SQLite, where the project filter compares the documents' project_id.
    if (filter.projectId === '' || limit <= 0) return { candidates: [], max };
    // The groups as lexemes (a lexeme in no chunk: its group matches and scores nothing).
    let at = 0;
    const lexemeGroups: { lexeme: string; df: number }[][] = [];
    for (const group of groups) {
      const lexemes = group.map(() => rows[at++] ?? { lexeme: '', df: 0 });
      if (lexemes.every((r) => r.df > 0)) lexemeGroups.push(lexemes);
    }
    if (lexemeGroups.length === 0) return { candidates: [], max };
    const postings = await this.postings(client, lexemeGroups.flat(), filter, stats.generation);
    if (postings === null) return { candidates: [], max };
    const { byLexeme, documents, slots } = postings;
    const avgdl = stats.tokens / stats.n;
    // Reused between searches (its touched slots zeroed after each): no 800 KB to allocate and
    // collect per search at 100k chunks. Nothing awaits between filling and clearing it.
    if (this.scratch.length < slots) this.scratch = new Float64Array(slots);
    const scores = this.scratch;
    const touched: number[] = [];
    // The scores of one lexeme added to `target`.
    const addLexeme = (
      lexeme: string,
      target: Float64Array,
      hit: number[],
      seen: Uint16Array | null,
    ): void => {
      const entry = byLexeme.get(lexeme);
      if (entry === undefined) return;
      const w = idf(stats.n, entry.df);
      for (const { start, row } of entry.rows) {
        const { offsets, size } = row.postings;
        const impacts = impactsOf(row, w, avgdl);
        for (let i = 0; i < size; i++) {
          const r = start + (offsets[i] as number);
          if (target[r] === 0) hit.push(r);
          target[r] = (target[r] as number) + (impacts[i] as number);
          if (seen !== null) seen[r] = (seen[r] as number) + 1;
        }
      }
    };
    let partial: Float64Array | null = null;
    let seen: Uint16Array | null = null;
    for (const group of lexemeGroups) {
      if (group.length === 1) {
        addLexeme(group[0]?.lexeme ?? '', scores, touched, null);
        continue;
      }
      // An all-of group (a segmented word): its terms count only where every lexeme occurs.
      partial ??= new Float64Array(slots);
      seen ??= new Uint16Array(slots);
      const hit: number[] = [];
      for (const { lexeme } of group) addLexeme(lexeme, partial, hit, seen);
      for (const r of hit) {
        if (seen[r] === group.length) {
          if (scores[r] === 0) touched.push(r);
          scores[r] = (scores[r] as number) + (partial[r] as number);
        }
        partial[r] = 0;
        seen[r] = 0;
      }
    }
    const seqOf = (slot: number): number => {
      // The document whose slots hold `slot` (documents in slot order).
      let lo = 0;
      let hi = documents.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if ((documents[mid]?.start ?? 0) <= slot) lo = mid;
        else hi = mid - 1;
      }
      const doc = documents[lo];
      return doc === undefined ? 0 : doc.base + (slot - doc.start);
    };
    const top = topK(scores, touched, seqOf, limit);
    for (const slot of touched) scores[slot] = 0;
    if (top.length === 0) return { candidates: [], max };
    const unknown = top.map((t) => t.seq).filter((seq) => !this.chunkIds.has(seq));
    if (unknown.length > 0) {
      const ids = await client.query<{ seq: number; chunk_id: string }>(
        'select seq::float8 as seq, chunk_id from knowledge_chunks_fts where seq = any($1::bigint[])',
        [unknown],
      );
      for (const r of ids.rows) this.rememberChunkId(r.seq, r.chunk_id);
    }
    const candidates: Candidate[] = [];
    for (const t of top) {
      const chunkId = this.chunkIds.get(t.seq);
      if (chunkId !== undefined) candidates.push({ chunkId, score: t.score });
    }
    return { candidates, max };
  }

  /**
   * A keyword row's seq names one chunk for good (a bigserial, never reused; a re-index writes
   * new rows): the pairs met stay, in insertion order, the oldest out beyond CHUNK_IDS_KEPT. A
   * seq is only looked up when postings valid in the search's snapshot hold it.
   */
  private rememberChunkId(seq: number, chunkId: string): void {
    if (this.chunkIds.size >= CHUNK_IDS_KEPT) {
      const oldest = this.chunkIds.keys().next();
      if (oldest.done !== true) this.chunkIds.delete(oldest.value);
    }
    this.chunkIds.set(seq, chunkId);
  }

  /**
   * The postings rows of the lexemes within the scope (searchable documents only), with each
   * document's slots in the score arrays; null when none. Rows come from the cache when it holds
   * them at `generation`; the others are read in one statement, every searchable document's
   * (then kept) unless the scope names documents (then only theirs, not kept).
   */
  private async postings(
    client: PoolClient,
    lexemes: readonly { lexeme: string; df: number }[],
    filter: SearchFilter,
    generation: number,
  ): Promise<{
    byLexeme: Map<string, LexemeRows>;
    documents: DocumentSlots[];
    slots: number;
  } | null> {
    const distinct = [...new Set(lexemes.map((l) => l.lexeme))];
    const found = new Map<string, PostingsRow[]>();
    const missing: string[] = [];
    for (const lexeme of distinct) {
      const rows = this.cache.get(lexeme, generation);
      if (rows === undefined) missing.push(lexeme);
      else found.set(lexeme, rows);
    }
    if (missing.length > 0) {
      const keep = filter.documentId === undefined && filter.documentIds === undefined;
      const read = await this.readPostings(client, missing, keep ? {} : filter);
      for (const lexeme of missing) {
        const rows = read.get(lexeme) ?? [];
        found.set(lexeme, rows);
        if (keep) this.cache.set(lexeme, generation, rows);
      }
    }
    const allowed = filter.documentIds === undefined ? null : new Set(filter.documentIds);
    const inScope = (row: PostingsRow) =>
      (filter.projectId === undefined || row.projectKey === filter.projectId) &&
      (filter.documentId === undefined || row.documentId === filter.documentId) &&
      (allowed === null || allowed.has(row.documentId));
    const dfOf = new Map(lexemes.map((l) => [l.lexeme, l.df]));
    // Each document's slots: from its first chunk's seq to the last one any lexeme holds.
    const byDocument = new Map<string, DocumentSlots>();
    const scoped: { lexeme: string; row: PostingsRow }[] = [];
    for (const [lexeme, rows] of found) {
      for (const row of rows) {
        if (!inScope(row)) continue;
        scoped.push({ lexeme, row });
        const { postings } = row;
        const last = postings.size === 0 ? 0 : (postings.offsets[postings.size - 1] ?? 0);
        const doc = byDocument.get(row.documentId);
        if (doc === undefined) {
          byDocument.set(row.documentId, { base: row.base, start: 0, size: last + 1 });
        } else doc.size = Math.max(doc.size, last + 1);
      }
    }
    if (scoped.length === 0) return null;
    const documents = [...byDocument.values()];
    let slots = 0;
    for (const doc of documents) {
      doc.start = slots;
      slots += doc.size;
    }
    const byLexeme = new Map<string, LexemeRows>();
    for (const { lexeme, row } of scoped) {
      const start = byDocument.get(row.documentId)?.start ?? 0;
      const entry = byLexeme.get(lexeme);
      const item = { start, row };
      if (entry === undefined) byLexeme.set(lexeme, { df: dfOf.get(lexeme) ?? 0, rows: [item] });
      else entry.rows.push(item);
    }
    return { byLexeme, documents, slots };
  }

  /** The postings rows of the lexemes in the searchable documents of the scope, by lexeme. */
  private async readPostings(
    client: PoolClient,
    lexemes: string[],
    filter: SearchFilter,
  ): Promise<Map<string, PostingsRow[]>> {
    const params: unknown[] = [lexemes];
    const param = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    let where = `p.lexeme = any($1::text[]) and ${SEARCHABLE}`;
    if (filter.projectId !== undefined) where += ` and p.project_key = ${param(filter.projectId)}`;
    if (filter.documentId !== undefined) {
      where += ` and p.document_id = ${param(filter.documentId)}`;
    }
    if (filter.documentIds !== undefined) {
      where += ` and p.document_id = any(${param(filter.documentIds)}::text[])`;
    }
    const { rows } = await client.query<{
      lexeme: string;
      document_id: string;
      project_key: string;
      base: number;
      postings: Buffer;
    }>(
      `select p.lexeme, p.document_id, p.project_key, p.seq_base::float8 as base, p.postings
       from knowledge_fts_postings p join knowledge_documents d on d.id = p.document_id
       where ${where}`,
      params,
    );
    const byLexeme = new Map<string, PostingsRow[]>();
    for (const row of rows) {
      // A small Buffer is a view of a shared 8 KB slab: a kept row holds its own bytes only.
      const bytes =
        row.postings.byteLength === row.postings.buffer.byteLength
          ? row.postings
          : new Uint8Array(row.postings);
      const item: PostingsRow = {
        documentId: row.document_id,
        projectKey: row.project_key,
        base: row.base,
        postings: new PackedPostings(bytes),
      };
      const list = byLexeme.get(row.lexeme);
      if (list === undefined) byLexeme.set(row.lexeme, [item]);
      else list.push(item);
    }
    return byLexeme;
  }
}
