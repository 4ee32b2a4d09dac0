/** Messages between `StaticEmbeddingProvider` (main thread) and `worker.ts`. */

export type ToWorker =
  /** `cacheDirs`: where the cache may be, in order of preference (see openStaticCacheIn). */
  | { type: 'init'; cacheDirs: string[]; sourcePath: string; vocabSize?: number }
  /** `coverage`: also answer each text's queryCoverage (search queries). */
  | { type: 'embed'; id: number; texts: string[]; coverage?: boolean }
  /** Test hook: throw an uncaught error in the worker, as a bug would. */
  | { type: 'crash' };

export interface WorkerInfo {
  threadId: number;
  dims: number;
  cacheFile: string;
  vocabSize: number;
  /** True when this worker had to build the cache from the source JSON. */
  built: boolean;
  /** Preferred cache directories that could not be written (the cache went to a later one). */
  skippedDirs: string[];
  buildMs: number;
  loadMs: number;
}

export type FromWorker =
  | { type: 'ready'; info: WorkerInfo }
  | { type: 'init-failed'; message: string }
  /** The cache is missing: the worker builds it now (seconds). */
  | { type: 'building'; cacheFile: string }
  /** One transferred buffer per text, each holding `dims` float32 values. */
  | { type: 'result'; id: number; vectors: ArrayBuffer[]; coverage?: number[] }
  | { type: 'failed'; id: number; message: string };
