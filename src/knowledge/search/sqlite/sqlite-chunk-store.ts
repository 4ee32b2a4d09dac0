/**
 * ChunkStore on SQLite: chunk rows, an FTS5 keyword table and a plain vector table per model,
 * written in one synchronous better-sqlite3 transaction (nothing can interleave with it), and
 * searched through in-process copies of both indexes (in-process-copies.ts). SQLite-only SQL lives
 * here, in this folder and in the SQLite dialect module.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { ChunkRow } from '../../../db/schema.js';
import {
  SEARCHABLE,
  type Candidate,
  type ChunkHit,
  type ChunkStore,
  type Evidence,
  type IndexCommit,
  type IndexScope,
  type RankedHit,
  type Ranking,
  type SearchFilter,
  type SearchRequest,
  type StoreLog,
  vectorDepth,
} from '../chunk-store.js';
import { registerSqliteFilter, sqliteFilterSql, toSqlite } from '../../filter/sql.js';
import { fusedEvidence, nearestContenders, type BoundedNearest } from './fused-cosines.js';
import { inRankOrder, rankEvidence } from '../ranked.js';
import { sharedLexer } from './keyword/fts5-lexer.js';
import type { SnapshotOptions } from './copies/snapshots.js';
import { prereadFile } from './copies/file-preread.js';
import { CopiesLoader } from './copies/copies-loader.js';
import { KeywordQueries, type KeywordQuery } from './keyword-queries.js';
import { CURRENT, InProcessCopies } from './copies/in-process-copies.js';
import { SqliteChunkWrites } from './sqlite-chunk-writes.js';
import { statementCache, type Statements } from './statements.js';
import { asFloat32, VectorTables } from './vector/vector-tables.js';
import type { VectorIndex, VectorIndexOptions } from './vector/vector-index.js';

export interface SqliteChunkStoreOptions {
  /** Where and when the search indexes are saved (snapshots.ts); null: never. */
  snapshots?: SnapshotOptions | null;
  /** Options of the vector indexes (from which size they search an approximate graph). */
  vectors?: VectorIndexOptions;
  /**
   * Read the database file once after the first load of the indexes, so that searches find its
   * pages in the operating system's cache (file-preread.ts); `log` hears how it went. Null or
   * absent: not read.
   */
  preread?: { log: StoreLog } | null;
}

/**
 * Which of the given documents (a JSON array of ids) are searchable. The status test is kept off
 * the status index (`+`): SQLite would otherwise walk every searchable document through it and
 * test each against the list (~0.4 ms a search at 1,000 documents, growing with them), instead of
 * looking the list's ids up by primary key (~0.1 ms).
 */
export const SEARCHABLE_OF = `select d.id from knowledge_documents d
  where d.id in (select value from json_each(?)) and +${SEARCHABLE}`;

export class SqliteChunkStore implements ChunkStore {
  private readonly statement: Statements;
  private readonly tables: VectorTables;
  private readonly indexes: InProcessCopies;
  private readonly writes: SqliteChunkWrites;
  private readonly loader: CopiesLoader;
  private readonly keywords: KeywordQueries;
  /** The start-up load of the indexes while it runs: searches wait for it. */
  private loading: Promise<void> | undefined;
  /** The pre-read of the database file, once started (file-preread.ts); aborted on close. */
  private preread: { stop: AbortController; done: Promise<unknown> } | undefined;
  private readonly prereadLog: StoreLog | null;

  constructor(
    private readonly db: BetterSqlite3.Database,
    options: SqliteChunkStoreOptions = {},
  ) {
    registerSqliteFilter(db);
    this.statement = statementCache(db);
    this.tables = new VectorTables(db);
    this.indexes = new InProcessCopies(this.statement, options.vectors);
    this.loader = new CopiesLoader(this.indexes, options.snapshots ?? null);
    this.keywords = new KeywordQueries(this.indexes, this.statement);
    this.writes = new SqliteChunkWrites(db, this.statement, this.tables, this.indexes);
    this.prereadLog = options.preread?.log ?? null;
  }

  // --- writing ----------------------------------------------------------------------------------

  // better-sqlite3 is synchronous: big writes go in slices (sqlite-chunk-writes.ts).
  commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    return this.writes.commit(commit);
  }

  async hideDocument(documentId: string): Promise<boolean> {
    return this.writes.hide(documentId);
  }

  purgeDocument(documentId: string, stop?: () => boolean): Promise<void> {
    return this.writes.purge(documentId, 'hidden', stop);
  }

  async purgeLeftovers(stop?: () => boolean): Promise<string[]> {
    const { hidden, leftovers } = this.writes.purgeable();
    for (const documentId of leftovers) {
      if (stop?.() === true) break;
      await this.writes.purge(documentId, { leftoverOf: null }, stop);
    }
    return hidden;
  }

  async deleteDocument(documentId: string): Promise<boolean> {
    if (!(await this.hideDocument(documentId))) return false;
    await this.purgeDocument(documentId);
    return true;
  }

  /** Stops saving the indexes (a snapshot being written is abandoned: the last one stays). */
  async close(): Promise<void> {
    this.preread?.stop.abort();
    await this.preread?.done;
    await this.loader.close();
  }

  /** Resolves when the vector indexes' approximate graphs hold every row (built in slices). */
  buildGraphs(): Promise<void> {
    return this.loader.buildGraphsNow();
  }

  /** Writes a snapshot of every loaded index that changed since its last one, now. */
  saveIndexes(): Promise<void> {
    return this.loader.flush();
  }

  /** Bytes held by each in-process structure (bench:scale). */
  memoryReport(): Record<string, number> {
    const report: Record<string, number> = {};
    const add = (part: Record<string, number>) => {
      for (const [name, bytes] of Object.entries(part)) report[name] = (report[name] ?? 0) + bytes;
    };
    if (this.indexes.keyword !== undefined) {
      add(this.indexes.keyword.index.memoryReport());
      add({ 'keyword vocabulary': sharedLexer().byteLength });
    }
    for (const { index } of this.indexes.vectors.values()) add(index.memoryReport());
    return report;
  }

  // --- reading ----------------------------------------------------------------------------------

  /**
   * Loads the indexes without holding the event loop (from their snapshots when they may be
   * used, else from the tables in slices), then brings them up to date in one read.
   */
  async warm(model: string): Promise<number> {
    this.loading ??= this.loader.load(this.tables.ofModel(model)).finally(() => {
      this.loading = undefined;
    });
    await this.loading;
    this.startPreread();
    return this.db
      .transaction(() => {
        for (const t of this.tables.ofModel(model)) this.indexes.vectorIndex(t.table, t.dimensions);
        return this.indexes.keywordIndex().size;
      })
      .deferred();
  }

  /** Starts the pre-read of the database file, once (not for a database in memory). */
  private startPreread(): void {
    const log = this.prereadLog;
    const file = this.db.name;
    if (log === null || this.preread !== undefined || this.db.memory || file === '') return;
    const stop = new AbortController();
    const done = prereadFile(file, { signal: stop.signal }).then(
      ({ size, read, ms, skipped }) => {
        const fields = { bytes: read, fileBytes: size, ms };
        if (skipped === null) log.info(fields, 'database file pre-read into the page cache');
        if (skipped === 'too large') {
          log.info(fields, 'database file not pre-read: larger than half the available memory');
        }
      },
      (error: unknown) => {
        log.warn({ err: error }, 'pre-reading the database file failed');
      },
    );
    this.preread = { stop, done };
  }

  async search(request: SearchRequest, rank: Ranking): Promise<RankedHit[]> {
    // While the start-up load runs, a search waits for it (it would otherwise load on its own);
    // if the load fails, the search loads what it needs itself.
    if (this.loading !== undefined) await this.loading.catch(() => undefined);
    // A deferred transaction in WAL mode: every statement inside sees the same snapshot.
    return this.db
      .transaction(() => {
        const { text, vector, model, limit } = request;
        const filter = this.scope(request.filter);
        const empty = filter.documents?.size === 0;
        // The vector copy, current as of this snapshot; a graph of it looks for its candidates
        // (in its worker) while the keywords are ranked.
        const vectors = vector === null || empty ? null : this.vectorIndexOf(vector, model);
        // With a text too (hybrid), the vector candidates are fused with the keyword ones: the
        // vector search goes only as deep as the answer needs (`fusedTop`, chunk-store.ts), and
        // the graph looks less far (ann-graph.ts) — asked ahead so, asked again in full if no
        // keyword matched after all (the vector order is then the answer's).
        const depth = vectorDepth(request);
        const top = request.fusedTop;
        // Fetched at first: a margin for chunks of unsearchable documents, except when fused
        // (they are rare, and a fused search reads only the exact cosines its depth can use). A
        // fused search also scores the `limit` nearest chunks by their keywords (`nearestMatches`).
        const fetch =
          text === null ? depth + 32 : top === undefined ? depth : Math.max(depth, limit);
        if (vector !== null) vectors?.prefetch(vector, filter, fetch, text !== null);
        const query = text === null ? null : this.keywords.parse(text);
        const keyword = query === null || empty ? [] : this.keywordCandidates(query, filter, limit);
        const keywordMax = query === null ? 0 : this.keywords.max(query);
        if (vector === null || vectors === null) {
          return this.ranked({ keyword, semantic: [], cosine: new Map(), keywordMax }, rank);
        }
        // Hybrid: the nearest chunks that hold a query word join the keyword candidates, with
        // their BM25 (`nearestMatches`).
        const near =
          query === null || keyword.length === 0
            ? null
            : this.nearestBounds(vectors, vector, filter, fetch);
        const candidates =
          query === null || near === null
            ? keyword
            : keyword.concat(this.nearestMatches(query, keyword, near, limit));
        // Fused: only the cosines that can change the answer are read (fused-cosines.ts).
        if (top !== undefined && request.fusedScore !== undefined && near !== null) {
          const score = request.fusedScore(candidates, keywordMax);
          // The nearest chunks' bounds are known: only the other candidates' are computed.
          const known = new Map(near.map((n) => [n.chunkId, n]));
          const cosines = {
            bounds: (ids: readonly string[]) => {
              const bounds = vectors.cosineBounds(
                vector,
                ids.filter((id) => !known.has(id)),
              );
              for (const id of ids) {
                const n = known.get(id);
                if (n !== undefined) bounds.set(id, { lower: n.lower, upper: n.upper });
              }
              return bounds;
            },
            read: (ids: readonly string[]) => vectors.similarities(vector, ids),
          };
          const contenders = nearestContenders(near, top);
          const evidence = fusedEvidence(candidates, contenders, cosines, score, top);
          return this.ranked({ ...evidence, keywordMax }, rank);
        }
        const cosine = vectors.similarities(
          vector,
          candidates.map((k) => k.chunkId),
        );
        const semantic = this.vectorSearch(
          vectors,
          vector,
          filter,
          depth,
          fetch,
          keyword.length > 0,
        );
        return this.ranked({ keyword: candidates, semantic, cosine, keywordMax }, rank);
      })
      .deferred();
  }

  /** The evidence ranked, with the rows of the ranked chunks (inside the search's snapshot). */
  private ranked(evidence: Evidence, rank: Ranking): RankedHit[] {
    const top = rankEvidence(evidence, rank);
    return inRankOrder(top, this.hits(top.map((c) => c.chunkId)));
  }

  /**
   * The scope as the indexes apply it: a metadata filter becomes the set of searchable documents
   * it matches, read in this transaction's snapshot, so the indexes restrict their candidates
   * before ranking (a filter never leaves fewer than `limit` when enough chunks match).
   */
  private scope(filter: SearchFilter): IndexScope {
    const projectId = filter.projectId === undefined ? {} : { projectId: filter.projectId };
    let documentIds = filter.documentIds;
    if (filter.documentId !== undefined) {
      documentIds = (documentIds ?? [filter.documentId]).filter((id) => id === filter.documentId);
    }
    if (filter.where === undefined) {
      return documentIds === undefined
        ? projectId
        : { ...projectId, documents: new Set(documentIds) };
    }
    const params: unknown[] = [];
    const condition = toSqlite(sqliteFilterSql(filter.where, 'd.'), params);
    let sql = `select d.id from knowledge_documents d where ${SEARCHABLE} and ${condition}`;
    if (filter.projectId !== undefined) {
      sql += ' and d.project_id = ?';
      params.push(filter.projectId);
    }
    if (documentIds !== undefined) {
      sql += ' and d.id in (select value from json_each(?))';
      params.push(JSON.stringify(documentIds));
    }
    const ids = this.statement(sql)
      .pluck()
      .all(...params) as string[];
    return { ...projectId, documents: new Set(ids) };
  }

  /** Keyword candidates by BM25, within the scope (public for the tests that compare with FTS5). */
  keywordSearch(text: string, filter: IndexScope, limit: number): Candidate[] {
    return this.keywordCandidates(this.keywords.parse(text), filter, limit);
  }

  private keywordCandidates(query: KeywordQuery, filter: IndexScope, limit: number): Candidate[] {
    const { lexemes } = query;
    if (lexemes === 'phrase') return this.keywords.phraseSearch(query, filter, limit);
    return lexemes.length === 0 ? [] : this.keywordInProcess(lexemes, filter, limit);
  }

  /**
   * The `limit` nearest chunks (by their int8 cosine, among `near`) that hold a query word and are
   * not keyword candidates already, with their BM25 as the keyword search scores it: a chunk close
   * in meaning that also matches, but below the keyword candidates' depth, is fused with both
   * (docs/performance.md, thirteenth pass).
   */
  private nearestMatches(
    query: KeywordQuery,
    keyword: readonly Candidate[],
    near: readonly BoundedNearest[],
    limit: number,
  ): Candidate[] {
    const known = new Set(keyword.map((k) => k.chunkId));
    const nearest = near
      .filter((n) => !known.has(n.chunkId))
      .sort((a, b) => b.lower + b.upper - (a.lower + a.upper))
      .slice(0, limit);
    const scores = this.keywords.scoresOf(query, nearest);
    return nearest.flatMap((n) => {
      const score = scores.get(n.chunkId);
      return score === undefined ? [] : [{ chunkId: n.chunkId, score }];
    });
  }

  /**
   * Ranks with the in-process keyword index (FTS5's scores) and drops the chunks of unsearchable
   * documents (a failed re-index keeps its rows in the statistics, as FTS5 does); fetches deeper
   * while that left fewer than `limit`. Such chunks are rare, so the first search asks for
   * `limit` alone: a deeper top k lowers the pruning's floor (keyword-maxscore.ts), and asking
   * 32 more cost every search ~9 % at 1M chunks (docs/performance.md, ninth pass).
   */
  private keywordInProcess(groups: number[][], filter: IndexScope, limit: number): Candidate[] {
    const index = this.indexes.keywordIndex();
    return this.searchableResults(limit, limit, (fetch) => index.search(groups, filter, fetch))
      .slice(0, limit)
      .map((k) => ({ chunkId: k.chunkId, score: k.score }));
  }

  /** The candidates whose document is searchable (one lookup per distinct document). */
  private searchable<T extends { documentId: string }>(candidates: T[]): T[] {
    if (candidates.length === 0) return candidates;
    const documents = [...new Set(candidates.map((c) => c.documentId))];
    const ok = new Set(
      this.statement(SEARCHABLE_OF).pluck().all(JSON.stringify(documents)) as string[],
    );
    return ok.size === documents.length
      ? candidates
      : candidates.filter((c) => ok.has(c.documentId));
  }

  /** The vector copy of the model's table (current as of this transaction), if it has one. */
  private vectorIndexOf(vector: Float32Array, model: string): VectorIndex | null {
    const table = this.tables.find(model, vector.length);
    return table === null ? null : this.indexes.vectorIndex(table, vector.length);
  }

  private vectorSearch(
    index: VectorIndex,
    vector: Float32Array,
    filter: IndexScope,
    limit: number,
    first: number,
    fused: boolean,
  ): Candidate[] {
    // Exact KNN in process; the scope filters apply before ranking, the status check after it
    // only drops chunks of failed re-indexes.
    const kept = this.searchableResults(first, limit, (fetch) =>
      index.search(vector, filter, fetch, fused),
    );
    return kept.slice(0, limit).map((n) => ({ chunkId: n.chunkId, score: n.score }));
  }

  /**
   * A fused search's nearest chunks before their cosines are read: the searchable ones of those
   * the index looks at for the `depth` nearest (with bounds of their cosines, in no order).
   */
  private nearestBounds(
    index: VectorIndex,
    vector: Float32Array,
    filter: IndexScope,
    depth: number,
  ): BoundedNearest[] {
    return this.searchableResults(depth, depth, (fetch) =>
      index.nearestBounds(vector, filter, fetch, true),
    );
  }

  /**
   * The searchable ones of a search's results for `fetch` (`find`), from `first` on and deeper
   * while fewer than `enough` are left (a run's staged rows are in the copies too).
   */
  private searchableResults<T extends { documentId: string }>(
    first: number,
    enough: number,
    find: (fetch: number) => T[],
  ): T[] {
    for (let fetch = first; ; fetch *= 4) {
      const nearest = find(fetch);
      const kept = this.searchable(nearest);
      if (kept.length >= enough || nearest.length < fetch) return kept;
    }
  }

  async listChunks(documentId: string): Promise<ChunkRow[]> {
    return this.statement(
      `select c.* from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
       where c.document_id = ? and ${CURRENT} order by c.chunk_index`,
    ).all(documentId) as ChunkRow[];
  }

  async chunkCountsByProject(): Promise<Map<string | null, number>> {
    const rows = this.statement(
      `select d.project_id, count(*) from knowledge_chunks c
       join knowledge_documents d on d.id = c.document_id
       where ${CURRENT} group by d.project_id`,
    )
      .raw()
      .all() as [string | null, number][];
    return new Map(rows);
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
       where c.id in (select value from json_each(?)) and ${CURRENT}`,
    ).all(JSON.stringify(chunkIds)) as ChunkHit[];
  }
}
