/** The shapes a vector index (vector-index.ts) takes in and gives out. */
import type { GraphSettings, GraphState } from './ann-graph.js';
import type { ChunkIds } from '../common/chunk-ids.js';

/**
 * Where a vector index reads the exact vectors of its rows: the SQLite table it was loaded from
 * (the source of truth; vector-tables.ts `tableVectors`), so that memory holds only their int8
 * copy (a float32 copy would take 400 bytes per chunk of 100 dimensions, a third of the server
 * at 1M).
 */
export interface VectorSource {
  /**
   * The stored vectors (as stored, not normalised) of the chunks that have one. `rowids[i]`, when
   * a number (not NaN), is where chunk `chunkIds[i]`'s row was: found there when it still is.
   */
  vectors(chunkIds: readonly string[], rowids?: ArrayLike<number>): Map<string, Float32Array>;
}

/** Options of a vector index. */
export interface VectorIndexOptions {
  /** Live rows from which searches use an approximate graph (Infinity: never). */
  annMin?: number;
  /** The graph's search list and links per node (ann-graph.ts when not given). */
  annGraph?: GraphSettings;
}

export interface IndexRow {
  /** The row's rowid in the vector table, if known (reads by rowid are ~3× faster than by id). */
  rowid?: number;
  chunkId: string;
  documentId: string;
  projectKey: string;
  vector: Float32Array;
}

/** A vector index's rows as plain arrays, for a snapshot (snapshots.ts). */
export interface VectorState {
  dims: number;
  count: number;
  /** Chunk id per row, none for a deleted row (the index's own: read, not kept). */
  ids: ChunkIds;
  /** Its vector table rowid per row (NaN: not known; a snapshot of an earlier build has none). */
  rowids?: Float64Array;
  /** Document and project key numbers per row, and the ids and keys they stand for. */
  documentOf: Int32Array;
  projectOf: Int32Array;
  documentIds: string[];
  projectKeys: string[];
  scales: Float32Array;
  int8: Int8Array;
  /** The graph's keys, when the index has a graph. */
  graph?: GraphState;
}

/** Bounds of a candidate's exact cosine; equal when it is known (0 for a chunk without vector). */
export interface CosineBounds {
  lower: number;
  upper: number;
}

/**
 * A nearest-chunk candidate before its cosine is read (VectorIndex.nearestBounds;
 * ../fused-cosines.ts reads them).
 */
export interface BoundedNearest extends CosineBounds {
  chunkId: string;
  documentId: string;
  /**
   * Its place among its document's rows in the vector index: where the keyword index most likely
   * holds it among that document's rows too (both add a document's chunks in the same order), a
   * hint that spares a search of them (`KeywordIndex.scoresOf`).
   */
  place?: number;
}
