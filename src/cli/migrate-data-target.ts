/**
 * `aps migrate-data`: the PostgreSQL database it copies into. Migrated by the project's migrator
 * first; refused when it holds documents of anything but an earlier run from the same source
 * (recorded in `aps_data_migration`). Rows are written by column lists read from both databases
 * at run time (the columns they share), through `json_populate_recordset`, so a column a later
 * migration adds to both flows through without a change here.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../db/database.js';
import { MIGRATIONS } from '../db/migrations/index.js';
import { migrate } from '../db/migrator.js';
import type { Row } from './migrate-data-source.js';

/** SQLite's bookkeeping of its staged chunk writes (migration 0011): meaningless on PostgreSQL. */
const ENGINE_COLUMNS = new Set(['chunk_token', 'run_token', 'fts_rowid']);

/** A column of a target table. */
interface Column {
  name: string;
  type: string;
}

/** What the target holds before a run. */
export type TargetState = { kind: 'fresh' } | { kind: 'resume'; documents: number };

/** Refused: the target holds other data. */
export class TargetNotEmptyError extends Error {}

export class PostgresTarget {
  private readonly columnCache = new Map<string, Column[]>();

  constructor(readonly database: PostgresDatabase) {}

  get pool() {
    return this.database.pool;
  }

  /** Applies every migration; throws if they fail. */
  async migrate(): Promise<void> {
    const state = await migrate(this.database, MIGRATIONS);
    if (state.status !== 'ok') {
      throw new Error(`Migrating the target failed: ${state.errorMessage ?? 'unknown error'}`);
    }
  }

  /**
   * Claims the target for a copy from `source`: fresh (no document, no run of another source
   * recorded), or an earlier run from the same source to resume. Refuses otherwise.
   */
  async claim(source: string): Promise<TargetState> {
    await this.pool.query(`create table if not exists aps_data_migration (
      id integer primary key check (id = 1),
      source text not null,
      started_at text not null,
      finished_at text
    )`);
    const { rows } = await this.pool.query<{ source: string }>(
      'select source from aps_data_migration where id = 1',
    );
    const recorded = rows[0]?.source;
    const counted = await this.pool.query<{ n: number }>(
      'select count(*)::int as n from knowledge_documents',
    );
    const documents = counted.rows[0]?.n ?? 0;
    if (recorded !== undefined && recorded !== source) {
      throw new TargetNotEmptyError(
        `The target database holds a copy of another base (${recorded}): use an empty database`,
      );
    }
    if (recorded === undefined && documents > 0) {
      throw new TargetNotEmptyError(
        `The target database already holds ${documents} documents: migrate-data copies into an empty database only`,
      );
    }
    if (recorded === undefined) {
      await this.pool.query(
        'insert into aps_data_migration (id, source, started_at) values (1, $1, $2)',
        [source, new Date().toISOString()],
      );
      return { kind: 'fresh' };
    }
    return { kind: 'resume', documents };
  }

  /** Records that a run finished (a later run from the same source only checks and verifies). */
  async finish(): Promise<void> {
    await this.pool.query('update aps_data_migration set finished_at = $1 where id = 1', [
      new Date().toISOString(),
    ]);
  }

  /** Which of `ids` are documents here already. */
  async existingDocuments(ids: readonly string[]): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ id: string }>(
      'select id from knowledge_documents where id = any($1::text[])',
      [ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  hasTable(table: string): Promise<boolean> {
    return this.columns(table).then((c) => c.length > 0);
  }

  /** The table's columns and types (none: no such table). */
  async columns(table: string): Promise<Column[]> {
    const cached = this.columnCache.get(table);
    if (cached !== undefined) return cached;
    const { rows } = await this.pool.query<Column>(
      `select column_name as name, data_type as type from information_schema.columns
       where table_schema = current_schema() and table_name = $1 order by ordinal_position`,
      [table],
    );
    this.columnCache.set(table, rows);
    return rows;
  }

  /** The columns both databases have (engine bookkeeping left out), with the target's types. */
  async shared(table: string, sourceColumns: readonly string[]): Promise<Column[]> {
    const source = new Set(sourceColumns);
    return (await this.columns(table)).filter(
      (c) => source.has(c.name) && !ENGINE_COLUMNS.has(c.name),
    );
  }

  /** The primary key's columns. */
  async primaryKey(table: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>(
      `select a.attname as name from pg_index i
       join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
       where i.indrelid = $1::regclass and i.indisprimary order by a.attnum`,
      [table],
    );
    return rows.map((r) => r.name);
  }

  /** Inserts `rows` (of `columns`) into `table`; with `upsert`, rows of a known key are replaced. */
  async insert(
    client: PoolClient | PostgresDatabase['pool'],
    table: string,
    columns: readonly Column[],
    rows: readonly Row[],
    upsert: string[] | null = null,
  ): Promise<void> {
    if (rows.length === 0 || columns.length === 0) return;
    const list = columns.map((c) => `"${c.name}"`).join(', ');
    const others = columns.filter((c) => !(upsert ?? []).includes(c.name));
    const conflict =
      upsert === null
        ? ''
        : others.length === 0
          ? ` on conflict (${upsert.join(', ')}) do nothing`
          : ` on conflict (${upsert.join(', ')}) do update set ${others
              .map((c) => `"${c.name}" = excluded."${c.name}"`)
              .join(', ')}`;
    const json = JSON.stringify(rows.map((row) => jsonRow(row, columns)));
    await client.query(
      `insert into ${table} (${list})
       select ${list} from json_populate_recordset(null::${table}, $1::json)${conflict}`,
      [json],
    );
  }
}

/** A source row as the target's types read it from JSON. */
function jsonRow(row: Row, columns: readonly Column[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { name, type } of columns) {
    const value = row[name];
    if (value === null || value === undefined) out[name] = null;
    else if (type === 'boolean') out[name] = value === 1 || value === '1' || value === true;
    else if ((type === 'json' || type === 'jsonb') && typeof value === 'string')
      out[name] = JSON.parse(value);
    else if (typeof value === 'bigint') out[name] = value.toString();
    else if (Buffer.isBuffer(value)) out[name] = `\\x${value.toString('hex')}`;
    else out[name] = value;
  }
  return out;
}
