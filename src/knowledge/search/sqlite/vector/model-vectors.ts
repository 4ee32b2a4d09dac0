/**
 * The vectors of each embedding model on SQLite, for a model switch (embeddings/model-switch.ts):
 * how many current chunks each model's vectors cover, and dropping the tables of the models no
 * longer used. A table is unregistered first (searches stop finding it, in this process at once and
 * in others at their next look: it is renamed, which changes the schema's version that
 * vector-tables.ts watches), then emptied in short
 * slices with the event loop yielded between them, then dropped: one `drop table` of a million
 * rows would hold the loop for seconds. A stop or a crash in between leaves an unregistered table,
 * which `dropUnregistered` (at the next start) empties and drops.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sliceTurn } from '../../../../event-loop-turns.js';
import type { VectorCoverage } from '../../chunk-store.js';
import { CURRENT } from '../copies/in-process-copies.js';
import type { Statements } from '../statements.js';
import type { VectorTables } from './vector-tables.js';

/** Rows deleted per slice while a dropped table is emptied (about 5-15 ms each). */
const EMPTY_SLICE = 2000;

/** The name a table being dropped is renamed to (`knowledge_vec_…` → `knowledge_vecdrop_…`). */
const dropping = (table: string) => table.replace(/^knowledge_vec_/, 'knowledge_vecdrop_');

/** The document query of `otherModelsStored`: one embedded with another model than the target. */
const OTHER_DOCUMENT = `select 1 from knowledge_documents where status <> 'deleting'
  and embedding_model is not null and embedding_model <> ? limit 1`;

/**
 * Whether anything of another model than `target` is stored: a vector table, or a document
 * embedded with it. Cheap (the registry and one document lookup): what a start asks first.
 */
export function otherModelsStored(
  statement: Statements,
  tables: VectorTables,
  target: string,
): boolean {
  return (
    tables.all().some((t) => t.model !== target) ||
    statement(OTHER_DOCUMENT).get(target) !== undefined
  );
}

/**
 * The current chunks and each model's coverage of them. Nothing of another model stored: the
 * target covers every chunk without a count per table.
 */
export function vectorCoverage(
  db: BetterSqlite3.Database,
  statement: Statements,
  tables: VectorTables,
  target: string,
): VectorCoverage {
  return db
    .transaction(() => {
      const chunks = statement(
        `select count(*) from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
         where ${CURRENT}`,
      )
        .pluck()
        .get() as number;
      if (!otherModelsStored(statement, tables, target)) {
        return { chunks, byModel: new Map([[target, chunks]]) };
      }
      const byModel = new Map<string, number>();
      for (const { model, table } of tables.all()) {
        const covered = statement(
          `select count(*) from ${table} v join knowledge_chunks c on c.id = v.chunk_id
           join knowledge_documents d on d.id = c.document_id where ${CURRENT}`,
        )
          .pluck()
          .get() as number;
        byModel.set(model, Math.max(byModel.get(model) ?? 0, covered));
      }
      return { chunks, byModel };
    })
    .deferred();
}

/**
 * Unregisters every vector table of another model than `keep`, calls `forget` with each (the
 * process's copy of it goes), then empties and drops them; returns the models dropped.
 */
export async function dropOtherVectors(
  db: BetterSqlite3.Database,
  tables: VectorTables,
  keep: string,
  forget: (table: string) => void,
  stop: () => boolean,
): Promise<string[]> {
  const others = db
    .transaction(() => {
      const found = tables.all().filter((t) => t.model !== keep);
      const unregister = db.prepare('delete from knowledge_vector_tables where table_name = ?');
      for (const t of found) {
        unregister.run(t.table);
        // A change of the schema: other processes' caches of the registry are read again.
        db.exec(`alter table ${t.table} rename to ${dropping(t.table)}`);
      }
      return found;
    })
    .immediate();
  tables.forget();
  for (const { table } of others) forget(table);
  for (const { table } of others) {
    if (stop()) break;
    await emptyAndDrop(db, dropping(table), stop);
  }
  return [...new Set(others.map((t) => t.model))];
}

/** Vector tables no model is registered with (a drop a stop or crash cut short); emptied, dropped. */
export async function dropUnregistered(
  db: BetterSqlite3.Database,
  stop: () => boolean,
): Promise<string[]> {
  const names = db
    .prepare(
      `select name from sqlite_master where type = 'table' and (name glob 'knowledge_vecdrop_*'
         or (name glob 'knowledge_vec_*' and name not in (select table_name from knowledge_vector_tables)))`,
    )
    .pluck()
    .all() as string[];
  for (const table of names) {
    if (stop()) break;
    await emptyAndDrop(db, table, stop);
  }
  return names;
}

async function emptyAndDrop(
  db: BetterSqlite3.Database,
  table: string,
  stop: () => boolean,
): Promise<void> {
  const slice = db.prepare(
    `delete from ${table} where rowid in (select rowid from ${table} limit ${EMPTY_SLICE})`,
  );
  while (slice.run().changes > 0) {
    if (stop()) return;
    await sliceTurn();
  }
  db.exec(`drop table if exists ${table}`);
}
