/**
 * ChunkStore on SQLite: chunk rows, an FTS5 keyword index and sqlite-vec vector tables, written in
 * one synchronous better-sqlite3 transaction (nothing can interleave with it). SQLite-only SQL
 * lives here and in the SQLite dialect module.
 */
import { createHash } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { ChunkRow } from '../../db/schema.js';
import {
  SEARCHABLE,
  type Candidate,
  type ChunkHit,
  type DocumentCandidate,
  type ChunkStore,
  type IndexCommit,
  type NewChunk,
  type RankedHit,
  type Ranking,
  type SearchFilter,
  type SearchRequest,
} from './chunk-store.js';
import { Fts5Lexer } from './fts5-lexer.js';
import { buildFtsQuery, chooseQueryTerms } from './fts-query.js';
import { KeywordIndex, type KeywordRow } from './keyword-index.js';
import { VectorIndex, type IndexRow } from './vector-index.js';

/**
 * BM25 column weights: chunk_id, document_id (unindexed), document_name, section_path, content
 * (the keyword index's COLUMN_WEIGHTS).
 */
const BM25 = 'bm25(knowledge_chunks_fts, 0, 0, 1.5, 2.0, 1.0)';

/** Rows tokenized per batch when the keyword index is loaded. */
const LOAD_BATCH = 2048;

/** The FTS5 lexer: one per process (its own in-memory SQLite), made on first use. */
let lexer: Fts5Lexer | undefined;
const sharedLexer = () => (lexer ??= new Fts5Lexer());

/** A float32 view of a vector blob; copied when asked or when the bytes are not 4-aligned. */
function asFloat32(blob: Buffer, copy = false): Float32Array {
  if (copy || blob.byteOffset % 4 !== 0) return new Float32Array(new Uint8Array(blob).buffer);
  return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
}

/** `and …` conditions for the scope filters, on the given project and document columns. */
function scopeSql(
  filter: SearchFilter,
  params: unknown[],
  columns = { project: 'd.project_id', document: 'c.document_id' },
): string {
  let where = '';
  if (filter.projectId !== undefined) {
    where += ` and ${columns.project} = ?`;
    params.push(filter.projectId);
  }
  if (filter.documentId !== undefined) {
    where += ` and ${columns.document} = ?`;
    params.push(filter.documentId);
  }
  return where;
}

/** An in-process copy of an index (a vector table, the FTS5 table) and the chunk generation it reflects. */
interface Loaded<T> {
  index: T;
  generation: number;
}

/** A keyword row as read from the FTS5 table or written to it, before tokenizing. */
type KeywordText = [
  rowid: number,
  chunkId: string,
  documentId: string,
  projectId: string | null,
  name: string,
  section: string,
  content: string,
];

/** Chunks tokenized per slice by tokenizeChunks (~0.25 MB of text, a few milliseconds). */
const TOKENIZE_SLICE = 256;

/** The section path and content lexemes of each chunk, in one lexer batch. */
function tokenizeChunksNow(chunks: readonly NewChunk[]): [Int32Array, Int32Array][] {
  const ids = sharedLexer().tokenize(chunks.flatMap((c) => [c.sectionPath, c.content]));
  const none = new Int32Array(0);
  return chunks.map((_, i) => [ids[2 * i] ?? none, ids[2 * i + 1] ?? none]);
}

/** tokenizeChunksNow in slices, yielding to the event loop between them. */
async function tokenizeChunks(chunks: readonly NewChunk[]): Promise<[Int32Array, Int32Array][]> {
  const out: [Int32Array, Int32Array][] = [];
  for (let i = 0; i < chunks.length; i += TOKENIZE_SLICE) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    out.push(...tokenizeChunksNow(chunks.slice(i, i + TOKENIZE_SLICE)));
  }
  return out;
}

/** Tokenizes FTS5 rows into keyword index rows, in one lexer batch. */
function keywordRows(texts: readonly KeywordText[]): KeywordRow[] {
  const ids = sharedLexer().tokenize(texts.flatMap((t) => [t[4], t[5], t[6]]));
  const none = new Int32Array(0);
  return texts.map(([rowid, chunkId, documentId, projectId], i) => ({
    rowid,
    chunkId,
    documentId,
    projectId,
    columns: [ids[3 * i] ?? none, ids[3 * i + 1] ?? none, ids[3 * i + 2] ?? none],
  }));
}

export class SqliteChunkStore implements ChunkStore {
  private readonly vectorTables = new Map<string, string>();
  /** In-process vector indexes by table name, loaded on first search. */
  private readonly indexes = new Map<string, Loaded<VectorIndex>>();
  /** The in-process keyword index, loaded on first keyword search. */
  private keyword: Loaded<KeywordIndex> | null = null;
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(private readonly db: BetterSqlite3.Database) {}

  /** A prepared statement, cached by its SQL. */
  private statement(sql: string): BetterSqlite3.Statement {
    let stmt = this.statements.get(sql);
    if (stmt === undefined) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  /** The chunk generation (migration 0006): bumped by every change to knowledge_chunks. */
  private generation(): number {
    return this.statement('select generation from knowledge_search_generation where id = 1')
      .pluck()
      .get() as number;
  }

  /** The documents whose chunks changed after `generation` (migration 0007's change log). */
  private changedSince(generation: number): string[] {
    return this.statement(
      'select document_id from knowledge_search_changes where generation > ? order by document_id',
    )
      .pluck()
      .all(generation) as string[];
  }

  /**
   * The in-process index of a vector table, current as of this transaction's snapshot: loaded
   * on first use; when the chunks changed in a way this store did not apply (another process
   * wrote), the changed documents are reloaded.
   */
  private loadedIndex(table: string, dimensions: number): VectorIndex {
    const generation = this.generation();
    const loaded = this.indexes.get(table);
    if (loaded?.generation === generation) return loaded.index;
    if (loaded !== undefined) {
      const changed = this.changedSince(loaded.generation);
      for (const documentId of changed) loaded.index.deleteDocument(documentId);
      this.addVectors(
        loaded.index,
        `select v.chunk_id, v.embedding, v.document_id, v.project_key
         from knowledge_chunks c join ${table} v on v.chunk_id = c.id
         where c.document_id in (select value from json_each(?))`,
        [JSON.stringify(changed)],
      );
      loaded.generation = generation;
      return loaded.index;
    }
    const index = new VectorIndex(dimensions);
    this.addVectors(
      index,
      `select chunk_id, embedding, document_id, project_key from ${table}`,
      [],
    );
    this.indexes.set(table, { index, generation });
    return index;
  }

  /** Adds the rows a query gives (chunk id, embedding, document id, project key) to an index. */
  private addVectors(index: VectorIndex, sql: string, params: unknown[]): void {
    const rows = this.db
      .prepare(sql)
      .raw()
      .iterate(...params) as IterableIterator<[string, Buffer, string, string]>;
    let batch: IndexRow[] = [];
    for (const [chunkId, embedding, documentId, projectKey] of rows) {
      batch.push({ chunkId, documentId, projectKey, vector: asFloat32(embedding) });
      if (batch.length === 4096) {
        index.add(batch);
        batch = [];
      }
    }
    index.add(batch);
  }

  /** The in-process keyword index, current as of this transaction's snapshot (as loadedIndex). */
  private loadedKeywordIndex(): KeywordIndex {
    const generation = this.generation();
    const loaded = this.keyword;
    if (loaded?.generation === generation) return loaded.index;
    const select = `select c.fts_rowid, c.id, c.document_id, d.project_id, f.document_name,
        f.section_path, f.content
      from knowledge_chunks c join knowledge_chunks_fts f on f.rowid = c.fts_rowid
      left join knowledge_documents d on d.id = c.document_id`;
    if (loaded !== null) {
      const changed = this.changedSince(loaded.generation);
      for (const documentId of changed) loaded.index.deleteDocument(documentId);
      // Rows written after the index's generation have higher rowids than every row it keeps.
      this.addKeywordRows(
        loaded.index,
        `${select} where c.document_id in (select value from json_each(?)) order by c.fts_rowid`,
        [JSON.stringify(changed)],
      );
      loaded.generation = generation;
      return loaded.index;
    }
    const index = new KeywordIndex();
    this.addKeywordRows(index, `${select} order by c.fts_rowid`, []);
    index.trim();
    this.keyword = { index, generation };
    return index;
  }

  /** Tokenizes and adds the keyword rows a query gives (see KeywordText), in batches. */
  private addKeywordRows(index: KeywordIndex, sql: string, params: unknown[]): void {
    const rows = this.statement(sql)
      .raw()
      .iterate(...params) as IterableIterator<KeywordText>;
    let batch: KeywordText[] = [];
    for (const row of rows) {
      batch.push(row);
      if (batch.length === LOAD_BATCH) {
        index.add(keywordRows(batch));
        batch = [];
      }
    }
    index.add(keywordRows(batch));
  }

  /**
   * After a committed write that moved the generation from `before` to `after`: applies the same
   * change to the loaded indexes that were current at `before`. The others (behind another
   * process's writes) catch up on their next search, this write included.
   */
  private syncIndexes(
    before: number,
    after: number,
    documentId: string,
    added?: { table: string; rows: IndexRow[]; keyword: () => KeywordRow[] },
  ): void {
    const keyword = this.keyword;
    if (keyword?.generation === before) {
      keyword.index.deleteDocument(documentId);
      if (added !== undefined) keyword.index.add(added.keyword());
      keyword.generation = after;
    }
    for (const [table, loaded] of this.indexes) {
      if (loaded.generation !== before) continue;
      loaded.index.deleteDocument(documentId);
      if (added?.table === table) loaded.index.add(added.rows);
      loaded.generation = after;
    }
  }

  /** The sqlite-vec table of a (model, dimensions), created on first use. */
  private vectorTable(model: string, dimensions: number, create: boolean): string | null {
    const key = `${model}\u0000${dimensions}`;
    const cached = this.vectorTables.get(key);
    if (cached !== undefined) return cached;
    const row = this.db
      .prepare('select table_name from knowledge_vector_tables where model = ? and dimensions = ?')
      .get(model, dimensions) as { table_name: string } | undefined;
    let table = row?.table_name ?? null;
    if (table === null && create) {
      table = `knowledge_vec_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
      this.db.exec(
        `create virtual table if not exists ${table} using vec0(chunk_id text primary key, embedding float[${dimensions}] distance_metric=cosine, document_id text, project_key text)`,
      );
      this.db
        .prepare(
          'insert into knowledge_vector_tables (model, dimensions, table_name) values (?, ?, ?)',
        )
        .run(model, dimensions, table);
    }
    if (table !== null) this.vectorTables.set(key, table);
    return table;
  }

  /**
   * Deletes a document's chunks with their keyword and vector rows, found by key: the FTS rows by
   * the rowids the chunks record, the vectors by chunk id in their model's table (both tables'
   * `document_id` columns are not indexed: filtering on them scans every row, ~0.5 s per vector
   * table at 100k chunks).
   */
  private deleteIndexRows(documentId: string): void {
    const chunks = this.statement(
      `select id, embedding_model, embedding_dimensions from knowledge_chunks
       where document_id = ?`,
    )
      .raw()
      .all(documentId) as [string, string, number][];
    if (chunks.length === 0) return;
    this.statement(
      `delete from knowledge_chunks_fts
       where rowid in (select fts_rowid from knowledge_chunks where document_id = ?)`,
    ).run(documentId);
    for (const [id, model, dimensions] of chunks) {
      const table = this.vectorTable(model, dimensions, false);
      if (table !== null) this.statement(`delete from ${table} where chunk_id = ?`).run(id);
    }
    this.statement('delete from knowledge_chunks where document_id = ?').run(documentId);
  }

  // better-sqlite3 is synchronous: the async methods do their work before they return.
  async commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    // Set inside the transaction, applied to the in-process indexes once it committed.
    const applied: {
      value: { before: number; after: number; table: string; projectKey: string } | null;
    } = { value: null };
    // Tokenized ahead, in slices that let other requests in: a big document's text would
    // otherwise hold the event loop after its commit.
    const lexed = this.keyword === null ? null : await tokenizeChunks(commit.chunks);
    const rowids: number[] = [];
    let written: { name: string; projectId: string | null } = { name: '', projectId: null };
    const run = this.db.transaction((): 'committed' | 'discarded' => {
      applied.value = null;
      rowids.length = 0;
      const before = this.generation();
      const doc = this.db
        .prepare(
          'select name, project_id, project_key from knowledge_documents where id = ? and index_token = ?',
        )
        .get(commit.documentId, commit.indexToken) as
        { name: string; project_id: string | null; project_key: string } | undefined;
      if (doc === undefined) return 'discarded';
      written = { name: doc.name, projectId: doc.project_id };
      this.deleteIndexRows(commit.documentId);
      const table = this.vectorTable(commit.model, commit.dimensions, true);
      const now = new Date().toISOString();
      const insertChunk = this.db.prepare(
        `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content, token_estimate,
           metadata, embedding_model, embedding_dimensions, content_hash, created_at, fts_rowid)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const insertFts = this.db.prepare(
        'insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content) values (?, ?, ?, ?, ?)',
      );
      const insertVec = this.db.prepare(
        `insert into ${table ?? ''} (chunk_id, embedding, document_id, project_key) values (?, ?, ?, ?)`,
      );
      for (const c of commit.chunks) {
        // The keyword row first: the chunk records its rowid (the FTS table's columns are not indexed).
        const ftsRowid = Number(
          insertFts.run(c.id, commit.documentId, doc.name, c.sectionPath, c.content)
            .lastInsertRowid,
        );
        insertChunk.run(
          c.id,
          commit.documentId,
          c.chunkIndex,
          c.sectionPath,
          c.page,
          c.content,
          c.tokenEstimate,
          JSON.stringify(c.metadata),
          commit.model,
          commit.dimensions,
          c.contentHash,
          now,
          ftsRowid,
        );
        rowids.push(ftsRowid);
        insertVec.run(c.id, c.vector, commit.documentId, doc.project_key);
      }
      this.db
        .prepare(
          `update knowledge_documents set status = 'indexed', version = version + 1, markdown_path = ?,
             converter_command = ?, converter_meta = ?, error_message = null, embedding_model = ?,
             index_token = null, updated_at = ? where id = ?`,
        )
        .run(
          commit.document.markdown_path,
          commit.document.converter_command,
          commit.document.converter_meta,
          commit.model,
          now,
          commit.documentId,
        );
      if (table !== null) {
        applied.value = { before, after: this.generation(), table, projectKey: doc.project_key };
      }
      return 'committed';
    });
    let result: 'committed' | 'discarded';
    try {
      result = run.immediate();
    } catch (error) {
      // A vector table created inside the rolled-back transaction is gone again.
      this.vectorTables.clear();
      throw error;
    }
    const done = applied.value;
    if (done !== null) {
      this.syncIndexes(done.before, done.after, commit.documentId, {
        table: done.table,
        rows: commit.chunks.map((c) => ({
          chunkId: c.id,
          documentId: commit.documentId,
          projectKey: done.projectKey,
          vector: c.vector,
        })),
        keyword: () => {
          const name = sharedLexer().tokenize([written.name])[0] ?? new Int32Array(0);
          const texts = lexed ?? tokenizeChunksNow(commit.chunks);
          return commit.chunks.map((c, i) => ({
            rowid: rowids[i] ?? 0,
            chunkId: c.id,
            documentId: commit.documentId,
            projectId: written.projectId,
            columns: [name, ...(texts[i] ?? [new Int32Array(0), new Int32Array(0)])],
          }));
        },
      });
    }
    return result;
  }

  async warm(model: string): Promise<number> {
    return this.db
      .transaction(() => {
        const tables = this.db
          .prepare('select table_name, dimensions from knowledge_vector_tables where model = ?')
          .all(model) as { table_name: string; dimensions: number }[];
        for (const t of tables) this.loadedIndex(t.table_name, t.dimensions);
        return this.loadedKeywordIndex().size;
      })
      .deferred();
  }

  async search(request: SearchRequest, rank: Ranking): Promise<RankedHit[]> {
    // A deferred transaction in WAL mode: every statement inside sees the same snapshot.
    return this.db
      .transaction(() => {
        const { text, vector, model, filter, limit } = request;
        const keyword = text === null ? [] : this.keywordSearch(text, filter, limit);
        const semantic = vector === null ? [] : this.vectorSearch(vector, model, filter, limit);
        const cosine =
          vector === null
            ? new Map<string, number>()
            : this.similarities(
                vector,
                model,
                keyword.map((k) => k.chunkId),
              );
        for (const s of semantic) cosine.set(s.chunkId, s.score);
        const top = rank({ keyword, semantic, cosine });
        const rows = new Map(this.hits(top.map((c) => c.chunkId)).map((r) => [r.id, r]));
        return top.flatMap((c) => {
          const chunk = rows.get(c.chunkId);
          return chunk === undefined ? [] : [{ score: c.score, chunk }];
        });
      })
      .deferred();
  }

  async deleteDocument(documentId: string): Promise<boolean> {
    let before = 0;
    let after = 0;
    const deleted = this.db
      .transaction(() => {
        before = this.generation();
        this.deleteIndexRows(documentId);
        const changed =
          this.db.prepare('delete from knowledge_documents where id = ?').run(documentId).changes >
          0;
        after = this.generation();
        return changed;
      })
      .immediate();
    this.syncIndexes(before, after, documentId);
    return deleted;
  }

  async listChunks(documentId: string): Promise<ChunkRow[]> {
    return this.db
      .prepare('select * from knowledge_chunks where document_id = ? order by chunk_index')
      .all(documentId) as ChunkRow[];
  }

  keywordSearch(query: string, filter: SearchFilter, limit: number): Candidate[] {
    const terms = chooseQueryTerms(query);
    if (terms.length === 0) return [];
    const phrases = sharedLexer().tokenize(terms);
    // A query word FTS5 splits in several tokens (or none) is a phrase query: FTS5 answers it.
    if (phrases.every((p) => p.length === 1)) {
      return this.keywordInProcess(
        phrases.map((p) => p[0] ?? -1),
        filter,
        limit,
      );
    }
    const params: unknown[] = [buildFtsQuery(query)];
    const scope = scopeSql(filter, params);
    params.push(limit);
    return this.db
      .prepare(
        `select f.chunk_id as chunkId, -${BM25} as score
         from knowledge_chunks_fts f
         join knowledge_chunks c on c.id = f.chunk_id
         join knowledge_documents d on d.id = c.document_id
         where knowledge_chunks_fts match ? and ${SEARCHABLE}${scope}
         order by ${BM25} limit ?`,
      )
      .all(...params) as Candidate[];
  }

  /**
   * Ranks with the in-process keyword index (FTS5's scores) and drops the chunks of unsearchable
   * documents (a failed re-index keeps its rows in the statistics, as FTS5 does); fetches deeper
   * while that left fewer than `limit`.
   */
  private keywordInProcess(phrases: number[], filter: SearchFilter, limit: number): Candidate[] {
    const index = this.loadedKeywordIndex();
    for (let fetch = limit + 32; ; fetch *= 4) {
      const ranked = index.search(phrases, filter, fetch);
      const kept = this.searchable(ranked);
      if (kept.length >= limit || ranked.length < fetch) {
        return kept.slice(0, limit).map((k) => ({ chunkId: k.chunkId, score: k.score }));
      }
    }
  }

  /** The candidates whose document is searchable (one lookup per distinct document). */
  private searchable<T extends DocumentCandidate>(candidates: T[]): T[] {
    if (candidates.length === 0) return candidates;
    const documents = [...new Set(candidates.map((c) => c.documentId))];
    const ok = new Set(
      this.statement(
        `select d.id from knowledge_documents d
         where d.id in (select value from json_each(?)) and ${SEARCHABLE}`,
      )
        .pluck()
        .all(JSON.stringify(documents)) as string[],
    );
    return ok.size === documents.length
      ? candidates
      : candidates.filter((c) => ok.has(c.documentId));
  }

  vectorSearch(
    vector: Float32Array,
    model: string,
    filter: SearchFilter,
    limit: number,
  ): Candidate[] {
    const table = this.vectorTable(model, vector.length, false);
    if (table === null) return [];
    // Exact KNN in process; the scope filters apply before ranking, the status check after it
    // only drops chunks of failed re-indexes (as sqlite-vec's KNN + join did).
    const nearest = this.loadedIndex(table, vector.length).search(vector, filter, limit);
    return this.searchable(nearest).map((n) => ({ chunkId: n.chunkId, score: n.score }));
  }

  private similarities(
    vector: Float32Array,
    model: string,
    chunkIds: string[],
  ): Map<string, number> {
    const table = this.vectorTable(model, vector.length, false);
    if (table === null || chunkIds.length === 0) return new Map<string, number>();
    return this.loadedIndex(table, vector.length).similarities(vector, chunkIds);
  }

  async cachedVectors(
    model: string,
    dimensions: number,
    hashes: string[],
  ): Promise<Map<string, Float32Array>> {
    const result = new Map<string, Float32Array>();
    const table = this.vectorTable(model, dimensions, false);
    if (table === null || hashes.length === 0) return result;
    const rows = this.db
      .prepare(
        `select content_hash as hash, min(id) as id from knowledge_chunks
         where embedding_model = ? and embedding_dimensions = ?
           and content_hash in (select value from json_each(?))
         group by content_hash`,
      )
      .all(model, dimensions, JSON.stringify(hashes)) as { hash: string; id: string }[];
    const lookup = this.db.prepare(`select embedding from ${table} where chunk_id = ?`).pluck();
    for (const row of rows) {
      const blob = lookup.get(row.id) as Buffer | undefined;
      // A copy: the vector outlives this statement and is written again under a new chunk id.
      if (blob !== undefined) result.set(row.hash, asFloat32(blob, true));
    }
    return result;
  }

  private hits(chunkIds: string[]): ChunkHit[] {
    if (chunkIds.length === 0) return [];
    return this.db
      .prepare(
        `select c.*, d.name as document_name, d.project_id as project_id, d.source as source
         from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
         where c.id in (select value from json_each(?))`,
      )
      .all(JSON.stringify(chunkIds)) as ChunkHit[];
  }
}
