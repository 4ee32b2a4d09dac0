/**
 * How the in-process copies (in-process-copies.ts) are loaded at start-up without holding the
 * event loop, and kept on disk so the next start does not rebuild them:
 *
 * - load: per copy, its snapshot (snapshots.ts) when one may be used, read in one
 *   sequential read off the event loop; otherwise built from the tables in small batches with
 *   the event loop free in between, each batch in its own read (the rows of a document that
 *   changes meanwhile are reloaded after, from the change log, as for a copy that fell behind
 *   another process's writes). Rows written after the build started are left to that catch-up.
 * - snapshots: written in the background a while after the copies changed
 *   (SEARCH_SNAPSHOT_DELAY_MS), from the live arrays; a write the copies change under is abandoned
 *   and tried again later.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sliceTurn } from '../../../../event-loop-turns.js';
import { sharedLexer } from '../keyword/fts5-lexer.js';
import {
  graphOfSnapshot,
  keywordFromSnapshot,
  keywordSections,
  SnapshotFiles,
  vectorFromSnapshot,
  vectorSections,
  type GraphMeta,
  type SnapshotOptions,
} from './snapshots.js';
import { KeywordIndex } from '../keyword/keyword-index.js';
import {
  CURRENT,
  keywordRows,
  STAGED_PREFIX,
  type KeywordText,
  type Loaded,
  type InProcessCopies,
} from './in-process-copies.js';
import { SnapshotError, type Snapshot } from './snapshot-file.js';
import { VectorIndex } from '../vector/vector-index.js';
import { asFloat32 } from '../vector/vector-tables.js';

/** Rows per batch of a build from the tables (tokenizing a chunk costs 0.1–0.5 ms). */
const BUILD_BATCH = 256;
/** Batches run back to back for this long, then the event loop is yielded (sliceTurn). */
const BUILD_SLICE_MS = 25;
/**
 * A vector graph is built in slices of this long (vector/ann-graph.ts), each followed by as long
 * a pause: a build back to back made every turn of a query wait a slice (hybrid p50 120 ms at
 * 100k).
 */
const GRAPH_SLICE_MS = 10;

/**
 * The keyword lists are readied for searches (keyword/keyword-index.ts `prepareLists`) in slices
 * this long: it runs while the first searches after a start come in.
 */
const PREPARE_SLICE_MS = 5;

/** A function that yields the event loop once `ms` passed since it last did. */
function slicer(ms = BUILD_SLICE_MS): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < ms) return;
    await sliceTurn();
    since = performance.now();
  };
}

type Copy = Loaded<KeywordIndex> | Loaded<VectorIndex>;

/** What a copy's snapshot reflects: its generation and the rows its graph holds. */
function savedKey(copy: { index: KeywordIndex | VectorIndex; generation: number }): string {
  const graph = copy.index instanceof VectorIndex ? copy.index.graph : null;
  return `${copy.generation}/${graph?.covered ?? 0}`;
}

/** Whether a process of this id runs (a snapshot's temporary file is named after its writer). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class CopiesLoader {
  private readonly files: SnapshotFiles | null;
  /** The generation (and graph rows) each copy's last snapshot reflects. */
  private readonly saved = new WeakMap<object, string>();
  /** The graph file each vector copy's last snapshot names. */
  private readonly graphFiles = new Map<string, string>();
  /** The background build of the vector copies' graphs, while it runs. */
  private building: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly indexes: InProcessCopies,
    options: SnapshotOptions | null,
  ) {
    this.files = options === null ? null : new SnapshotFiles(options);
    indexes.onChange = () => {
      this.changed();
    };
  }

  private log(message: string, fields?: Record<string, unknown>): void {
    this.files?.options.log?.(message, fields);
  }

  /** Forgets the copy of a vector table that is dropped, and its snapshot files. */
  forgetVector(table: string): void {
    this.indexes.dropVector(table);
    this.graphFiles.delete(`vector-${table}`);
    this.files?.remove(`vector-${table}`);
  }

  /** Loads the keyword copy and the vector copies of `tables` that are not loaded yet. */
  async load(tables: readonly { table: string; dimensions: number }[]): Promise<void> {
    this.removeStaleTemporaries();
    const generation = this.indexes.generation();
    let built = false;
    for (const { table, dimensions } of tables) {
      if (this.indexes.vectors.has(table)) continue;
      let copy = await this.restore(
        `vector-${table}`,
        generation,
        (s) =>
          vectorFromSnapshot(s, dimensions, this.indexes.source(table), this.indexes.vectorOptions),
        (index, s) => this.restoreGraph(`vector-${table}`, index, s),
      );
      if (copy === undefined) {
        copy = await this.buildVectors(table, dimensions);
        built = true;
      }
      // Loaded meanwhile (a search loaded it first): this copy is not used.
      if (this.indexes.vectors.has(table)) copy.index.close();
      else this.indexes.vectors.set(table, copy);
    }
    if (this.indexes.keyword === undefined) {
      let copy = await this.restore('keyword', generation, (s) =>
        keywordFromSnapshot(s, sharedLexer()),
      );
      if (copy === undefined) {
        copy = await this.buildKeyword();
        built = true;
      }
      this.indexes.keyword ??= copy;
    }
    // A copy built from the tables is saved at once: the next start should not build it again.
    this.changed(built ? 0 : undefined);
    this.prepareLists();
    this.findRowids();
  }

  /**
   * In the background, in short slices: the keyword lists' live counts and skip entries a
   * snapshot lacked (one of an earlier build, or the first start after a build from the tables:
   * ~1.5–3 s at 1M chunks; a search made them for its words' lists at its first look), then a
   * snapshot that has them (the next start makes none).
   */
  private prepareLists(): void {
    const copy = this.indexes.keyword;
    if (copy === undefined) return;
    void copy.index.prepareLists(slicer(PREPARE_SLICE_MS)).then((readied) => {
      if (readied === 0 || this.closed) return;
      this.saved.delete(copy);
      this.changed();
    });
  }

  /**
   * In the background: the vector table rowids a snapshot of an earlier build lacked (its rows are
   * read by chunk id until then), in slices, then a snapshot that has them.
   */
  private findRowids(): void {
    const copies = [...this.indexes.vectors].filter(([, c]) => c.index.rowidsUnknown());
    if (copies.length === 0) return;
    void (async () => {
      for (const [table, copy] of copies) {
        const select = this.indexes.statement(
          `select rowid, chunk_id from ${table} where rowid > ? order by rowid limit ?`,
        );
        const slice = slicer();
        const batch = BUILD_BATCH * 32;
        let learned = 0;
        for (let after = Number.MIN_SAFE_INTEGER; ;) {
          // Dropped or replaced meanwhile (a reload): nothing to finish.
          if (this.closed || this.indexes.vectors.get(table) !== copy) return;
          const rows = select.raw().all(after, batch) as [number, string][];
          for (const [rowid, chunkId] of rows) if (copy.index.learnRowid(chunkId, rowid)) learned++;
          if (rows.length < batch) break;
          after = rows[rows.length - 1]?.[0] ?? after;
          await slice();
        }
        if (learned > 0) {
          this.saved.delete(copy);
          this.changed();
        }
      }
    })().catch((error: unknown) => {
      this.log('vector rowids not found', {
        why: error instanceof Error ? error.message : String(error),
      });
    });
  }

  /** Gives a restored vector copy its snapshot's graph, when the graph file checks out. */
  private async restoreGraph(kind: string, index: VectorIndex, snapshot: Snapshot): Promise<void> {
    try {
      const graph = graphOfSnapshot(snapshot);
      if (graph !== null && this.files !== null) {
        await index.restoreGraph(await this.files.checkedGraph(graph.meta), graph.state);
        this.graphFiles.set(kind, graph.meta.file);
      }
    } catch (error) {
      // Corrupt, missing or unreadable: never trusted, built again from the rows.
      this.log('search index graph not used', {
        kind,
        why: error instanceof Error ? error.message : String(error),
      });
    }
    // None (or not used): built from the rows in the background when the index is large enough.
    index.startGraph();
  }

  /** Builds the vector copies' graphs in slices, then saves them (one builder at a time). */
  private buildGraphs(): void {
    if (this.building !== undefined || this.closed) return;
    const pending = () => [...this.indexes.vectors.values()].filter((c) => c.index.graphPending);
    if (pending().length === 0) return;
    const started = performance.now();
    this.building = (async () => {
      try {
        for (let copies = pending(); copies.length > 0 && !this.closed; copies = pending()) {
          for (const { index } of copies) index.buildGraph(GRAPH_SLICE_MS / copies.length);
          await new Promise((resolve) => setTimeout(resolve, GRAPH_SLICE_MS));
        }
      } finally {
        this.building = undefined;
      }
      this.log('search index graphs built', { ms: Math.round(performance.now() - started) });
      this.changed();
    })();
  }

  /** Builds what the vector copies' graphs lack now; resolves when they hold every row. */
  async buildGraphsNow(): Promise<void> {
    this.buildGraphs();
    while (this.building !== undefined) {
      await this.building;
      this.buildGraphs();
    }
  }

  /** A copy from its snapshot, or undefined (none, or one that may not be used: logged). */
  private async restore<T extends KeywordIndex | VectorIndex>(
    kind: string,
    generation: number,
    decode: (snapshot: Snapshot) => T,
    attach?: (index: T, snapshot: Snapshot) => Promise<void>,
  ): Promise<Loaded<T> | undefined> {
    if (this.files === null) return undefined;
    const started = performance.now();
    const read = await this.files.read(kind, generation);
    if ('why' in read) {
      if (read.why !== 'none') this.log('search index snapshot not used', { kind, why: read.why });
      return undefined;
    }
    let index: T;
    try {
      index = decode(read.snapshot);
    } catch (error) {
      if (!(error instanceof SnapshotError)) throw error;
      this.log('search index snapshot not used', { kind, why: error.message });
      return undefined;
    }
    await attach?.(index, read.snapshot);
    // A run's staged rows: the run ended with the process that wrote the snapshot.
    for (const id of index.documentIdList())
      if (id.startsWith(STAGED_PREFIX)) index.deleteDocument(id);
    const copy = { index, generation: read.generation };
    this.saved.set(copy, savedKey(copy));
    this.log('search index snapshot loaded', {
      kind,
      rows: index.size,
      behind: generation - read.generation,
      ms: Math.round(performance.now() - started),
    });
    return copy;
  }

  private async buildKeyword(): Promise<Loaded<KeywordIndex>> {
    const generation = this.indexes.generation();
    const max = this.maxRowid('knowledge_chunks_fts');
    const index = new KeywordIndex();
    // FTS5's own table does not seek to a rowid in a full scan (each batch would read from the
    // start): its content table (FTS5's documented shadow table, columns c0… in declared order:
    // chunk_id, document_id, document_name, section_path, content) is a plain rowid table.
    const select = this.indexes.statement(
      `select f.id, c.id, c.document_id, d.project_id, f.c2, f.c3, f.c4
       from knowledge_chunks_fts_content f cross join knowledge_chunks c on c.id = f.c0
       join knowledge_documents d on d.id = c.document_id
       where f.id > ? and f.id <= ? and c.fts_rowid = f.id and ${CURRENT}
       order by f.id limit ?`,
    );
    const slice = slicer();
    for (let after = 0; ;) {
      const rows = select.raw().all(after, max, BUILD_BATCH) as KeywordText[];
      if (rows.length > 0) index.add(keywordRows(rows));
      if (rows.length < BUILD_BATCH) break;
      after = rows[rows.length - 1]?.[0] ?? max;
      await slice();
    }
    index.trim();
    return { index, generation };
  }

  private async buildVectors(table: string, dims: number): Promise<Loaded<VectorIndex>> {
    const generation = this.indexes.generation();
    const max = this.maxRowid(table);
    const index = new VectorIndex(dims, this.indexes.source(table), this.indexes.vectorOptions);
    const select = this.indexes.statement(
      `select v.rowid, v.chunk_id, v.embedding, v.document_id, v.project_key
       from ${table} v cross join knowledge_chunks c on c.id = v.chunk_id
       join knowledge_documents d on d.id = c.document_id
       where v.rowid > ? and v.rowid <= ? and ${CURRENT} order by v.rowid limit ?`,
    );
    const slice = slicer();
    for (let after = 0; ;) {
      const rows = select.raw().all(after, max, BUILD_BATCH * 8) as [
        number,
        string,
        Buffer,
        string,
        string,
      ][];
      index.add(
        rows.map(([rowid, chunkId, embedding, documentId, projectKey]) => ({
          rowid,
          chunkId,
          documentId,
          projectKey,
          vector: asFloat32(embedding),
        })),
      );
      if (rows.length < BUILD_BATCH * 8) break;
      after = rows[rows.length - 1]?.[0] ?? max;
      await slice();
    }
    return { index, generation };
  }

  private maxRowid(table: string): number {
    return (this.indexes.statement(`select max(rowid) from ${table}`).pluck().get() ?? 0) as number;
  }

  // --- snapshots ------------------------------------------------------------------------------

  /** The copies changed: a snapshot is written after the delay (at most one pending). */
  changed(delayMs = this.files?.options.delayMs ?? 0): void {
    this.buildGraphs();
    if (this.files === null || this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
    this.timer.unref();
  }

  /** Writes the snapshots due now, after any being written (one write at a time). */
  flush(): Promise<void> {
    const next = (this.writing ?? Promise.resolve()).then(() => this.saveAll());
    this.writing = next;
    void next.finally(() => {
      if (this.writing === next) this.writing = undefined;
    });
    return next;
  }

  /** Writes a snapshot of every copy that changed since its last one (errors are logged). */
  private async saveAll(): Promise<void> {
    const files = this.files;
    if (files === null) return;
    let retry = false;
    const copies: [string, Copy][] = [];
    if (this.indexes.keyword !== undefined) copies.push(['keyword', this.indexes.keyword]);
    for (const [table, copy] of this.indexes.vectors) copies.push([`vector-${table}`, copy]);
    for (const [kind, copy] of copies) {
      if (this.closed) return;
      const generation = copy.generation;
      const key = savedKey(copy);
      if (this.saved.get(copy) === key) continue;
      const { index } = copy;
      const mutations = index.mutations;
      const unchanged = () =>
        !this.closed && index.mutations === mutations && copy.generation === generation;
      const started = performance.now();
      try {
        let written: boolean;
        if (index instanceof KeywordIndex) {
          const state = index.state();
          const meta = { generation, count: state.count, tokens: state.tokens };
          written = await files.write(kind, meta, keywordSections(state, sharedLexer()), unchanged);
        } else {
          const state = index.state();
          // Taken now, with `state`: the awaits below let changes in (which void this snapshot).
          const sections = vectorSections(state);
          let graph: GraphMeta | undefined;
          // A graph being built is saved once complete (its rows' snapshot is written meanwhile).
          if (state.graph !== undefined && !index.graphPending) {
            const { nextKey, covered } = state.graph;
            // Sent now, in this turn: the worker saves every change sent before, which is what
            // `state` says (covered, keys); a change meanwhile voids this snapshot (`unchanged`).
            const file = await files.writeGraph(kind, (path) => index.graph?.save(path));
            graph = { ...file, nextKey, covered };
          }
          const meta = { generation, count: state.count, dims: index.dims, graph };
          written = await files.write(kind, meta, sections, unchanged);
          if (written) this.graphFiles.set(kind, graph?.file ?? '');
          files.removeGraphs(kind, this.graphFiles.get(kind) ?? null);
        }
        if (written) {
          this.saved.set(copy, key);
          this.log('search index snapshot written', {
            kind,
            ms: Math.round(performance.now() - started),
          });
        } else retry = true;
      } catch (error) {
        this.log('search index snapshot not written', { kind, error: String(error) });
      }
    }
    if (retry) this.changed();
  }

  /** Stops writing snapshots; waits for one being written. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    await this.building?.catch(() => undefined);
    for (const { index } of this.indexes.vectors.values()) index.close();
  }

  /** Temporary files of writers that stopped mid-write. */
  private removeStaleTemporaries(): void {
    if (this.files === null) return;
    let names: string[];
    try {
      names = readdirSync(this.files.dir);
    } catch {
      return;
    }
    for (const name of names) {
      const pid = /\.(\d+)\.\d+\.tmp$/.exec(name)?.[1];
      if (pid !== undefined && !running(Number(pid))) {
        rmSync(join(this.files.dir, name), { force: true });
      }
    }
  }
}
