/**
 * ChunkStore on SQLite: chunk rows, an FTS5 keyword table and a plain vector table per model,
 * written in one synchronous better-sqlite3 transaction (nothing can interleave with it), and
 * searched through in-process copies of both indexes (search-indexes.ts). SQLite-only SQL lives
 * here, in this folder and in the SQLite dialect module.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { ChunkRow } from '../../../db/schema.js';
import {
  markIndexedSql,
  SEARCHABLE,
  type Candidate,
  type ChunkHit,
  type ChunkStore,
  type DocumentCandidate,
  type IndexCommit,
  type RankedHit,
  type Ranking,
  type SearchFilter,
  type SearchRequest,
} from '../chunk-store.js';
import { chooseQueryTerms } from '../query-terms.js';
import { inRankOrder, rankEvidence } from '../ranked.js';
import { sharedLexer } from './fts5-lexer.js';
import { buildFtsQuery, FTS5_BM25 } from './fts-query.js';
import {
  SearchIndexes,
  tokenizeChunks,
  tokenizeChunksNow,
  type ChunkLexemes,
} from './search-indexes.js';
import { statementCache, type Statements } from './statements.js';
import { asFloat32, VectorTables } from './vector-tables.js';

/** `and …` conditions for the scope filters (documents `d`, chunks `c`). */
function scopeSql(filter: SearchFilter, params: unknown[]): string {
  let where = '';
  if (filter.projectId !== undefined) {
    where += ' and d.project_id = ?';
    params.push(filter.projectId);
  }
  if (filter.documentId !== undefined) {
    where += ' and c.document_id = ?';
    params.push(filter.documentId);
  }
  return where;
}

/** What a committed transaction wrote, for the in-process copies. */
interface Written {
  before: number;
  after: number;
  table: string;
  name: string;
  projectId: string | null;
  projectKey: string;
  /** The FTS rowid of each chunk. */
  rowids: number[];
}

export class SqliteChunkStore implements ChunkStore {
  private readonly statement: Statements;
  private readonly tables: VectorTables;
  private readonly indexes: SearchIndexes;

  constructor(private readonly db: BetterSqlite3.Database) {
    this.statement = statementCache(db);
    this.tables = new VectorTables(db);
    this.indexes = new SearchIndexes(this.statement);
  }

  // --- writing ----------------------------------------------------------------------------------

  // better-sqlite3 is synchronous: the async methods do their work before they return.
  async commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    // Tokenized ahead, in slices that let other requests in: a big document's text would
    // otherwise hold the event loop after its commit.
    const lexed = this.indexes.keywordLoaded ? await tokenizeChunks(commit.chunks) : null;
    let written: Written | null;
    try {
      written = this.db.transaction(() => this.write(commit)).immediate();
    } catch (error) {
      // A vector table created inside the rolled-back transaction is gone again.
      this.tables.forget();
      throw error;
    }
    if (written === null) return 'discarded';
    const done = written;
    this.indexes.applyWrite(done.before, done.after, commit.documentId, {
      table: done.table,
      vectors: commit.chunks.map((c) => ({
        chunkId: c.id,
        documentId: commit.documentId,
        projectKey: done.projectKey,
        vector: c.vector,
      })),
      keyword: () => {
        const name = sharedLexer().tokenize([done.name])[0] ?? new Int32Array(0);
        const texts: ChunkLexemes[] = lexed ?? tokenizeChunksNow(commit.chunks);
        return commit.chunks.map((c, i) => ({
          rowid: done.rowids[i] ?? 0,
          chunkId: c.id,
          documentId: commit.documentId,
          projectId: done.projectId,
          columns: [name, ...(texts[i] ?? [new Int32Array(0), new Int32Array(0)])],
        }));
      },
    });
    return 'committed';
  }

  /** commitIndex's transaction: null when the run no longer owns the document. */
  private write(commit: IndexCommit): Written | null {
    const before = this.indexes.generation();
    const doc = this.statement(
      'select name, project_id, project_key from knowledge_documents where id = ? and index_token = ?',
    ).get(commit.documentId, commit.indexToken) as
      { name: string; project_id: string | null; project_key: string } | undefined;
    if (doc === undefined) return null;
    this.deleteChunks(commit.documentId);
    const table = this.tables.ensure(commit.model, commit.dimensions);
    const now = new Date().toISOString();
    const insertChunk = this.statement(
      `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content, token_estimate,
         metadata, embedding_model, embedding_dimensions, content_hash, created_at, fts_rowid)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertFts = this.statement(
      'insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content) values (?, ?, ?, ?, ?)',
    );
    const insertVector = this.statement(
      `insert into ${table} (chunk_id, embedding, document_id, project_key) values (?, ?, ?, ?)`,
    );
    const rowids: number[] = [];
    for (const c of commit.chunks) {
      // The keyword row first: the chunk records its rowid (the FTS table's columns are not indexed).
      const ftsRowid = Number(
        insertFts.run(c.id, commit.documentId, doc.name, c.sectionPath, c.content).lastInsertRowid,
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
      insertVector.run(c.id, c.vector, commit.documentId, doc.project_key);
    }
    const update = markIndexedSql(commit, now, () => '?');
    this.statement(update.sql).run(...update.params);
    return {
      before,
      after: this.indexes.generation(),
      table,
      name: doc.name,
      projectId: doc.project_id,
      projectKey: doc.project_key,
      rowids,
    };
  }

  /**
   * Deletes a document's chunks and their index rows, found by key: the FTS rows by the rowids
   * the chunks record (the FTS table's `document_id` is not indexed: filtering on it scans every
   * row), the vectors by chunk id in the tables of the models the chunks were embedded with.
   */
  private deleteChunks(documentId: string): void {
    const models = this.statement(
      `select distinct embedding_model, embedding_dimensions from knowledge_chunks
       where document_id = ?`,
    )
      .raw()
      .all(documentId) as [string, number][];
    if (models.length === 0) return;
    for (const [model, dimensions] of models) {
      const table = this.tables.find(model, dimensions);
      if (table === null) continue;
      this.statement(
        `delete from ${table}
         where chunk_id in (select id from knowledge_chunks where document_id = ?)`,
      ).run(documentId);
    }
    this.statement(
      `delete from knowledge_chunks_fts
       where rowid in (select fts_rowid from knowledge_chunks where document_id = ?)`,
    ).run(documentId);
    this.statement('delete from knowledge_chunks where document_id = ?').run(documentId);
  }

  async deleteDocument(documentId: string): Promise<boolean> {
    let before = 0;
    let after = 0;
    const deleted = this.db
      .transaction(() => {
        before = this.indexes.generation();
        this.deleteChunks(documentId);
        const changed =
          this.statement('delete from knowledge_documents where id = ?').run(documentId).changes >
          0;
        after = this.indexes.generation();
        return changed;
      })
      .immediate();
    this.indexes.applyWrite(before, after, documentId);
    return deleted;
  }

  // --- reading ----------------------------------------------------------------------------------

  async warm(model: string): Promise<number> {
    return this.db
      .transaction(() => {
        for (const t of this.tables.ofModel(model)) this.indexes.vectorIndex(t.table, t.dimensions);
        return this.indexes.keywordIndex().size;
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
        const top = rankEvidence({ keyword, semantic, cosine }, rank);
        return inRankOrder(top, this.hits(top.map((c) => c.chunkId)));
      })
      .deferred();
  }

  /** Keyword candidates by BM25, within the scope (public for the tests that compare with FTS5). */
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
    return this.statement(
      `select f.chunk_id as chunkId, -${FTS5_BM25} as score
       from knowledge_chunks_fts f
       join knowledge_chunks c on c.id = f.chunk_id
       join knowledge_documents d on d.id = c.document_id
       where knowledge_chunks_fts match ? and ${SEARCHABLE}${scope}
       order by ${FTS5_BM25} limit ?`,
    ).all(...params) as Candidate[];
  }

  /**
   * Ranks with the in-process keyword index (FTS5's scores) and drops the chunks of unsearchable
   * documents (a failed re-index keeps its rows in the statistics, as FTS5 does); fetches deeper
   * while that left fewer than `limit`.
   */
  private keywordInProcess(phrases: number[], filter: SearchFilter, limit: number): Candidate[] {
    const index = this.indexes.keywordIndex();
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

  private vectorSearch(
    vector: Float32Array,
    model: string,
    filter: SearchFilter,
    limit: number,
  ): Candidate[] {
    const table = this.tables.find(model, vector.length);
    if (table === null) return [];
    // Exact KNN in process; the scope filters apply before ranking, the status check after it
    // only drops chunks of failed re-indexes.
    const nearest = this.indexes.vectorIndex(table, vector.length).search(vector, filter, limit);
    return this.searchable(nearest).map((n) => ({ chunkId: n.chunkId, score: n.score }));
  }

  private similarities(
    vector: Float32Array,
    model: string,
    chunkIds: string[],
  ): Map<string, number> {
    const table = this.tables.find(model, vector.length);
    if (table === null || chunkIds.length === 0) return new Map<string, number>();
    return this.indexes.vectorIndex(table, vector.length).similarities(vector, chunkIds);
  }

  async listChunks(documentId: string): Promise<ChunkRow[]> {
    return this.statement(
      'select * from knowledge_chunks where document_id = ? order by chunk_index',
    ).all(documentId) as ChunkRow[];
  }

  async cachedVectors(
    model: string,
    dimensions: number,
    hashes: string[],
  ): Promise<Map<string, Float32Array>> {
    const result = new Map<string, Float32Array>();
    const table = this.tables.find(model, dimensions);
    if (table === null || hashes.length === 0) return result;
    // One vector per hash, of its smallest chunk id (as on PostgreSQL).
    const rows = this.statement(
      `select c.content_hash, v.embedding from knowledge_chunks c join ${table} v on v.chunk_id = c.id
       where c.id in (
         select min(id) from knowledge_chunks
         where embedding_model = ? and embedding_dimensions = ?
           and content_hash in (select value from json_each(?))
         group by content_hash
       )`,
    )
      .raw()
      .all(model, dimensions, JSON.stringify(hashes)) as [string, Buffer][];
    // Copies: the vectors outlive this statement and are written again under new chunk ids.
    for (const [hash, blob] of rows) result.set(hash, asFloat32(blob, true));
    return result;
  }

  private hits(chunkIds: string[]): ChunkHit[] {
    if (chunkIds.length === 0) return [];
    return this.statement(
      `select c.*, d.name as document_name, d.project_id as project_id, d.source as source,
         d.metadata as document_metadata
       from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
       where c.id in (select value from json_each(?))`,
    ).all(JSON.stringify(chunkIds)) as ChunkHit[];
  }
}
