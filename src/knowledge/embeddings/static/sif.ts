/**
 * Smooth inverse frequency (Arora, Liang & Ma, ICLR 2017): a sentence vector is the average of
 * its word vectors weighted a/(a + p(w)), with the sentence vectors' first principal component
 * (the "common discourse" direction every average leans towards) projected out.
 *
 * The source has no word counts, only words sorted by corpus frequency, so p(w) is estimated
 * from the rank with Zipf's law: p(r) = 1 / (H · r^s), H = Σ_{k=1..N} k^-s. With s = 1 and the
 * source's 341,479 ranks, p("the") ≈ 0.075, close to its real share of English text.
 */

export const SIF_A = 1e-3;
export const ZIPF_EXPONENT = 1;

/** Zipf normaliser H over `size` ranks. */
export function zipfNorm(size: number, s = ZIPF_EXPONENT): number {
  let h = 0;
  // Summing smallest terms first keeps the rounding error negligible.
  for (let k = size; k >= 1; k--) h += k ** -s;
  return h;
}

/** Estimated probability of the word at 1-based frequency `rank`. */
export function zipfProbability(rank: number, norm: number, s = ZIPF_EXPONENT): number {
  return 1 / (norm * rank ** s);
}

export function sifWeight(p: number, a = SIF_A): number {
  return a / (a + p);
}

/** mulberry32: a tiny seeded PRNG, so the principal component is the same on every build. */
export function seededRandom(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let x = Math.imul(t ^ (t >>> 15), t | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** How the principal component is estimated; part of the cache key. */
export const PC_SAMPLE = {
  seed: 20170424,
  sentences: 8000,
  minLength: 8,
  maxLength: 40,
  topWords: 20_000,
};

interface PcInput {
  dims: number;
  /** Number of words in the vocabulary, in frequency order. */
  count: number;
  /** Zipf probability of word i (for sampling) — rank-derived, not index-derived. */
  probability: (i: number) => number;
  /** Adds `factor` × (SIF-weighted) vector of word i to `acc`. */
  addWeighted: (i: number, factor: number, acc: Float64Array) => void;
}

/**
 * The first principal component of SIF sentence vectors of pseudo-sentences: bags of words drawn
 * from the top `topWords` words with Zipf probabilities, i.e. with the unigram statistics of real
 * text. The common direction SIF removes is a property of that distribution, not of any topic, so
 * no corpus has to ship with the package. Uncentred, as in the paper (TruncatedSVD of the raw
 * sentence matrix); found by power iteration on the dims × dims second-moment matrix.
 */
export function firstPrincipalComponent(input: PcInput, sample = PC_SAMPLE): Float32Array {
  const { dims } = input;
  const top = Math.min(sample.topWords, input.count);
  if (top === 0) return new Float32Array(dims);
  const cdf = new Float64Array(top);
  let total = 0;
  for (let i = 0; i < top; i++) cdf[i] = total += input.probability(i);
  const random = seededRandom(sample.seed);
  const pick = (): number => {
    const x = random() * total;
    let lo = 0;
    let hi = top - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cdf[mid] ?? 0) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  const second = new Float64Array(dims * dims);
  const v = new Float64Array(dims);
  for (let s = 0; s < sample.sentences; s++) {
    const length =
      sample.minLength + Math.floor(random() * (sample.maxLength - sample.minLength + 1));
    v.fill(0);
    for (let t = 0; t < length; t++) input.addWeighted(pick(), 1 / length, v);
    for (let r = 0; r < dims; r++) {
      const vr = v[r] ?? 0;
      for (let c = 0; c < dims; c++)
        second[r * dims + c] = (second[r * dims + c] ?? 0) + vr * (v[c] ?? 0);
    }
  }
  return powerIteration(second, dims);
}

/** Dominant eigenvector of a symmetric positive semi-definite matrix; sign fixed for determinism. */
export function powerIteration(matrix: Float64Array, dims: number, iterations = 500): Float32Array {
  let x = new Float64Array(dims).fill(1 / Math.sqrt(dims));
  for (let it = 0; it < iterations; it++) {
    const y = new Float64Array(dims);
    for (let r = 0; r < dims; r++) {
      let sum = 0;
      for (let c = 0; c < dims; c++) sum += (matrix[r * dims + c] ?? 0) * (x[c] ?? 0);
      y[r] = sum;
    }
    const norm = Math.hypot(...y);
    if (norm === 0) return new Float32Array(dims);
    for (let r = 0; r < dims; r++) y[r] = (y[r] ?? 0) / norm;
    x = y;
  }
  let largest = 0;
  for (let r = 0; r < dims; r++) if (Math.abs(x[r] ?? 0) > Math.abs(x[largest] ?? 0)) largest = r;
  const sign = (x[largest] ?? 0) < 0 ? -1 : 1;
  return Float32Array.from(x, (value) => sign * value);
}
