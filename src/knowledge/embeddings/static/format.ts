/**
 * The binary cache format. Everything is little-endian; sections start on 4-byte boundaries.
 *
 *   header (64 bytes)
 *     0  8 bytes  magic "APSGSIF\0"
 *     8  u32      format version
 *    12  u32      dims
 *    16  u32      vocabulary size V
 *    20  u32      vocabulary byte length
 *    24  f64      SIF a
 *    32  f64      Zipf exponent s       (p(rank) = 1 / (H · rank^s))
 *    40  f64      Zipf normaliser H
 *    48  f64      byte size of the source JSON (provenance)
 *    56  u32      quantisation: 1 = int8 with one float32 scale per vector
 *    60  u32      reserved (0)
 *   vocabulary   UTF-8 words joined by "\n", most frequent first, zero-padded to 4 bytes
 *   ranks        u32 × V   1-based frequency rank in the source (the Zipf input)
 *   weights      f32 × V   SIF weight a / (a + p(rank))
 *   scales       f32 × V   vector i ≈ scale[i] × int8 row i
 *   pc           f32 × dims  unit first principal component to project out
 *   vectors      i8 × V × dims
 *
 * The total length is implied by the header, so a truncated or foreign file is rejected.
 */

const MAGIC = 'APSGSIF\0';
export const FORMAT_VERSION = 1;
const QUANT_INT8_PER_VECTOR = 1;
const HEADER_BYTES = 64;

export interface StaticModel {
  readonly dims: number;
  /** Vocabulary, most frequent first; `index` maps a word to its row. */
  readonly words: readonly string[];
  readonly index: ReadonlyMap<string, number>;
  readonly ranks: Uint32Array;
  readonly weights: Float32Array;
  readonly scales: Float32Array;
  readonly vectors: Int8Array;
  readonly pc: Float32Array;
  readonly sifA: number;
  readonly zipfExponent: number;
  readonly zipfNorm: number;
  readonly sourceBytes: number;
  /** weight × scale per row, so the embedding loop does one multiply per component. */
  readonly factors: Float32Array;
}

type ModelParts = Omit<StaticModel, 'index' | 'factors'>;

export class CacheFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CacheFormatError';
  }
}

const pad4 = (n: number): number => (n + 3) & ~3;

function layout(dims: number, vocab: number, vocabBytes: number) {
  const ranks = HEADER_BYTES + pad4(vocabBytes);
  const weights = ranks + 4 * vocab;
  const scales = weights + 4 * vocab;
  const pc = scales + 4 * vocab;
  const vectors = pc + 4 * dims;
  return { ranks, weights, scales, pc, vectors, total: vectors + vocab * dims };
}

export function encodeModel(m: ModelParts): Buffer {
  const vocabText = Buffer.from(m.words.join('\n'), 'utf8');
  const n = m.words.length;
  const at = layout(m.dims, n, vocabText.length);
  const buf = Buffer.alloc(at.total);
  buf.write(MAGIC, 0, 'latin1');
  buf.writeUInt32LE(FORMAT_VERSION, 8);
  buf.writeUInt32LE(m.dims, 12);
  buf.writeUInt32LE(n, 16);
  buf.writeUInt32LE(vocabText.length, 20);
  buf.writeDoubleLE(m.sifA, 24);
  buf.writeDoubleLE(m.zipfExponent, 32);
  buf.writeDoubleLE(m.zipfNorm, 40);
  buf.writeDoubleLE(m.sourceBytes, 48);
  buf.writeUInt32LE(QUANT_INT8_PER_VECTOR, 56);
  vocabText.copy(buf, HEADER_BYTES);
  for (let i = 0; i < n; i++) {
    buf.writeUInt32LE(m.ranks[i] ?? 0, at.ranks + 4 * i);
    buf.writeFloatLE(m.weights[i] ?? 0, at.weights + 4 * i);
    buf.writeFloatLE(m.scales[i] ?? 0, at.scales + 4 * i);
  }
  for (let d = 0; d < m.dims; d++) buf.writeFloatLE(m.pc[d] ?? 0, at.pc + 4 * d);
  Buffer.from(m.vectors.buffer, m.vectors.byteOffset, m.vectors.byteLength).copy(buf, at.vectors);
  return buf;
}

export function decodeModel(buf: Buffer): StaticModel {
  if (buf.length < HEADER_BYTES || buf.toString('latin1', 0, 8) !== MAGIC) {
    throw new CacheFormatError('not an embedding cache');
  }
  const version = buf.readUInt32LE(8);
  if (version !== FORMAT_VERSION) throw new CacheFormatError(`cache format v${version}`);
  if (buf.readUInt32LE(56) !== QUANT_INT8_PER_VECTOR) throw new CacheFormatError('quantisation');
  const dims = buf.readUInt32LE(12);
  const n = buf.readUInt32LE(16);
  const vocabBytes = buf.readUInt32LE(20);
  const at = layout(dims, n, vocabBytes);
  if (buf.length !== at.total) throw new CacheFormatError('truncated or oversized cache');

  const words = buf.toString('utf8', HEADER_BYTES, HEADER_BYTES + vocabBytes).split('\n');
  if (words.length !== n) throw new CacheFormatError('vocabulary size mismatch');
  const index = new Map<string, number>();
  words.forEach((word, i) => index.set(word, i));

  const ranks = new Uint32Array(n);
  const weights = new Float32Array(n);
  const scales = new Float32Array(n);
  const factors = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    ranks[i] = buf.readUInt32LE(at.ranks + 4 * i);
    weights[i] = buf.readFloatLE(at.weights + 4 * i);
    scales[i] = buf.readFloatLE(at.scales + 4 * i);
    factors[i] = (weights[i] ?? 0) * (scales[i] ?? 0);
  }
  const pc = new Float32Array(dims);
  for (let d = 0; d < dims; d++) pc[d] = buf.readFloatLE(at.pc + 4 * d);
  // A view, not a copy: the file buffer is only kept alive by it.
  const vectors = new Int8Array(buf.buffer, buf.byteOffset + at.vectors, n * dims);
  return {
    dims,
    words,
    index,
    ranks,
    weights,
    scales,
    vectors,
    pc,
    sifA: buf.readDoubleLE(24),
    zipfExponent: buf.readDoubleLE(32),
    zipfNorm: buf.readDoubleLE(40),
    sourceBytes: buf.readDoubleLE(48),
    factors,
  };
}
