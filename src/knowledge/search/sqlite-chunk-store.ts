/**
 * ChunkStore on SQLite: chunk rows, an FTS5 keyword index and sqlite-vec vector tables, written in
 * one synchronous better-sqlite3 transaction (nothing can interleave with it). SQLite-only SQL
 * lives here and in the SQLite dialect module.
 */
import { createHash } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { ChunkRow } from '../../db/schema.js';
import type {
  Candidate,
  ChunkHit,
  ChunkStore,
  IndexCommit,
  RankedHit,
  Ranking,
  SearchFilter,
  SearchRequest,
} from './chunk-store.js';
import { buildFtsQuery } from './fts-query.js';

/** Documents whose chunks are searched: indexed ones, and indexed ones being re-indexed. */
const SEARCHABLE = `d.status in ('indexed', 'indexing')`;

/** BM25 column weights: chunk_id, document_id (unindexed), document_name, section_path, content. */
const BM25 = 'bm25(knowledge_chunks_fts, 0, 0, 1.5, 2.0, 1.0)';

/** A float32 view of a vector blob; copied when asked or when the bytes are not 4-aligned. */
function asFloat32(blob: Buffer, copy = false): Float32Array {
  if (copy || blob.byteOffset % 4 !== 0) return new Float32Array(new Uint8Array(blob).buffer);
  return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
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

export class SqliteChunkStore implements ChunkStore {
  private readonly vectorTables = new Map<string, string>();

  constructor(private readonly db: BetterSqlite3.Database) {}

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

  private allVectorTables(): string[] {
    return (
      this.db.prepare('select table_name from knowledge_vector_tables').all() as {
        table_name: string;
      }[]
    ).map((r) => r.table_name);
  }

  private deleteIndexRows(documentId: string): void {
    this.db.prepare('delete from knowledge_chunks_fts where document_id = ?').run(documentId);
    for (const table of this.allVectorTables()) {
      this.db.prepare(`delete from ${table} where document_id = ?`).run(documentId);
    }
    this.db.prepare('delete from knowledge_chunks where document_id = ?').run(documentId);
  }

  // better-sqlite3 is synchronous: the async methods do their work before they return.
  async commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    const run = this.db.transaction((): 'committed' | 'discarded' => {
      const doc = this.db
        .prepare(
          'select name, project_key from knowledge_documents where id = ? and index_token = ?',
        )
        .get(commit.documentId, commit.indexToken) as
        { name: string; project_key: string } | undefined;
      if (doc === undefined) return 'discarded';
      this.deleteIndexRows(commit.documentId);
      const table = this.vectorTable(commit.model, commit.dimensions, true);
      const now = new Date().toISOString();
      const insertChunk = this.db.prepare(
        `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content, token_estimate,
           metadata, embedding_model, embedding_dimensions, content_hash, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const insertFts = this.db.prepare(
        'insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content) values (?, ?, ?, ?, ?)',
      );
      const insertVec = this.db.prepare(
        `insert into ${table ?? ''} (chunk_id, embedding, document_id, project_key) values (?, ?, ?, ?)`,
      );
      for (const c of commit.chunks) {
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
        );
        insertFts.run(c.id, commit.documentId, doc.name, c.sectionPath, c.content);
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
      return 'committed';
    });
    try {
      return run.immediate();
    } catch (error) {
      // A vector table created inside the rolled-back transaction is gone again.
      this.vectorTables.clear();
      throw error;
    }
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
    return this.db
      .transaction(() => {
        this.deleteIndexRows(documentId);
        return (
          this.db.prepare('delete from knowledge_documents where id = ?').run(documentId).changes >
          0
        );
      })
      .immediate();
  }

  async listChunks(documentId: string): Promise<ChunkRow[]> {
    return this.db
      .prepare('select * from knowledge_chunks where document_id = ? order by chunk_index')
      .all(documentId) as ChunkRow[];
  }

  keywordSearch(query: string, filter: SearchFilter, limit: number): Candidate[] {
    const match = buildFtsQuery(query);
    if (match === null) return [];
    if (filter.projectId === undefined) {
      const ranked = this.keywordFast(match, filter.documentId, limit);
      if (ranked !== null) return ranked;
    }
    const params: unknown[] = [match];
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
   * Ranks inside the FTS5 table alone (joining every match is ~4× slower), then drops the few
   * candidates of unsearchable documents. Null when too many were dropped to be sure of the top
   * `limit`: the caller then runs the exact joined query.
   */
  private keywordFast(
    match: string,
    documentId: string | undefined,
    limit: number,
  ): Candidate[] | null {
    const fetch = limit + 32;
    const params: unknown[] = [match];
    let scope = '';
    if (documentId !== undefined) {
      scope = ' and document_id = ?';
      params.push(documentId);
    }
    params.push(fetch);
    const ranked = this.db
      .prepare(
        `select chunk_id as chunkId, -${BM25} as score from knowledge_chunks_fts
         where knowledge_chunks_fts match ?${scope} order by ${BM25} limit ?`,
      )
      .all(...params) as Candidate[];
    if (ranked.length === 0) return ranked;
    const searchable = new Set(
      (
        this.db
          .prepare(
            `select c.id from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
             where c.id in (select value from json_each(?)) and ${SEARCHABLE}`,
          )
          .all(JSON.stringify(ranked.map((r) => r.chunkId))) as { id: string }[]
      ).map((r) => r.id),
    );
    const kept = ranked.filter((r) => searchable.has(r.chunkId));
    if (kept.length < limit && ranked.length === fetch) return null;
    return kept.slice(0, limit);
  }

  vectorSearch(
    vector: Float32Array,
    model: string,
    filter: SearchFilter,
    limit: number,
  ): Candidate[] {
    const table = this.vectorTable(model, vector.length, false);
    if (table === null) return [];
    const params: unknown[] = [vector, limit];
    const knnScope = scopeSql(filter, params, { project: 'project_key', document: 'document_id' });
    // Scope filters run inside the KNN scan (sqlite-vec metadata columns), so they apply before
    // ranking; the status check after it only drops chunks of failed re-indexes.
    return this.db
      .prepare(
        `select v.chunk_id as chunkId, 1 - v.distance as score
         from (select chunk_id, distance from ${table} where embedding match ? and k = ?${knnScope}) v
         join knowledge_chunks c on c.id = v.chunk_id
         join knowledge_documents d on d.id = c.document_id
         where ${SEARCHABLE}
         order by v.distance`,
      )
      .all(...params) as Candidate[];
  }

  private similarities(vector: Float32Array, model: string, chunkIds: string[]): Map<string, number> {
    const table = this.vectorTable(model, vector.length, false);
    const result = new Map<string, number>();
    if (table === null || chunkIds.length === 0) return result;
    // Point lookups by primary key: an IN list over a vec0 table would scan every vector.
    const lookup = this.db.prepare(`select embedding from ${table} where chunk_id = ?`).pluck();
    for (const id of chunkIds) {
      const blob = lookup.get(id) as Buffer | undefined;
      if (blob === undefined) continue;
      const other = asFloat32(blob);
      result.set(id, cosine(vector, other));
    }
    return result;
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
