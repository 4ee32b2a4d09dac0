/**
 * Snapshots of the in-process copies (in-process-copies.ts), so that a start reads one file per
 * copy instead of rebuilding it from the tables (84 s at a million chunks).
 *
 * One file per copy under `<database directory>/search-snapshots/`, named after the database
 * file. Each records the chunk generation the copy reflected (migrations 0006/0007) and the
 * database file's identity (device and inode: a restored or replaced file is another database).
 * A snapshot is used only when its format, identity and tokenizer match and its generation is
 * not ahead of the database's; the change log then brings it up to date, as it does a copy that
 * fell behind another process's writes. A corrupt file (CRC-32, snapshot-file.ts) is rebuilt
 * from the tables, never trusted.
 */
import { ChunkIds } from '../common/chunk-ids.js';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FTS5_TOKENIZE, type Fts5Lexer } from '../keyword/fts5-lexer.js';
import { KEYWORD_TEXT } from '../../keyword-text.js';
import { KeywordIndex, type KeywordState } from '../keyword/keyword-index.js';
import { SkipEntriesError, type SavedSkips } from '../keyword/posting-skips.js';
import type { GraphState } from '../vector/ann-graph.js';
import {
  fileChecksum,
  readSnapshot,
  SnapshotError,
  writeSnapshot,
  type Section,
  type Snapshot,
  type Typed,
} from './snapshot-file.js';
import {
  VectorIndex,
  type VectorIndexOptions,
  type VectorSource,
  type VectorState,
} from '../vector/vector-index.js';

/** What the keyword copy was made from: FTS5's tokenizer over keywordText's text. */
const SNAPSHOT_TOKENIZER = `${FTS5_TOKENIZE}; ${KEYWORD_TEXT}`;
/**
 * Bumped when the layout of a snapshot changes: older files are rebuilt. 2: keyword postings as
 * bytes (keyword-postings.ts) instead of Int32 rows and Uint16 counts. 3: the lists in one arena
 * (posting-lists.ts) with a start per list.
 */
export const SNAPSHOT_FORMAT = 3;

/** A vector snapshot's graph (ann-graph.ts): its file beside the snapshot, checked on load. */
export interface GraphMeta {
  file: string;
  bytes: number;
  crc: number;
  nextKey: number;
  covered: number;
}

/** Where and when snapshots are written. */
export interface SnapshotOptions {
  /** The database file (snapshots sit in `search-snapshots/` beside it). */
  databaseFile: string;
  /** Quiet time after the last write before a snapshot is written. */
  delayMs: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

interface Meta {
  format: number;
  database: string;
  tokenizer: string;
  kind: string;
  generation: number;
  count: number;
  tokens?: number;
  dims?: number;
  graph?: GraphMeta;
}

/** The snapshot files of one database. */
export class SnapshotFiles {
  readonly dir: string;
  private readonly prefix: string;

  constructor(readonly options: SnapshotOptions) {
    this.dir = join(dirname(options.databaseFile), 'search-snapshots');
    this.prefix = basename(options.databaseFile);
  }

  /** The database file's identity: a file restored or replaced is another database. */
  identity(): string {
    const s = statSync(this.options.databaseFile);
    return `${s.dev}:${s.ino}`;
  }

  path(kind: string): string {
    return join(this.dir, `${this.prefix}.${kind}.snapshot`);
  }

  /**
   * Reads a snapshot of `kind` that may be used at `generation` (the database's now); null when
   * there is none or it may not be used (`why` says why, for the log).
   */
  async read(
    kind: string,
    generation: number,
  ): Promise<{ snapshot: Snapshot; generation: number } | { why: string }> {
    let snapshot: Snapshot;
    try {
      // A vector snapshot written before the float32 copy left memory holds one: not kept.
      snapshot = await readSnapshot(this.path(kind), { skip: ['floats'] });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { why: 'none' };
      if (error instanceof SnapshotError) return { why: error.message };
      throw error;
    }
    const meta = snapshot.meta as Partial<Meta>;
    if (meta.format !== SNAPSHOT_FORMAT || meta.kind !== kind) return { why: 'another format' };
    if (meta.database !== this.identity()) return { why: 'another database' };
    if (meta.tokenizer !== SNAPSHOT_TOKENIZER) return { why: 'another tokenizer' };
    const at = meta.generation;
    if (typeof at !== 'number' || at > generation) return { why: 'ahead of the database' };
    return { snapshot, generation: at };
  }

  /**
   * Saves a graph with `save(path)` to a new file of `kind` (named after this process and
   * time: the snapshot naming it is written after); its name, size and CRC-32.
   */
  async writeGraph(
    kind: string,
    save: (path: string) => Promise<void> | undefined,
  ): Promise<Pick<GraphMeta, 'file' | 'bytes' | 'crc'>> {
    mkdirSync(this.dir, { recursive: true });
    const file = `${this.prefix}.${kind}.${process.pid}-${Date.now()}.graph`;
    const temporary = join(this.dir, `${file}.${process.pid}.0.tmp`);
    try {
      await save(temporary);
      const sum = await fileChecksum(temporary);
      await rename(temporary, join(this.dir, file));
      return { file, ...sum };
    } finally {
      await rm(temporary, { force: true });
    }
  }

  /** The path of a snapshot's graph file when its size and CRC-32 are as recorded. */
  async checkedGraph(meta: GraphMeta): Promise<string> {
    if (basename(meta.file) !== meta.file) throw new SnapshotError('graph file name');
    const path = join(this.dir, meta.file);
    let sum: { bytes: number; crc: number };
    try {
      sum = await fileChecksum(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new SnapshotError('no graph');
      throw error;
    }
    if (sum.bytes !== meta.bytes || sum.crc !== meta.crc) {
      throw new SnapshotError('graph checksum mismatch');
    }
    return path;
  }

  /** Removes the snapshot of `kind` and its graph files (a vector table dropped). */
  remove(kind: string): void {
    rmSync(this.path(kind), { force: true });
    this.removeGraphs(kind, null);
  }

  /** Removes the graph files of `kind` other than `keep`. */
  removeGraphs(kind: string, keep: string | null): void {
    const start = `${this.prefix}.${kind}.`;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith(start) && name.endsWith('.graph') && name !== keep) {
        rmSync(join(this.dir, name), { force: true });
      }
    }
  }

  /** Writes a snapshot; false when `unchanged` turned false meanwhile (nothing left behind). */
  async write(
    kind: string,
    meta: Omit<Meta, 'format' | 'database' | 'tokenizer' | 'kind'>,
    sections: Map<string, Section>,
    unchanged: () => boolean,
  ): Promise<boolean> {
    mkdirSync(this.dir, { recursive: true });
    const full: Meta = {
      format: SNAPSHOT_FORMAT,
      database: this.identity(),
      tokenizer: SNAPSHOT_TOKENIZER,
      kind,
      ...meta,
    };
    return writeSnapshot(this.path(kind), { ...full }, sections, unchanged);
  }
}

const array = (
  parts: readonly Typed[],
  type: 'f64' | 'f32' | 'i32' | 'u16' | 'u8' | 'i8',
): Section => ({
  type,
  parts,
});
const strings = (list: readonly string[]): Section => ({ type: 'strings', list });

/**
 * Chunk ids as sections (chunk-ids.ts): the packed UUIDs and what each row holds, and the other
 * ids with their rows. A snapshot of an earlier build has them as one list of strings (`name`).
 */
function idSections(name: string, ids: ChunkIds, count: number): [string, Section][] {
  const { bytes, kinds, others } = ids.packed(count);
  return [
    [`${name}Bytes`, array([bytes], 'u8')],
    [`${name}Kinds`, array([kinds], 'u8')],
    [`${name}OtherRows`, array([Int32Array.from(others, ([r]) => r)], 'i32')],
    [`${name}Others`, strings(others.map(([, id]) => id))],
  ];
}

function idsOfSnapshot(snapshot: Snapshot, name: string, count: number): ChunkIds {
  if (!snapshot.arrays.has(`${name}Kinds`)) {
    const ids = list(snapshot, name);
    if (ids.length !== count) throw new SnapshotError('row count');
    return ChunkIds.from(ids);
  }
  const kinds = section(snapshot, `${name}Kinds`, Uint8Array);
  const rows = section(snapshot, `${name}OtherRows`, Int32Array);
  const others = list(snapshot, `${name}Others`);
  if (kinds.length !== count || rows.length !== others.length) throw new SnapshotError('row count');
  try {
    const pairs = others.map((id, i): [number, string] => [rows[i] as number, id]);
    return ChunkIds.fromPacked(section(snapshot, `${name}Bytes`, Uint8Array), kinds, pairs);
  } catch (error) {
    if (error instanceof SnapshotError) throw error;
    throw new SnapshotError(`section ${name}`);
  }
}

export function keywordSections(state: KeywordState, lexer: Fts5Lexer): Map<string, Section> {
  return new Map([
    ['rowids', array([state.rowids], 'f64')],
    ['documentOf', array([state.documentOf], 'i32')],
    ['projectOf', array([state.projectOf], 'i32')],
    ['lengths', array([state.lengths], 'i32')],
    ['alive', array([state.alive], 'u8')],
    ...idSections('chunkIds', state.chunkIds, state.count),
    ['documentIds', strings(state.documentIds)],
    ['projectIds', strings(state.projectIds)],
    ['lexemes', strings(Array.from(state.postingLengths, (_, id) => lexer.lexeme(id)))],
    ['postingStarts', array([state.postingStarts], 'i32')],
    ['postingLengths', array([state.postingLengths], 'i32')],
    ['postingLast', array([state.postingLast], 'i32')],
    ...(state.postingCounts === undefined
      ? []
      : [['postingCounts', array([state.postingCounts], 'i32')] as const]),
    ...(state.skips === undefined
      ? []
      : ([
          ['skipTable', array([state.skips.table], 'i32')],
          ['skipOffsets', array([state.skips.offsets], 'i32')],
          ['skipBefore', array([state.skips.before], 'i32')],
        ] as const)),
    ['postings', array([state.postings], 'u8')],
  ]);
}

/** The skip entries of a keyword snapshot, all three sections or none (an earlier build's). */
function savedSkips(snapshot: Snapshot): SavedSkips | undefined {
  const names = ['skipTable', 'skipOffsets', 'skipBefore'];
  const found = names.filter((name) => snapshot.arrays.has(name)).length;
  if (found === 0) return undefined;
  if (found !== names.length) throw new SnapshotError('skip entries');
  return {
    table: section(snapshot, 'skipTable', Int32Array),
    offsets: section(snapshot, 'skipOffsets', Int32Array),
    before: section(snapshot, 'skipBefore', Int32Array),
  };
}

function section<T extends Typed>(snapshot: Snapshot, name: string, type: new (n: number) => T): T {
  const found = snapshot.arrays.get(name);
  if (!(found instanceof type)) throw new SnapshotError(`section ${name}`);
  return found;
}

function list(snapshot: Snapshot, name: string): string[] {
  const found = snapshot.strings.get(name);
  if (found === undefined) throw new SnapshotError(`section ${name}`);
  return found;
}

export function keywordFromSnapshot(snapshot: Snapshot, lexer: Fts5Lexer): KeywordIndex {
  const meta = snapshot.meta as unknown as Meta;
  const starts = section(snapshot, 'postingStarts', Int32Array);
  const lengths = section(snapshot, 'postingLengths', Int32Array);
  const postingLast = section(snapshot, 'postingLast', Int32Array);
  const postings = section(snapshot, 'postings', Uint8Array);
  if (postingLast.length !== lengths.length || starts.length !== lengths.length) {
    throw new SnapshotError('postings');
  }
  for (const [i, length] of lengths.entries()) {
    const last = postingLast[i] ?? meta.count;
    const start = starts[i] ?? -1;
    if (length < 0 || last >= meta.count || (length === 0) !== (last === -1)) {
      throw new SnapshotError('postings');
    }
    if (start < 0 || start + length > postings.length) throw new SnapshotError('postings');
  }
  const lexemes = list(snapshot, 'lexemes');
  if (lexemes.length !== lengths.length) throw new SnapshotError('lexemes');
  // The lists' live counts (a snapshot of an earlier build has none: counted when first used).
  const counts = snapshot.arrays.get('postingCounts');
  if (
    counts !== undefined &&
    (!(counts instanceof Int32Array) || counts.length !== lengths.length)
  ) {
    throw new SnapshotError('postings');
  }
  const state: KeywordState = {
    count: meta.count,
    tokens: meta.tokens ?? 0,
    rowids: section(snapshot, 'rowids', Float64Array),
    chunkIds: idsOfSnapshot(snapshot, 'chunkIds', meta.count),
    documentOf: section(snapshot, 'documentOf', Int32Array),
    projectOf: section(snapshot, 'projectOf', Int32Array),
    lengths: section(snapshot, 'lengths', Int32Array),
    alive: section(snapshot, 'alive', Uint8Array),
    documentIds: list(snapshot, 'documentIds'),
    projectIds: list(snapshot, 'projectIds'),
    postings,
    postingStarts: starts,
    postingLengths: lengths,
    postingLast,
    ...(counts === undefined ? {} : { postingCounts: counts }),
  };
  const skips = savedSkips(snapshot);
  if (skips !== undefined) state.skips = skips;
  checkRows(state, [state.rowids, state.documentOf, state.projectOf, state.lengths, state.alive]);
  // The sections are arrays of their own (snapshot-file.ts): the index keeps them.
  try {
    return KeywordIndex.fromState(
      state,
      // '' marks room the lists grew into, past every id the lexer gave: not a lexeme.
      Int32Array.from(lexemes, (l) => (l === '' ? -1 : lexer.intern(l))),
      true,
    );
  } catch (error) {
    if (error instanceof SkipEntriesError) throw new SnapshotError(error.message);
    throw error;
  }
}

export function vectorSections(state: VectorState): Map<string, Section> {
  const sections = new Map<string, Section>([
    ...idSections('ids', state.ids, state.count),
    ['documentOf', array([state.documentOf], 'i32')],
    ['projectOf', array([state.projectOf], 'i32')],
    ['documentIds', strings(state.documentIds)],
    ['projectKeys', strings(state.projectKeys)],
    ['scales', array([state.scales], 'f32')],
    ['int8', array([state.int8], 'i8')],
  ]);
  if (state.rowids !== undefined) sections.set('rowids', array([state.rowids], 'f64'));
  if (state.graph !== undefined) {
    sections.set('graphKeys', array([state.graph.keyOf], 'i32'));
    sections.set('graphMean', array([state.graph.mean], 'f32'));
  }
  return sections;
}

/**
 * The graph's keys and mean a vector snapshot holds (copied out of the file's buffer), if any. A
 * graph saved without its mean (an uncentred graph of an earlier build) is rebuilt.
 */
export function graphOfSnapshot(snapshot: Snapshot): { meta: GraphMeta; state: GraphState } | null {
  const meta = (snapshot.meta as unknown as Meta).graph;
  if (meta === undefined) return null;
  const keys = section(snapshot, 'graphKeys', Int32Array);
  if (keys.length !== (snapshot.meta as unknown as Meta).count) throw new SnapshotError('graph');
  const mean = section(snapshot, 'graphMean', Float32Array);
  if (mean.length !== (snapshot.meta as unknown as Meta).dims) throw new SnapshotError('graph');
  return {
    meta,
    state: {
      keyOf: keys.slice(),
      nextKey: meta.nextKey,
      covered: meta.covered,
      mean: mean.slice(),
    },
  };
}

export function vectorFromSnapshot(
  snapshot: Snapshot,
  dims: number,
  source: VectorSource,
  options: VectorIndexOptions = {},
): VectorIndex {
  const meta = snapshot.meta as unknown as Meta;
  if (meta.dims !== dims) throw new SnapshotError('dimensions');
  const state: VectorState = {
    dims,
    count: meta.count,
    ids: idsOfSnapshot(snapshot, 'ids', meta.count),
    documentOf: section(snapshot, 'documentOf', Int32Array),
    projectOf: section(snapshot, 'projectOf', Int32Array),
    documentIds: list(snapshot, 'documentIds'),
    projectKeys: list(snapshot, 'projectKeys'),
    scales: section(snapshot, 'scales', Float32Array),
    int8: section(snapshot, 'int8', Int8Array),
    // A snapshot of an earlier build has no rowids: its rows are read by chunk id.
    ...(snapshot.arrays.has('rowids') ? { rowids: section(snapshot, 'rowids', Float64Array) } : {}),
  };
  checkRows(state, [
    state.documentOf,
    state.projectOf,
    state.scales,
    ...(state.rowids === undefined ? [] : [state.rowids]),
  ]);
  const rowBytes = Math.ceil(dims / 8) * 8;
  if (state.int8.length !== state.count * rowBytes) {
    throw new SnapshotError('vectors');
  }
  // The sections are arrays of their own (snapshot-file.ts): the index keeps them.
  return VectorIndex.fromState(state, source, options, true);
}

/** Every per-row array holds `count` rows (the ids were checked as they were read). */
function checkRows(state: { count: number }, arrays: Typed[]): void {
  if (arrays.some((a) => a.length !== state.count)) throw new SnapshotError('row count');
}
