/** The shapes a vector index (vector-index.ts) takes in and gives out, and its size estimates. */
import type { GraphSettings, GraphState } from './ann-graph.js';

/**
 * Where a vector index reads the exact vectors of its rows: the SQLite table it was loaded from
 * (the source of truth; vector-tables.ts `tableVectors`), so that memory holds only their int8
 * copy (a float32 copy took 400 bytes per chunk of 100 dimensions, a third of the server at 1M).
 */
export interface VectorSource {
  /** The stored vectors (as stored, not normalised) of the chunks that have one. */
  vectors(chunkIds: readonly string[]): Map<string, Float32Array>;
}

/** Options of a vector index. */
export interface VectorIndexOptions {
  /** Live rows from which searches use an approximate graph (Infinity: never). */
  annMin?: number;
  /** The graph's search list and links per node (ann-graph.ts when not given). */
  annGraph?: GraphSettings;
}

/** Estimates for memoryReport: a 36-character id string, a pointer (V8, 64-bit). */
export const STRING_BYTES = 56;
export const POINTER_BYTES = 8;

export interface IndexRow {
  chunkId: string;
  documentId: string;
  projectKey: string;
  vector: Float32Array;
}

/** A vector index's rows as plain arrays, for a snapshot (index-snapshots.ts). */
export interface VectorState {
  dims: number;
  count: number;
  /** Chunk id per row, '' for a deleted row. */
  ids: string[];
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
