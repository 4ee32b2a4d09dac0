/**
 * ChunkStore on SQLite: chunk rows, an FTS5 keyword table and a plain vector table per model,
 * searched through in-process copies of both (copies/in-process-copies.ts). This class wires the
 * parts: the writes, in short synchronous better-sqlite3 transactions made current in one step
 * (sqlite-chunk-writes.ts); the searches, in one read snapshot (sqlite-searches.ts); and the
 * copies' load at start-up and their snapshots (copies/copies-loader.ts). SQLite-only SQL lives
 * here, in this folder and in the SQLite dialect module.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { ChunkRow } from '../../../db/schema.js';
import type {
  Candidate,
  ChunkStore,
  IndexCommit,
  IndexScope,
  RankedHit,
  Ranking,
  SearchRequest,
  StoreLog,
  VectorCoverage,
} from '../chunk-store.js';
import { registerSqliteFilter } from '../../filter/sql.js';
import { CopiesLoader } from './copies/copies-loader.js';
import { prereadFile } from './copies/file-preread.js';
import { CURRENT, InProcessCopies } from './copies/in-process-copies.js';
import type { SnapshotOptions } from './copies/snapshots.js';
import { sharedLexer } from './keyword/fts5-lexer.js';
import { KeywordQueries } from './keyword-queries.js';
import { SqliteChunkWrites } from './sqlite-chunk-writes.js';
import { SqliteSearches } from './sqlite-searches.js';
import { statementCache, type Statements } from './statements.js';
import type { VectorIndexOptions } from './vector/vector-index.js';
import {
  dropOtherVectors,
  dropUnregistered,
  otherModelsStored,
  vectorCoverage,
} from './vector/model-vectors.js';
import { asFloat32, VectorTables } from './vector/vector-tables.js';

export interface SqliteChunkStoreOptions {
  /** Where and when snapshots of the copies are saved (copies/snapshots.ts); null: never. */
  snapshots?: SnapshotOptions | null;
  /** Options of the vector indexes (from which size they search an approximate graph). */
  vectors?: VectorIndexOptions;
  /**
   * Read the database file once after the first load of the copies, so that searches find its
   * pages in the operating system's cache (file-preread.ts); `log` hears how it went. Null or
   * absent: not read.
   */
  preread?: { log: StoreLog } | null;
}

export class SqliteChunkStore implements ChunkStore {
  private readonly statement: Statements;
  private readonly tables: VectorTables;
  private readonly copies: InProcessCopies;
  private readonly writes: SqliteChunkWrites;
  private readonly loader: CopiesLoader;
  private readonly searches: SqliteSearches;
  /** The start-up load of the copies while it runs: searches wait for it. */
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
    this.copies = new InProcessCopies(this.statement, options.vectors);
    this.loader = new CopiesLoader(this.copies, options.snapshots ?? null);
    // Another process dropped a model's table (a model switch): its copy here goes too.
    this.tables.onSchemaChange = () => {
      const registered = new Set(this.tables.all().map((t) => t.table));
      for (const table of [...this.copies.vectors.keys()]) {
        if (!registered.has(table)) this.loader.forgetVector(table);
      }
    };
    const keywords = new KeywordQueries(this.copies, this.statement);
    this.searches = new SqliteSearches(db, this.statement, this.tables, this.copies, keywords);
    this.writes = new SqliteChunkWrites(db, this.statement, this.tables, this.copies);
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
    await dropUnregistered(this.db, stop ?? (() => false));
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

  async otherModelsStored(target: string): Promise<boolean> {
    return otherModelsStored(this.statement, this.tables, target);
  }

  async vectorCoverage(target: string): Promise<VectorCoverage> {
    return vectorCoverage(this.db, this.statement, this.tables, target);
  }

  dropVectors(keep: string, stop: () => boolean = () => false): Promise<string[]> {
    return dropOtherVectors(
      this.db,
      this.tables,
      keep,
      (t) => {
        this.loader.forgetVector(t);
      },
      stop,
    );
  }

  /** Stops saving the copies (a snapshot being written is abandoned: the last one stays). */
  async close(): Promise<void> {
    this.preread?.stop.abort();
    await this.preread?.done;
    await this.loader.close();
  }

  /** Resolves when the vector indexes' approximate graphs hold every row (built in slices). */
  buildGraphs(): Promise<void> {
    return this.loader.buildGraphsNow();
  }

  /** Writes a snapshot of every loaded copy that changed since its last one, now. */
  saveIndexes(): Promise<void> {
    return this.loader.flush();
  }

  /** Bytes held by each in-process structure (bench:scale). */
  memoryReport(): Record<string, number> {
    const report: Record<string, number> = {};
    const add = (part: Record<string, number>) => {
      for (const [name, bytes] of Object.entries(part)) report[name] = (report[name] ?? 0) + bytes;
    };
    if (this.copies.keyword !== undefined) {
      add(this.copies.keyword.index.memoryReport());
      add({ 'keyword vocabulary': sharedLexer().byteLength });
    }
    for (const { index } of this.copies.vectors.values()) add(index.memoryReport());
    return report;
  }

  // --- reading ----------------------------------------------------------------------------------

  /**
   * Loads the in-process copies without holding the event loop (from their snapshots when they
   * may be used, else from the tables in slices), then brings them up to date in one read.
   */
  async warm(model: string): Promise<number> {
    this.loading ??= this.loader.load(this.tables.ofModel(model)).finally(() => {
      this.loading = undefined;
    });
    await this.loading;
    this.startPreread();
    return this.db
      .transaction(() => {
        for (const t of this.tables.ofModel(model)) this.copies.vectorIndex(t.table, t.dimensions);
        return this.copies.keywordIndex().size;
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

  async search(request: SearchRequest, ranking: Ranking): Promise<RankedHit[]> {
    // While the start-up load runs, a search waits for it (it would otherwise load on its own);
    // if the load fails, the search loads what it needs itself.
    if (this.loading !== undefined) await this.loading.catch(() => undefined);
    return this.searches.search(request, ranking);
  }

  /** Keyword candidates by BM25, within the scope (for the tests that compare with FTS5). */
  keywordSearch(text: string, filter: IndexScope, limit: number): Candidate[] {
    return this.searches.keywordSearch(text, filter, limit);
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
}
