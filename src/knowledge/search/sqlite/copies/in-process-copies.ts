/**
 * The in-process copies of SQLite's search tables, and how they stay current: an inverted index
 * of the FTS5 table (keyword-index.ts) and a vector index per vector table (vector-index.ts).
 *
 * The tables stay the source of truth. A copy is loaded on first use (or at start-up, `warm`)
 * and records the chunk generation it reflects: a counter that triggers on knowledge_chunks bump
 * on every change (migration 0006), next to a per-document log of the generation of its last
 * change (0007). The store's writes (sqlite-chunk-writes.ts) apply its own commits and deletes to
 * the copies directly; when the counter shows a write this process did not apply (another
 * process, e.g. `aps reindex`), the next search first reloads just the documents changed since
 * the copy's generation.
 */
import { sharedLexer } from '../keyword/fts5-lexer.js';
import { KeywordIndex, type KeywordRow } from '../keyword/keyword-index.js';
import type { Statements } from '../statements.js';
import {
  VectorIndex,
  type IndexRow,
  type VectorIndexOptions,
  type VectorSource,
} from '../vector/vector-index.js';
import { asFloat32, tableVectors } from '../vector/vector-tables.js';

/** An in-process copy of an index and the chunk generation it reflects. */
export interface Loaded<T> {
  index: T;
  generation: number;
}

/** A keyword row as read from the FTS5 table or written to it, before tokenizing. */
export type KeywordText = [
  rowid: number,
  chunkId: string,
  documentId: string,
  projectId: string | null,
  name: string,
  section: string,
  content: string,
];

/** What a committed write added, to apply to the loaded copies. */
export interface AddedRows {
  /** The rows of each vector table written to (the commit's model's, and `alsoVectors`'), by table. */
  vectors: ReadonlyMap<string, IndexRow[]>;
  /** The keyword rows, made only if the keyword copy is loaded and current. */
  keyword: () => KeywordRow[];
}

/** Rows read per batch when a copy is loaded. */
const LOAD_BATCH = 2048;

/**
 * The document ids under which a run's staged rows are kept (sqlite-chunk-writes.ts): no search
 * returns them, and a copy restored from a snapshot drops them (their run ended with the process).
 */
export const STAGED_PREFIX = '\u0000staged:';

const NONE = new Int32Array(0);

/** Tokenizes FTS5 rows into keyword index rows, in one lexer batch. */
export function keywordRows(texts: readonly KeywordText[]): KeywordRow[] {
  const ids = sharedLexer().tokenize(texts.flatMap((t) => [t[4], t[5], t[6]]));
  return texts.map(([rowid, chunkId, documentId, projectId], i) => ({
    rowid,
    chunkId,
    documentId,
    projectId,
    columns: [ids[3 * i] ?? NONE, ids[3 * i + 1] ?? NONE, ids[3 * i + 2] ?? NONE],
  }));
}

/** The rows in batches of LOAD_BATCH. */
function* batches<T>(rows: Iterable<T>): Generator<T[]> {
  let batch: T[] = [];
  for (const row of rows) {
    batch.push(row);
    if (batch.length === LOAD_BATCH) {
      yield batch;
      batch = [];
    }
  }
  yield batch;
}

/**
 * The condition (chunks `c`, documents `d`) of a document's current chunks (migration 0011): not
 * a run's staged ones, not a replaced version's, not a hidden document's.
 */
export const CURRENT = `c.run_token is d.chunk_token and d.status <> 'deleting'`;

export const KEYWORD_SELECT = `select c.fts_rowid, c.id, c.document_id, d.project_id, f.document_name,
    f.section_path, f.content
  from knowledge_chunks c join knowledge_chunks_fts f on f.rowid = c.fts_rowid
  join knowledge_documents d on d.id = c.document_id
  where ${CURRENT}`;

export class InProcessCopies {
  /** Vector copies by table name. */
  readonly vectors = new Map<string, Loaded<VectorIndex>>();
  keyword: Loaded<KeywordIndex> | undefined;
  /** By staging key: the copies that hold every slice staged so far. */
  private readonly staged = new Map<string, Set<object>>();
  /** Called when a copy changed (copies-loader.ts writes snapshots after a while). */
  onChange: () => void = () => undefined;

  constructor(
    readonly statement: Statements,
    /** Options of every vector copy (the size from which it keeps a graph). */
    readonly vectorOptions: VectorIndexOptions = {},
  ) {}

  /** The chunk generation (migration 0006): bumped by every change to knowledge_chunks. */
  generation(): number {
    return this.statement('select generation from knowledge_search_generation where id = 1')
      .pluck()
      .get() as number;
  }

  /** Whether the keyword copy is loaded: a commit then tokenizes its chunks ahead. */
  get keywordLoaded(): boolean {
    return this.keyword !== undefined;
  }

  /** The documents whose chunks changed after `generation` (migration 0007's change log). */
  changedSince(generation: number): string[] {
    return this.statement(
      'select document_id from knowledge_search_changes where generation > ? order by document_id',
    )
      .pluck()
      .all(generation) as string[];
  }

  /**
   * A copy current as of this transaction's snapshot: loaded on first use; when the chunks
   * changed in a way this store did not apply, the changed documents are deleted from it and
   * added again from the tables.
   */
  private current<T extends { deleteDocument(documentId: string): void }>(
    loaded: Loaded<T> | undefined,
    load: () => T,
    addDocuments: (index: T, documentIds: string[]) => void,
  ): Loaded<T> {
    const generation = this.generation();
    if (loaded === undefined) return { index: load(), generation };
    if (loaded.generation === generation) return loaded;
    const changed = this.changedSince(loaded.generation);
    for (const documentId of changed) loaded.index.deleteDocument(documentId);
    addDocuments(loaded.index, changed);
    loaded.generation = generation;
    this.onChange();
    return loaded;
  }

  /** The vector copy of a table, current as of this transaction's snapshot. */
  vectorIndex(table: string, dimensions: number): VectorIndex {
    const loaded = this.current(
      this.vectors.get(table),
      () => {
        const index = new VectorIndex(dimensions, this.source(table), this.vectorOptions);
        this.addVectors(
          index,
          `select v.rowid, v.chunk_id, v.embedding, v.document_id, v.project_key
           from ${table} v join knowledge_chunks c on c.id = v.chunk_id
           join knowledge_documents d on d.id = c.document_id where ${CURRENT}`,
          [],
        );
        return index;
      },
      (index, documentIds) => {
        this.addVectors(
          index,
          `select v.rowid, v.chunk_id, v.embedding, v.document_id, v.project_key
           from knowledge_chunks c join ${table} v on v.chunk_id = c.id
           join knowledge_documents d on d.id = c.document_id
           where c.document_id in (select value from json_each(?)) and ${CURRENT}`,
          [JSON.stringify(documentIds)],
        );
      },
    );
    this.vectors.set(table, loaded);
    return loaded.index;
  }

  /** The exact vectors of a vector copy: its table, read by rowid or chunk id. */
  source(table: string): VectorSource {
    return tableVectors(this.statement, table);
  }

  /**
   * Adds the rows a query gives (rowid, chunk id, embedding, document id, project key) to a copy.
   */
  private addVectors(index: VectorIndex, sql: string, params: unknown[]): void {
    const rows = this.statement(sql)
      .raw()
      .iterate(...params) as IterableIterator<[number, string, Buffer, string, string]>;
    for (const batch of batches(rows)) {
      index.add(
        batch.map(([rowid, chunkId, embedding, documentId, projectKey]) => ({
          rowid,
          chunkId,
          documentId,
          projectKey,
          vector: asFloat32(embedding),
        })),
      );
    }
  }

  /** The keyword copy, current as of this transaction's snapshot. */
  keywordIndex(): KeywordIndex {
    this.keyword = this.current(
      this.keyword,
      () => {
        const index = new KeywordIndex();
        this.addKeywordRows(index, `${KEYWORD_SELECT} order by c.fts_rowid`, []);
        index.trim();
        return index;
      },
      (index, documentIds) => {
        // Rows written after the copy's generation have higher rowids than every row it keeps.
        this.addKeywordRows(
          index,
          `${KEYWORD_SELECT} and c.document_id in (select value from json_each(?))
           order by c.fts_rowid`,
          [JSON.stringify(documentIds)],
        );
      },
    );
    return this.keyword.index;
  }

  /** Tokenizes and adds the keyword rows a query gives (see KeywordText). */
  private addKeywordRows(index: KeywordIndex, sql: string, params: unknown[]): void {
    const rows = this.statement(sql)
      .raw()
      .iterate(...params) as IterableIterator<KeywordText>;
    for (const batch of batches(rows)) index.add(keywordRows(batch));
  }

  /**
   * After a committed write of one document that moved the generation from `before` to
   * `after`: applies the same change to the copies that were current at `before`. The others
   * (behind another process's writes) catch up on their next search, this write included.
   */
  applyWrite(before: number, after: number, documentId: string, added?: AddedRows): void {
    this.onChange();
    const keyword = this.keyword;
    if (keyword?.generation === before) {
      keyword.index.deleteDocument(documentId);
      if (added !== undefined) keyword.index.add(added.keyword());
      keyword.generation = after;
    }
    for (const [table, loaded] of this.vectors) {
      if (loaded.generation !== before) continue;
      loaded.index.deleteDocument(documentId);
      const rows = added?.vectors.get(table);
      if (rows !== undefined) loaded.index.add(rows);
      loaded.generation = after;
    }
  }

  // --- staged writes (sqlite-chunk-writes.ts) ---------------------------------------------------

  /** The copies current at `before` move to `after`: the write changed none of their rows. */
  skip(before: number, after: number): void {
    for (const loaded of this.copies()) if (loaded.generation === before) loaded.generation = after;
  }

  /**
   * A slice of a run's chunks written (generation `before` → `after`): the copies current at
   * `before` that hold every earlier slice add its rows under `key` (a document id no search
   * returns); the others drop the key's rows at the flip and reload the document after it.
   */
  stage(before: number, after: number, key: string, added: AddedRows, first: boolean): void {
    let holders = this.staged.get(key);
    if (holders === undefined || first) this.staged.set(key, (holders = new Set(this.copies())));
    const keyword = this.keyword;
    if (keyword !== undefined) {
      if (keyword.generation === before && holders.has(keyword)) {
        keyword.index.add(added.keyword());
        keyword.generation = after;
      } else holders.delete(keyword);
    }
    for (const [table, loaded] of this.vectors) {
      if (loaded.generation === before && holders.has(loaded)) {
        const rows = added.vectors.get(table);
        if (rows !== undefined) loaded.index.add(rows);
        loaded.generation = after;
      } else holders.delete(loaded);
    }
  }

  /**
   * The run's chunks made current (`before` → `after`): the copies that hold every staged slice
   * swap the document's rows for the key's in one step; the others drop both and catch up on
   * their next search (the flip recorded the document as changed).
   */
  flip(before: number, after: number, documentId: string, key: string): void {
    this.onChange();
    const holders = this.staged.get(key) ?? new Set();
    this.staged.delete(key);
    const keyword = this.keyword;
    const swap = (loaded: Loaded<KeywordIndex> | Loaded<VectorIndex>) => {
      loaded.index.deleteDocument(documentId);
      if (loaded.generation === before && holders.has(loaded)) {
        loaded.index.renameDocument(key, documentId);
        loaded.generation = after;
      } else loaded.index.deleteDocument(key);
    };
    if (keyword !== undefined) swap(keyword);
    for (const loaded of this.vectors.values()) swap(loaded);
  }

  /** A run's staged rows dropped from the copies (the run was discarded or failed). */
  dropStaged(key: string): void {
    this.staged.delete(key);
    this.keyword?.index.deleteDocument(key);
    for (const loaded of this.vectors.values()) loaded.index.deleteDocument(key);
  }

  /**
   * Forgets the vector copy of a table that is dropped (vector/model-vectors.ts): its graph's worker
   * stops, and a snapshot of it being written is abandoned (its mutation count moved).
   */
  dropVector(table: string): boolean {
    const loaded = this.vectors.get(table);
    if (loaded === undefined) return false;
    this.vectors.delete(table);
    loaded.index.mutations++;
    loaded.index.close();
    for (const holders of this.staged.values()) holders.delete(loaded);
    return true;
  }

  copies(): Loaded<KeywordIndex | VectorIndex>[] {
    return [...(this.keyword === undefined ? [] : [this.keyword]), ...this.vectors.values()];
  }
}
