/**
 * `aps migrate-data`: the SQLite base it copies from, opened read-only (this process never writes
 * to it) and read in one snapshot: a read transaction held for the whole copy, so documents,
 * chunks, vectors, keys and the audit log are those of one moment even if a server runs on it.
 */
import { existsSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { asFloat32 } from '../knowledge/search/sqlite/vector/vector-tables.js';

/** A row as better-sqlite3 returns it. */
export type Row = Record<string, unknown>;

/** The source's chunks that searches return: those of the run its document made current. */
const CURRENT = `c.run_token is d.chunk_token and d.status <> 'deleting'`;

/** The vector table of a (model, dimensions), as `knowledge_vector_tables` lists it. */
export interface SourceVectorTable {
  model: string;
  dimensions: number;
  table_name: string;
}

/** A process holds SQLite's write lock (it is writing right now). */
export class SourceBusyError extends Error {}

export class SqliteSource {
  readonly native: BetterSqlite3.Database;
  private dataVersion = 0;
  private inSnapshot = false;

  constructor(readonly filename: string) {
    if (!existsSync(filename)) throw new Error(`No SQLite database at ${filename}`);
    this.native = new BetterSqlite3(filename, { readonly: true, fileMustExist: true });
    this.native.pragma('busy_timeout = 10000');
  }

  /**
   * Refuses while another process holds the write lock: asked without waiting, on a connection
   * of its own that takes the lock (`begin immediate`) and gives it back at once, writing nothing.
   */
  checkNoWriter(): void {
    const probe = new BetterSqlite3(this.filename, { fileMustExist: true });
    try {
      probe.pragma('busy_timeout = 0');
      probe.exec('begin immediate');
      probe.exec('rollback');
    } catch (error) {
      if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY') === true) {
        throw new SourceBusyError(
          `${this.filename} is being written by another process: stop the server (or whatever writes to it) and run again`,
        );
      }
      throw error;
    } finally {
      probe.close();
    }
  }

  /** Starts the read snapshot every later read sees (until `endSnapshot`). */
  beginSnapshot(): void {
    this.dataVersion = Number(this.native.pragma('data_version', { simple: true }));
    this.native.exec('begin');
    this.native.prepare('select count(*) from aps_migrations').get(); // the snapshot starts here
    this.inSnapshot = true;
  }

  /** Ends the snapshot; true when another connection committed a change since it began. */
  endSnapshot(): boolean {
    if (this.inSnapshot) this.native.exec('commit');
    this.inSnapshot = false;
    return Number(this.native.pragma('data_version', { simple: true })) !== this.dataVersion;
  }

  /** Names of the applied migrations. */
  migrations(): string[] {
    if (!this.hasTable('aps_migrations')) return [];
    const rows = this.native.prepare('select name from aps_migrations order by name').all();
    return (rows as { name: string }[]).map((r) => r.name);
  }

  /** Names this base apart from any other: its path and when its first migration ran. */
  identity(): string {
    const first = this.native
      .prepare('select applied_at from aps_migrations order by name limit 1')
      .get() as { applied_at: string } | undefined;
    return `sqlite:${this.filename}#${first?.applied_at ?? ''}`;
  }

  hasTable(table: string): boolean {
    return (
      this.native
        .prepare(`select 1 from sqlite_master where type = 'table' and name = ?`)
        .get(table) !== undefined
    );
  }

  /** The table's columns, in order. */
  columns(table: string): string[] {
    const rows = this.native.prepare(`select name from pragma_table_info(?)`).all(table);
    return (rows as { name: string }[]).map((r) => r.name);
  }

  /** Every row of `table` (its `columns`), in pages of `size`. */
  *rows(table: string, columns: readonly string[], size: number): Generator<Row[]> {
    const list = columns.map((c) => `"${c}"`).join(', ');
    let page: Row[] = [];
    for (const row of this.native.prepare(`select ${list} from ${table}`).iterate()) {
      page.push(row as Row);
      if (page.length >= size) {
        yield page;
        page = [];
      }
    }
    if (page.length > 0) yield page;
  }

  /** Documents to copy (not those being deleted), oldest first. */
  documents(): Row[] {
    return this.native
      .prepare(
        `select * from knowledge_documents where status <> 'deleting' order by created_at, id`,
      )
      .all() as Row[];
  }

  /** Current chunks per document id (documents without chunks absent). */
  chunkCounts(): Map<string, number> {
    const rows = this.native
      .prepare(
        `select c.document_id, count(*) from knowledge_chunks c
         join knowledge_documents d on d.id = c.document_id where ${CURRENT} group by c.document_id`,
      )
      .raw()
      .all() as [string, number][];
    return new Map(rows);
  }

  /** The document's current chunks, in order. */
  chunks(documentId: string): Row[] {
    return this.native
      .prepare(
        `select c.* from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
         where c.document_id = ? and ${CURRENT} order by c.chunk_index`,
      )
      .all(documentId) as Row[];
  }

  vectorTables(): SourceVectorTable[] {
    return this.native
      .prepare('select model, dimensions, table_name from knowledge_vector_tables order by model')
      .all() as SourceVectorTable[];
  }

  /** The stored vectors of the document's current chunks in `table`, in chunk order. */
  vectors(table: string, documentId: string): { ids: string[]; vectors: Float32Array[] } {
    const rows = this.native
      .prepare(
        `select v.chunk_id, v.embedding from knowledge_chunks c
         join knowledge_documents d on d.id = c.document_id
         join ${table} v on v.chunk_id = c.id
         where c.document_id = ? and ${CURRENT} order by c.chunk_index`,
      )
      .raw()
      .all(documentId) as [string, Buffer][];
    return {
      ids: rows.map(([id]) => id),
      vectors: rows.map(([, blob]) => asFloat32(blob, true)),
    };
  }

  /** The count of one statement. */
  count(sql: string): number {
    return Number(this.native.prepare(sql).pluck().get());
  }

  /** Counts to compare with the target's (migrate-data-verify.ts). */
  counts(tables: readonly string[]): Map<string, number> {
    const counts = new Map<string, number>();
    const byStatus = this.native
      .prepare(
        `select status, count(*) from knowledge_documents where status <> 'deleting' group by status`,
      )
      .raw()
      .all() as [string, number][];
    for (const [status, n] of byStatus) counts.set(`documents ${status}`, n);
    const current = `from knowledge_chunks c join knowledge_documents d on d.id = c.document_id where ${CURRENT}`;
    counts.set('chunks', this.count(`select count(*) ${current}`));
    counts.set(
      'keyword rows',
      this.count(`select count(*) ${current} and c.fts_rowid is not null`),
    );
    for (const t of this.vectorTables()) {
      counts.set(
        `vectors ${t.model} (${t.dimensions})`,
        this.count(`select count(*) ${current} and c.id in (select chunk_id from ${t.table_name})`),
      );
    }
    for (const table of tables) {
      if (this.hasTable(table)) counts.set(table, this.count(`select count(*) from ${table}`));
    }
    return counts;
  }

  close(): void {
    if (this.inSnapshot) this.native.exec('rollback');
    this.native.close();
  }
}
