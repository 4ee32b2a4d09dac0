/**
 * The vectors of a vector index's rows (vector-index.ts): each row normalised and kept as int8
 * (its largest component → ±127, `scales` maps back) in the scan's WebAssembly memory
 * (dot-kernel.ts), and their exact float32 vectors read from the table when a score must be exact
 * (`VectorSource`: no float copy in memory). What a row is (its chunk, document, project) is the
 * index's business; here a row is a number.
 */
import { Int8Matrix } from './dot-kernel.js';
import { keepFloor } from '../common/top-k.js';
import { TopK } from '../common/top-k.js';
import type { VectorSource } from './vector-types.js';

/** Rows the graph's centre is averaged over at most (an even sample of the int8 rows). */
const MEAN_SAMPLE = 65_536;

export class VectorRows {
  /** Per row: max |component| / 127, the int8 row's scale back to the normalised vector. */
  scales: Float32Array = new Float32Array(0);
  readonly int8: Int8Matrix;
  /** One normalised vector (scratch of `set` and the exact scores). */
  private readonly unit: Float32Array;
  /** Query scale ceiling: int16, and the int32 sum of `rowBytes` products must not overflow. */
  private readonly queryMax: number;

  constructor(
    readonly dims: number,
    /** The rows' exact vectors, by chunk id (the table the index copies). */
    private readonly source: VectorSource,
  ) {
    this.int8 = new Int8Matrix(dims);
    this.unit = new Float32Array(dims);
    this.queryMax = Math.min(32767, Math.floor(2 ** 31 / (127 * this.int8.rowBytes)) - 1);
  }

  /** Makes room for `capacity` rows, keeping the first `count`. */
  reserve(capacity: number, count: number): void {
    const scales = new Float32Array(capacity);
    scales.set(this.scales.subarray(0, count));
    this.scales = scales;
    this.int8.reserve(capacity);
  }

  /** Takes a snapshot's rows: `scales` kept as it is (`count` of them), the int8 rows copied. */
  restore(scales: Float32Array, int8: Int8Array, count: number): void {
    this.scales = scales;
    this.int8.reserve(count);
    this.int8.rows(count).set(int8);
  }

  /**
   * `vector` normalised into `out` (float32, as the index always rounded it); returns the
   * largest |component| before rounding (the int8 row's scale).
   */
  private static unitInto(vector: ArrayLike<number>, out: Float32Array): number {
    const dims = out.length;
    let norm = 0;
    for (let j = 0; j < dims; j++) norm += (vector[j] ?? 0) ** 2;
    const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    let max = 0;
    for (let j = 0; j < dims; j++) {
      const v = (vector[j] ?? 0) * inv;
      out[j] = v;
      max = Math.max(max, Math.abs(v));
    }
    return max;
  }

  /** Row `r` (reserved) becomes `vector`, normalised. */
  set(r: number, vector: ArrayLike<number>): void {
    const unit = this.unit;
    const max = VectorRows.unitInto(vector, unit);
    const q = this.int8.row(r);
    const toInt = max > 0 ? 127 / max : 0;
    for (let j = 0; j < this.dims; j++) q[j] = Math.round((unit[j] as number) * toInt);
    this.scales[r] = max / 127;
  }

  copyRow(from: number, to: number): void {
    this.scales[to] = this.scales[from] ?? 0;
    this.int8.copyRow(from, to);
  }

  /** The query normalised (a copy), or null for a zero vector. */
  normalise(vector: Float32Array): Float32Array | null {
    if (vector.length !== this.dims) throw new RangeError('query dimensions differ');
    let norm = 0;
    for (let j = 0; j < this.dims; j++) norm += (vector[j] ?? 0) ** 2;
    if (!(norm > 0)) return null;
    const inv = 1 / Math.sqrt(norm);
    return Float32Array.from(vector, (v) => v * inv);
  }

  /** Row `r`'s int8 copy scaled back into `out` (a row the source lacks: never expected). */
  private dequantize(r: number, out: Float32Array): void {
    const q = this.int8.row(r);
    const scale = this.scales[r] as number;
    for (let j = 0; j < this.dims; j++) out[j] = (q[j] as number) * scale;
  }

  /**
   * The exact cosines of a normalised query with rows (of chunks `ids`): their stored vectors
   * read in one go and normalised as `set` normalises them (the scores of a float32 copy, bit for
   * bit).
   */
  exactScores(
    query: Float32Array,
    rows: readonly number[],
    ids: readonly string[],
    rowids?: ArrayLike<number>,
  ): Float64Array {
    const stored = this.source.vectors(ids, rowids);
    const scores = new Float64Array(rows.length);
    const unit = this.unit;
    rows.forEach((r, i) => {
      const vector = stored.get(ids[i] ?? '');
      if (vector !== undefined && vector.length === this.dims) VectorRows.unitInto(vector, unit);
      else this.dequantize(r, unit);
      let dot = 0;
      for (let j = 0; j < this.dims; j++) dot += (query[j] as number) * (unit[j] as number);
      scores[i] = dot;
    });
    return scores;
  }

  /**
   * Bounds of the cosines `exactScores` gives, from the rows' int8 copies alone (no read): a
   * component of a normalised row is within half its scale of the int8 one (rounding; the float32
   * scale adds ~127 × 2⁻²⁴ of it), so the exact cosine is within scale × (½ + 10⁻⁴) × Σ|query|
   * of the int8 one (and 10⁻⁹ for the sums' rounding).
   */
  cosineBounds(
    query: Float32Array,
    rows: readonly number[],
  ): { lower: Float64Array; upper: Float64Array } {
    let l1 = 0;
    for (let j = 0; j < this.dims; j++) l1 += Math.abs(query[j] as number);
    const lower = new Float64Array(rows.length);
    const upper = new Float64Array(rows.length);
    rows.forEach((r, i) => {
      const q = this.int8.row(r);
      const scale = this.scales[r] as number;
      let dot = 0;
      for (let j = 0; j < this.dims; j++) dot += (query[j] as number) * (q[j] as number);
      const margin = scale * (0.5 + 1e-4) * l1 + 1e-9;
      lower[i] = dot * scale - margin;
      upper[i] = dot * scale + margin;
    });
    return { lower, upper };
  }

  /**
   * The rows that can be among the best `keep` by exact cosine: all when there are no more, else
   * those whose upper bound reaches the `keep`-th best lower bound (in their order). The others
   * score less than `keep` rows whatever their float32 vectors: they need not be read.
   */
  contenders(query: Float32Array, rows: readonly number[], keep: number): readonly number[] {
    if (rows.length <= keep || keep <= 0) return rows;
    const { lower, upper } = this.cosineBounds(query, rows);
    const floor = keepFloor(lower, keep);
    return rows.filter((_, i) => (upper[i] as number) >= floor);
  }

  /** The rows' normalised vectors, `dims` each: read from the source (or else their int8 copy). */
  unitRows(
    rows: readonly number[],
    ids: readonly string[],
    rowids?: ArrayLike<number>,
  ): Float32Array {
    const dims = this.dims;
    const stored = this.source.vectors(ids, rowids);
    const out = new Float32Array(rows.length * dims);
    rows.forEach((r, i) => {
      const unit = out.subarray(i * dims, (i + 1) * dims);
      const vector = stored.get(ids[i] ?? '');
      if (vector !== undefined && vector.length === dims) VectorRows.unitInto(vector, unit);
      else this.dequantize(r, unit);
    });
    return out;
  }

  /**
   * The mean of the rows `alive(r)` keeps among the first `count`, from their int8 copies, over
   * an even sample: a graph's centre (any fixed vector keeps the scores exact; one near the rows'
   * mean spreads them, ann-graph.ts).
   */
  centre(count: number, alive: (r: number) => boolean): Float32Array {
    const sum = new Float64Array(this.dims);
    let rows = 0;
    const step = Math.max(1, Math.floor(count / MEAN_SAMPLE));
    for (let r = 0; r < count; r += step) {
      if (!alive(r)) continue;
      rows++;
      const q = this.int8.row(r);
      const scale = this.scales[r] as number;
      for (let j = 0; j < this.dims; j++) sum[j] = (sum[j] as number) + (q[j] as number) * scale;
    }
    return Float32Array.from(sum, (v) => (rows === 0 ? 0 : v / rows));
  }

  /** The query as the int8 scan takes it: integers in int16 range. */
  private quantized(query: Float32Array): number[] {
    let max = 0;
    for (let j = 0; j < this.dims; j++) max = Math.max(max, Math.abs(query[j] ?? 0));
    const toInt = this.queryMax / max;
    return Array.from(query, (v) => Math.round(v * toInt));
  }

  /**
   * The best `keep` rows of `[from, count)` by the int8 scan that `accept(r)` lets through
   * (asked only of rows that would be kept).
   */
  scanTop(
    query: Float32Array,
    from: number,
    count: number,
    keep: number,
    accept: (r: number) => boolean,
  ): Int32Array {
    const dots = this.int8.scan(this.quantized(query), count, from);
    const top = new TopK(keep);
    const scales = this.scales;
    let floor = top.floor;
    for (let i = 0; i < dots.length; i++) {
      const r = from + i;
      const score = (dots[i] as number) * (scales[r] as number);
      if (score <= floor || !accept(r)) continue;
      top.push(score, r);
      floor = top.floor;
    }
    return top.keptRows();
  }

  /** The best `keep` of the given rows by their int8 copies (all of them when as many). */
  int8Top(query: Float32Array, rows: number[], keep: number): number[] | Int32Array {
    if (rows.length <= keep) return rows;
    const q16 = this.quantized(query);
    const top = new TopK(keep);
    for (const r of rows) {
      const row = this.int8.row(r);
      let dot = 0;
      for (let j = 0; j < this.dims; j++) dot += (q16[j] as number) * (row[j] as number);
      top.push(dot * (this.scales[r] as number), r);
    }
    return top.keptRows();
  }

  /** Bytes held (the int8 rows with the scan's buffers, the scales). */
  get byteLength(): number {
    return this.int8.byteLength + this.scales.byteLength;
  }
}
