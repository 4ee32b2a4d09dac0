/**
 * How the SQLite store writes without holding the event loop (better-sqlite3 is synchronous),
 * whatever the document's size (migration 0011):
 *
 * - commit: the run's chunks (rows, FTS5 rows, vectors) written in slices of about SLICE_MS, one
 *   short transaction each, under the run's token: searches ignore them (CURRENT), the in-process
 *   copies hold them under a key no search returns. Then one short transaction checks the token
 *   and sets the document's `chunk_token` (the flip): the old chunks stay searchable until then,
 *   and the copies swap the document's rows in the same step. The replaced chunks are purged in
 *   slices after.
 * - delete: the row hidden in one statement (status `deleting`: invisible to every read), then
 *   its chunks purged in slices and the row deleted.
 *
 * The event loop is yielded between slices. A crash leaves staged or hidden rows that searches
 * ignore; `purgeable` finds them at the next start (and a resumed run purges its document's
 * leftovers before it stages).
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sliceTurn } from '../../../event-loop-turns.js';
import type { IndexCommit, NewChunk } from '../chunk-store.js';
import { checkAlsoVectors, markIndexedSql } from '../chunk-store.js';
import { keywordText } from '../keyword-text.js';
import { sharedLexer } from './keyword/fts5-lexer.js';
import { STAGED_PREFIX, type AddedRows, type InProcessCopies } from './copies/in-process-copies.js';
import { purgeableDocuments } from './leftovers.js';
import type { Statements } from './statements.js';
import type { VectorTables } from './vector/vector-tables.js';

const NONE = new Int32Array(0);

/**
 * The rowids of written chunks' keyword rows and vector rows, in the chunks' order, and the texts
 * their keyword rows hold (the in-process copy tokenizes the same, not made again).
 */
interface Rowids {
  keyword: number[];
  /** keywordText of the document name, then of each chunk's section path and content. */
  keywordTexts: string[];
  /** Per vector table written to (the commit's model's, and each of `alsoVectors`'). */
  vectors: Map<string, { rowids: number[]; vectors: Float32Array[] }>;
}
/**
 * A slice's target duration. FTS5 tokenizes inside the insert and the in-process keyword copy
 * tokenizes again: a chunk costs 0.1-0.5 ms, so each slice is sized from the last one's pace.
 */
const SLICE_MS = 12;
/** Chunks in the first slice, and the bounds of later ones. */
const FIRST_SLICE = 32;
const SLICE_BOUNDS = { min: 8, max: 512 };
/** A run of at most this many chunks commits in one transaction (commitSmall). */
export const SMALL_COMMIT = 32;
/** Chunks purged per slice: FTS5 reads a row's text back to delete it, deletes cost more. */
const PURGE_SLICE = 64;

/** Between slices (event-loop-turns.ts): requests waiting for a turn start first. */
const yieldToLoop = sliceTurn;

/**
 * The condition (chunks `c`, documents `d`) of rows to purge: a hidden document's, or neither
 * current nor of the run in progress.
 */
const PURGEABLE = `(d.status = 'deleting' or (c.run_token is not d.chunk_token
  and (d.index_token is null or c.run_token is not d.index_token)))`;

/** The in-process copies' key of a run's staged rows. */
const stagingKey = (token: string) => `${STAGED_PREFIX}${token}`;

interface StagedDocument {
  name: string;
  project_id: string | null;
  project_key: string;
}

export class SqliteChunkWrites {
  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly statement: Statements,
    private readonly tables: VectorTables,
    private readonly indexes: InProcessCopies,
  ) {}

  /** Records a change of the document's searchable chunks for other processes' copies. */
  private recordChange(documentId: string): void {
    this.statement(
      'update knowledge_search_generation set generation = generation + 1 where id = 1',
    ).run();
    this.statement(
      `insert into knowledge_search_changes (document_id, generation)
       select ?, generation from knowledge_search_generation where id = 1
       on conflict (document_id) do update set generation = excluded.generation`,
    ).run(documentId);
  }

  private owner(commit: IndexCommit): StagedDocument | undefined {
    return this.statement(
      `select name, project_id, project_key from knowledge_documents
       where id = ? and index_token = ? and status <> 'deleting'`,
    ).get(commit.documentId, commit.indexToken) as StagedDocument | undefined;
  }

  async commit(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    checkAlsoVectors(commit);
    const key = stagingKey(commit.indexToken);
    if (commit.chunks.length <= SMALL_COMMIT) {
      let small: ReturnType<SqliteChunkWrites['commitSmall']>;
      try {
        small = this.commitSmall(commit);
      } catch (error) {
        this.tables.forget(); // a vector table created in the rolled-back transaction is gone
        throw error;
      }
      if (small === 'discarded') return small;
      if (small !== 'leftovers') {
        await this.purge(commit.documentId, { run: small.replaced });
        return 'committed';
      }
    } else if (this.owner(commit) === undefined) return 'discarded';
    // Leftovers of a crashed or retried run of this document (this run's token included).
    await this.purge(commit.documentId, { leftoverOf: commit.indexToken });
    try {
      let size = FIRST_SLICE;
      for (let from = 0; from < commit.chunks.length;) {
        const started = performance.now();
        if (!this.stageSlice(commit, from, size, key)) return await this.discard(commit, key);
        from += size;
        const pace = Math.max(performance.now() - started, 0.1) / size;
        size = Math.min(SLICE_BOUNDS.max, Math.max(SLICE_BOUNDS.min, Math.round(SLICE_MS / pace)));
        await yieldToLoop();
      }
      const replaced = this.flip(commit, key);
      if (replaced === false) return await this.discard(commit, key);
      await this.purge(commit.documentId, { run: replaced });
      return 'committed';
    } catch (error) {
      this.indexes.dropStaged(key);
      // A vector table created inside a rolled-back transaction is gone again.
      this.tables.forget();
      throw error;
    }
  }

  private async discard(commit: IndexCommit, key: string): Promise<'discarded'> {
    this.indexes.dropStaged(key);
    await this.purge(commit.documentId, { leftoverOf: commit.indexToken });
    return 'discarded';
  }

  /**
   * A run of at most SMALL_COMMIT chunks in one short transaction: written and made current at once,
   * the copies updated in the same step (no staging: the slices and the flip would cost three
   * transactions for what fits in one). `leftovers` when a crashed or earlier attempt left rows
   * to purge first: the sliced path does that.
   */
  private commitSmall(
    commit: IndexCommit,
  ): { replaced: string | null } | 'discarded' | 'leftovers' {
    const done = this.db
      .transaction(() => {
        const doc = this.owner(commit);
        if (doc === undefined) return 'discarded' as const;
        const leftover = this.statement(
          `select 1 from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
           where c.document_id = ? and (${PURGEABLE} or c.run_token = ?) limit 1`,
        ).get(commit.documentId, commit.indexToken);
        if (leftover !== undefined) return 'leftovers' as const;
        const before = this.indexes.generation();
        const rowids = this.insert(commit, 0, commit.chunks, doc);
        const replaced = this.makeCurrent(commit);
        const added = this.added(commit.chunks, doc, rowids, commit.documentId);
        return { before, after: this.indexes.generation(), replaced, added };
      })
      .immediate();
    if (typeof done === 'string') return done;
    this.indexes.applyWrite(done.before, done.after, commit.documentId, done.added);
    return { replaced: done.replaced };
  }

  /** One slice in one transaction; false when the run no longer owns the document. */
  private stageSlice(commit: IndexCommit, from: number, size: number, key: string): boolean {
    const slice = commit.chunks.slice(from, from + size);
    const written = this.db
      .transaction(() => {
        const doc = this.owner(commit);
        if (doc === undefined) return null;
        const before = this.indexes.generation();
        const rowids = this.insert(commit, from, slice, doc);
        return { before, after: this.indexes.generation(), doc, rowids };
      })
      .immediate();
    if (written === null) return false;
    const { doc, rowids } = written;
    const added = this.added(slice, doc, rowids, key);
    this.indexes.stage(written.before, written.after, key, added, from === 0);
    return true;
  }

  /** The rows the in-process copies add for `chunks`, under `documentId` (or a staging key). */
  private added(
    chunks: NewChunk[],
    doc: StagedDocument,
    rowids: Rowids,
    documentId: string,
  ): AddedRows {
    const vectors = new Map(
      [...rowids.vectors].map(([table, written]) => [
        table,
        chunks.map((c, i) => ({
          rowid: written.rowids[i],
          chunkId: c.id,
          documentId,
          projectKey: doc.project_key,
          vector: written.vectors[i] ?? c.vector,
        })),
      ]),
    );
    return {
      vectors,
      keyword: () => {
        const [name = NONE, ...texts] = sharedLexer().tokenize(rowids.keywordTexts);
        return chunks.map((c, i) => ({
          rowid: rowids.keyword[i] ?? 0,
          chunkId: c.id,
          documentId,
          projectId: doc.project_id,
          columns: [name, texts[2 * i] ?? NONE, texts[2 * i + 1] ?? NONE],
        }));
      },
    };
  }

  /**
   * Inserts the chunks (the commit's from `from` on) under the run's token, with their vectors of
   * the commit's model and of `alsoVectors`; returns the rows' rowids.
   */
  private insert(
    commit: IndexCommit,
    from: number,
    chunks: NewChunk[],
    doc: StagedDocument,
  ): Rowids {
    const table = this.tables.ensure(commit.model, commit.dimensions);
    const now = new Date().toISOString();
    const insertChunk = this.statement(
      `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content, token_estimate,
         metadata, embedding_model, embedding_dimensions, content_hash, created_at, fts_rowid, run_token,
         page_end)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertFts = this.statement(
      'insert into knowledge_chunks_fts (chunk_id, document_id, document_name, section_path, content) values (?, ?, ?, ?, ?)',
    );
    const insertVector = (into: string) =>
      this.statement(
        `insert into ${into} (chunk_id, embedding, document_id, project_key) values (?, ?, ?, ?)`,
      );
    const own = { rowids: [] as number[], vectors: chunks.map((c) => c.vector) };
    // The keyword columns hold the text keyword-text.ts makes (visible words, CJK and Thai runs
    // cut into words, identifier tokens); the chunk row keeps the text as it is.
    const ftsName = keywordText(doc.name);
    const rowids: Rowids = {
      keyword: [],
      keywordTexts: [ftsName],
      vectors: new Map([[table, own]]),
    };
    for (const c of chunks) {
      const section = keywordText(c.sectionPath, 'path');
      const content = keywordText(c.content);
      rowids.keywordTexts.push(section, content);
      // The keyword row first: the chunk records its rowid (the FTS table's columns are not indexed).
      const ftsRowid = Number(
        insertFts.run(c.id, commit.documentId, ftsName, section, content).lastInsertRowid,
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
        commit.indexToken,
        c.pageEnd ?? c.page,
      );
      rowids.keyword.push(ftsRowid);
      const vector = insertVector(table).run(c.id, c.vector, commit.documentId, doc.project_key);
      own.rowids.push(Number(vector.lastInsertRowid));
    }
    for (const also of commit.alsoVectors ?? []) {
      const into = this.tables.ensure(also.model, also.dimensions);
      const vectors = also.vectors.slice(from, from + chunks.length);
      const insert = insertVector(into);
      const written = chunks.map((c, i) =>
        Number(insert.run(c.id, vectors[i], commit.documentId, doc.project_key).lastInsertRowid),
      );
      rowids.vectors.set(into, { rowids: written, vectors });
    }
    return rowids;
  }

  /**
   * The flip: the staged chunks become the document's current ones and the document `indexed`,
   * in one short transaction. Returns the token of the replaced chunks, or false when the run
   * no longer owns the document.
   */
  private flip(commit: IndexCommit, key: string): string | null | false {
    const done = this.db
      .transaction(() => {
        if (this.owner(commit) === undefined) return null;
        const staged = this.statement(
          'select count(*) from knowledge_chunks where document_id = ? and run_token = ?',
        )
          .pluck()
          .get(commit.documentId, commit.indexToken) as number;
        if (staged !== commit.chunks.length) {
          throw new Error(`${commit.chunks.length - staged} staged chunks are missing`);
        }
        const before = this.indexes.generation();
        const replaced = this.makeCurrent(commit);
        return { before, after: this.indexes.generation(), replaced };
      })
      .immediate();
    if (done === null) return false;
    this.indexes.flip(done.before, done.after, commit.documentId, key);
    return done.replaced;
  }

  /**
   * Inside a transaction: the run's rows become the document's current chunks and the document
   * `indexed`. Returns the token of the chunks it replaced.
   */
  private makeCurrent(commit: IndexCommit): string | null {
    const replaced = this.statement('select chunk_token from knowledge_documents where id = ?')
      .pluck()
      .get(commit.documentId) as string | null;
    const update = markIndexedSql(commit, new Date().toISOString(), () => '?');
    this.statement(update.sql).run(...update.params);
    this.statement('update knowledge_documents set chunk_token = ? where id = ?').run(
      commit.indexToken,
      commit.documentId,
    );
    this.recordChange(commit.documentId);
    return replaced;
  }

  /** Hides the document in one short transaction; false if there is no such (visible) one. */
  hide(documentId: string): boolean {
    let before = 0;
    let after = 0;
    const hidden = this.db
      .transaction(() => {
        before = this.indexes.generation();
        const changed = this.statement(
          `update knowledge_documents
           set status = 'deleting', index_token = null, checksum = 'deleting:' || id, updated_at = ?
           where id = ? and status <> 'deleting'`,
        ).run(new Date().toISOString(), documentId).changes;
        if (changed === 0) return false;
        this.recordChange(documentId);
        after = this.indexes.generation();
        return true;
      })
      .immediate();
    if (hidden) this.indexes.applyWrite(before, after, documentId);
    return hidden;
  }

  /**
   * Purges rows of the document in slices: of `run` (a replaced version's token), or every
   * purgeable one (a hidden document's, a crashed run's, `leftoverOf` a run that starts again).
   * Then deletes the row of a hidden document. `stop` ends it early (shutdown).
   */
  async purge(
    documentId: string,
    which: { run: string | null } | { leftoverOf: string | null } | 'hidden',
    stop: () => boolean = () => false,
  ): Promise<void> {
    let condition: string;
    let params: unknown[];
    if (which === 'hidden') {
      condition = `d.status = 'deleting'`;
      params = [documentId];
    } else if ('run' in which) {
      condition = `c.run_token is ? and c.run_token is not d.chunk_token`;
      params = [documentId, which.run];
    } else {
      condition = `(${PURGEABLE} or (c.run_token = ? and c.run_token is not d.chunk_token))`;
      params = [documentId, which.leftoverOf];
    }
    const select = `select c.id, c.fts_rowid, c.embedding_model, c.embedding_dimensions
      from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
      where c.document_id = ? and ${condition} limit ${PURGE_SLICE}`;
    while (!stop()) {
      if (this.purgeSlice(select, params) === 0) break;
      await yieldToLoop();
    }
    if (which === 'hidden' && !stop()) {
      this.statement(`delete from knowledge_documents where id = ? and status = 'deleting'`).run(
        documentId,
      );
    }
  }

  /** Deletes up to PURGE_SLICE chunks the query finds, with their index rows; returns how many. */
  private purgeSlice(select: string, params: unknown[]): number {
    // Most purges find nothing (a document's first index): no write transaction for them.
    if (
      this.statement(select)
        .raw()
        .get(...params) === undefined
    )
      return 0;
    let before = 0;
    let after = 0;
    const count = this.db
      .transaction(() => {
        before = this.indexes.generation();
        const rows = this.statement(select)
          .raw()
          .all(...params) as [string, number | null, string, number][];
        if (rows.length === 0) return 0;
        const byTable = new Map<string, string[]>();
        for (const [id, , model, dimensions] of rows) {
          const table = this.tables.find(model, dimensions);
          if (table === null) continue;
          const ids = byTable.get(table) ?? [];
          ids.push(id);
          byTable.set(table, ids);
        }
        for (const [table, ids] of byTable) {
          this.statement(
            `delete from ${table} where chunk_id in (select value from json_each(?))`,
          ).run(JSON.stringify(ids));
        }
        const rowids = rows.flatMap(([, rowid]) => (rowid === null ? [] : [rowid]));
        this.statement(
          'delete from knowledge_chunks_fts where rowid in (select value from json_each(?))',
        ).run(JSON.stringify(rowids));
        this.statement(
          'delete from knowledge_chunks where id in (select value from json_each(?))',
        ).run(JSON.stringify(rows.map(([id]) => id)));
        after = this.indexes.generation();
        return rows.length;
      })
      .immediate();
    // The copies never held these rows (or dropped them at the flip or the hiding).
    if (count > 0) this.indexes.skip(before, after);
    return count;
  }

  /** Documents with rows to purge: hidden ones, and ones with a crashed run's or old version's. */
  purgeable(): { hidden: string[]; leftovers: string[] } {
    return purgeableDocuments(this.statement);
  }
}
