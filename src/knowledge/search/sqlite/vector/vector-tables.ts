/**
 * Where SQLite keeps vectors: a plain table per (model, dimensions), listed in
 * `knowledge_vector_tables` and created on first use, with a row per chunk (the chunk's id,
 * document and project key, and its float32 vector as a BLOB). The in-process vector index
 * (vector-index.ts) answers every search; the table is what it loads from.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { vectorTableName } from '../../chunk-store.js';
import type { Statements } from '../statements.js';
import type { VectorSource } from './vector-types.js';

/** The DDL of a vector table (the same as migration 0008's, which moved older vectors here). */
function vectorTableDdl(table: string): string {
  return `create table if not exists ${table} (
    chunk_id text primary key references knowledge_chunks (id) on delete cascade,
    document_id text not null,
    project_key text not null,
    embedding blob not null
  )`;
}

/** A float32 view of a vector blob; copied when asked or when the bytes are not 4-aligned. */
export function asFloat32(blob: Buffer, copy = false): Float32Array {
  if (copy || blob.byteOffset % 4 !== 0) return new Float32Array(new Uint8Array(blob).buffer);
  return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
}

/**
 * A vector table as the exact vectors of its in-process index: read in one or two statements (a
 * few hundred per search, inside the search's read transaction, so they are the rows the index
 * was brought up to date with). By rowid where the index knows it (~3× faster than through the
 * chunk id's index: one B-tree descent instead of two), and kept only if the row there is still
 * that chunk's: a rowid is not a stable name (VACUUM may renumber a table without an INTEGER
 * PRIMARY KEY, a re-index writes new rows), so a row found elsewhere or not at all is read by its
 * chunk id.
 */
export function tableVectors(statement: Statements, table: string): VectorSource {
  const byId = `select chunk_id, embedding from ${table}
    where chunk_id in (select value from json_each(?))`;
  const byRowid = `select rowid, chunk_id, embedding from ${table}
    where rowid in (select value from json_each(?))`;
  return {
    vectors(chunkIds, rowids) {
      const found = new Map<string, Float32Array>();
      if (chunkIds.length === 0) return found;
      let rest: readonly string[] = chunkIds;
      if (rowids !== undefined) {
        const expected = new Map<number, string>();
        for (let i = 0; i < chunkIds.length; i++) {
          const rowid = rowids[i] ?? Number.NaN;
          if (!Number.isNaN(rowid)) expected.set(rowid, chunkIds[i] ?? '');
        }
        if (expected.size > 0) {
          const rows = statement(byRowid)
            .raw()
            .all(JSON.stringify([...expected.keys()])) as [number, string, Buffer][];
          for (const [rowid, id, blob] of rows) {
            if (expected.get(rowid) === id) found.set(id, asFloat32(blob));
          }
          rest = found.size === chunkIds.length ? [] : chunkIds.filter((id) => !found.has(id));
        }
      }
      if (rest.length === 0) return found;
      const rows = statement(byId).raw().all(JSON.stringify(rest)) as [string, Buffer][];
      for (const [id, blob] of rows) found.set(id, asFloat32(blob));
      return found;
    },
  };
}

/** A registered vector table. */
export interface RegisteredTable {
  model: string;
  dimensions: number;
  table: string;
}

/**
 * The registry of vector tables, cached by (model, dimensions). The cache holds while the
 * database's schema is unchanged (`schema_version`, ~2 µs to read): another process that dropped
 * or made a table (a model switch, vector-drop.ts) changes it, and the cache is read again.
 */
export class VectorTables {
  private readonly names = new Map<string, string>();
  private readonly schemaVersion: BetterSqlite3.Statement;
  private schema = -1;
  /** Called when the schema changed (tables may be gone: the store drops their copies). */
  onSchemaChange: () => void = () => undefined;

  constructor(private readonly db: BetterSqlite3.Database) {
    this.schemaVersion = db.prepare('pragma schema_version').pluck();
  }

  /** Clears the cache when the schema changed since it was filled. */
  private check(): void {
    const schema = this.schemaVersion.get() as number;
    if (schema === this.schema) return;
    this.schema = schema;
    this.names.clear();
    this.onSchemaChange();
  }

  /** The table of a (model, dimensions), or null when none was made yet. */
  find(model: string, dimensions: number): string | null {
    this.check();
    const key = `${model}\u0000${dimensions}`;
    const cached = this.names.get(key);
    if (cached !== undefined) return cached;
    const table = this.db
      .prepare('select table_name from knowledge_vector_tables where model = ? and dimensions = ?')
      .pluck()
      .get(model, dimensions) as string | undefined;
    if (table !== undefined) this.names.set(key, table);
    return table ?? null;
  }

  /** The table of a (model, dimensions), made and registered when missing. */
  ensure(model: string, dimensions: number): string {
    const found = this.find(model, dimensions);
    if (found !== null) return found;
    const table = vectorTableName(model, dimensions);
    this.db.exec(vectorTableDdl(table));
    this.db
      .prepare(
        'insert into knowledge_vector_tables (model, dimensions, table_name) values (?, ?, ?)',
      )
      .run(model, dimensions, table);
    this.names.set(`${model}\u0000${dimensions}`, table);
    return table;
  }

  /** The tables of a model (one per dimensions it was used with). */
  ofModel(model: string): { table: string; dimensions: number }[] {
    return this.all().filter((t) => t.model === model);
  }

  /** Every registered table. */
  all(): RegisteredTable[] {
    this.check();
    return this.db
      .prepare(
        `select model, dimensions, table_name as "table" from knowledge_vector_tables
         order by model, dimensions`,
      )
      .all() as RegisteredTable[];
  }

  /** Forgets the cache: a table created in a transaction that rolled back is gone again. */
  forget(): void {
    this.names.clear();
  }
}
