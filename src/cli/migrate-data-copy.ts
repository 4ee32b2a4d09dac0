/**
 * `aps migrate-data`: what it copies. Documents in batches, each batch one transaction on the
 * target (its files first: a file without its document is an orphan the server sweeps, never a
 * document without its file), so an interrupted run leaves whole documents only and a new run
 * resumes with those not there yet. Then the plain tables (keys, the audit log, …), upserted.
 */
import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FileStorage } from '../knowledge/storage/storage.js';
import type {
  CopiedDocument,
  PostgresDocumentImport,
  PreparedDocuments,
} from '../knowledge/search/postgres/import-documents.js';
import type { Row, SqliteSource } from './migrate-data-source.js';
import type { PostgresTarget } from './migrate-data-target.js';

/**
 * Tables copied row for row when both databases have them (a table a later migration adds to both
 * is copied once listed here), in an order that satisfies references between them.
 */
export const PLAIN_TABLES = ['projects', 'api_keys', 'api_key_generation', 'audit_log'] as const;

/** Rows per statement. */
const PAGE = 1000;

/** Where the files go: a storage of the target's kind, or nowhere (they stay where they are). */
export interface FileCopy {
  storage: FileStorage | null;
  /** The source's data directory (local storage keys are relative to it). */
  dataDir: string;
}

/** What a run did. */
export interface CopyTotals {
  documents: number;
  chunks: number;
  vectors: number;
  files: number;
  /** Files the source's records name that its data directory lacks. */
  missingFiles: string[];
}

/** Copies the file of `key` (if the source has it) into the target storage. */
async function copyFile(files: FileCopy, key: string, totals: CopyTotals): Promise<void> {
  if (files.storage === null) return;
  const path = join(files.dataDir, key);
  if (!existsSync(path)) {
    totals.missingFiles.push(key);
    return;
  }
  const pending = await files.storage.receive(
    createReadStream(path),
    Number.MAX_SAFE_INTEGER,
    () => new Error(`${key} is too large`),
  );
  try {
    await pending.commit(key);
  } finally {
    await pending.discard();
  }
  totals.files += 1;
}

/** Groups documents into batches of about `chunks` chunks (a large document alone). */
export function batches(
  documents: readonly Row[],
  chunkCounts: ReadonlyMap<string, number>,
  chunks: number,
): Row[][] {
  const out: Row[][] = [];
  let batch: Row[] = [];
  let size = 0;
  for (const doc of documents) {
    const n = chunkCounts.get(doc.id as string) ?? 0;
    if (batch.length > 0 && (size + n > chunks || batch.length >= 500)) {
      out.push(batch);
      batch = [];
      size = 0;
    }
    batch.push(doc);
    size += n;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/** Where a batch is read from and written to. */
export interface CopyDeps {
  source: SqliteSource;
  target: PostgresTarget;
  importer: PostgresDocumentImport;
  files: FileCopy;
}

/** A batch read from the source, its files copied and its keyword rows built: ready to write. */
export interface PreparedBatch {
  docs: readonly Row[];
  chunkRows: Row[];
  prepared: PreparedDocuments;
}

/** Reads a batch of documents and copies their files (before their rows: see above). */
export async function prepareBatch(
  docs: readonly Row[],
  deps: CopyDeps,
  totals: CopyTotals,
): Promise<PreparedBatch> {
  const { source, importer, files } = deps;
  for (const doc of docs) {
    await copyFile(files, doc.file_path as string, totals);
    if (typeof doc.markdown_path === 'string') await copyFile(files, doc.markdown_path, totals);
  }
  const tables = source.vectorTables();
  const copied: CopiedDocument[] = [];
  const chunkRows: Row[] = [];
  for (const doc of docs) {
    const id = doc.id as string;
    const rows = source.chunks(id);
    chunkRows.push(...rows);
    copied.push({
      id,
      name: doc.name as string,
      projectKey: doc.project_key as string,
      chunks: rows.map((r) => ({
        id: r.id as string,
        sectionPath: r.section_path as string,
        content: r.content as string,
      })),
      vectors: tables.flatMap((t) => {
        const { ids, vectors } = source.vectors(t.table_name, id);
        return ids.length === 0 ? [] : [{ model: t.model, dimensions: t.dimensions, ids, vectors }];
      }),
    });
  }
  return { docs, chunkRows, prepared: await importer.prepare(copied) };
}

/** Writes a prepared batch (rows, chunks, keyword rows, vectors) in one transaction. */
export async function writeBatch(
  batch: PreparedBatch,
  deps: CopyDeps,
  totals: CopyTotals,
): Promise<void> {
  const { target, importer } = deps;
  const { docs, chunkRows, prepared } = batch;
  const documentColumns = await target.shared('knowledge_documents', Object.keys(docs[0] ?? {}));
  const chunkColumns = await target.shared('knowledge_chunks', Object.keys(chunkRows[0] ?? {}));
  await importer.write(prepared, async (client) => {
    await target.insert(client, 'knowledge_documents', documentColumns, docs);
    for (let from = 0; from < chunkRows.length; from += PAGE) {
      const page = chunkRows.slice(from, from + PAGE);
      await target.insert(client, 'knowledge_chunks', chunkColumns, page);
    }
  });
  totals.documents += docs.length;
  totals.chunks += chunkRows.length;
  for (const doc of prepared.documents) {
    for (const set of doc.vectors) totals.vectors += set.ids.length;
  }
}

/**
 * Copies `list` batch by batch, the next one read and prepared while the previous one is written
 * (the keyword rows' build in this process overlaps the database's work); `step` after each
 * written batch, `stopping()` checked before each. True when it stopped before the last.
 */
export async function copyBatches(
  list: readonly Row[][],
  deps: CopyDeps,
  totals: CopyTotals,
  hooks: {
    begin(batch: readonly Row[]): void;
    step(batch: readonly Row[]): void;
    stopping(): boolean;
  },
): Promise<boolean> {
  const start = (i: number) => {
    const docs = list[i];
    if (docs === undefined || hooks.stopping()) return null;
    const pending = prepareBatch(docs, deps, totals);
    pending.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
    return pending;
  };
  let next = start(0);
  let written = 0;
  while (next !== null) {
    const batch = await next;
    next = start(written + 1);
    hooks.begin(batch.docs);
    await writeBatch(batch, deps, totals);
    hooks.step(batch.docs);
    written += 1;
  }
  return written < list.length;
}

/**
 * Copies the plain tables both databases have, in one transaction, replacing rows of the same
 * key (a resumed or repeated run brings keys revoked meanwhile up to date).
 */
export async function copyPlainTables(
  source: SqliteSource,
  target: PostgresTarget,
): Promise<string[]> {
  const copied: string[] = [];
  const client = await target.pool.connect();
  try {
    await client.query('begin');
    for (const table of PLAIN_TABLES) {
      if (!source.hasTable(table) || !(await target.hasTable(table))) continue;
      const columns = await target.shared(table, source.columns(table));
      const key = await target.primaryKey(table);
      if (key.length === 0) throw new Error(`${table} has no primary key on the target`);
      for (const page of source.rows(
        table,
        columns.map((c) => c.name),
        PAGE,
      )) {
        await target.insert(client, table, columns, page, key);
      }
      copied.push(table);
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  return copied;
}
