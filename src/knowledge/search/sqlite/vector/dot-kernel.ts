/**
 * Integer dot products of one query with every row of an int8 matrix: a ~200-byte WebAssembly
 * module (128-bit SIMD: i32x4.dot_i16x8_s) when the runtime has it (Node ≥ 16.4), a plain loop
 * otherwise. The matrix lives in the module's memory and is scanned in place, a quarter of the
 * bytes of float32 (a 100k × 100 scan is memory-bound).
 *
 * The module exports `scan(query, matrix, rows, rowBytes, out)` (byte offsets; `rowBytes` a
 * positive multiple of 8; the query as int16): `out[r] = Σ query[j] × matrix[r][j]` as int32.
 */

/** Unsigned LEB128. */
function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

function section(id: number, body: number[]): number[] {
  return [id, ...leb(body.length), ...body];
}

function utf8(name: string): number[] {
  return [...leb(name.length), ...Buffer.from(name, 'utf8')];
}

// Locals: 0 query, 1 matrix, 2 rows, 3 rowBytes, 4 out (params); 5 j (i32); 6 acc (v128).
const [QUERY, MATRIX, ROWS, ROW_BYTES, OUT, J, ACC] = [0, 1, 2, 3, 4, 5, 6];
const get = (i: number) => [0x20, i];
const set = (i: number) => [0x21, i];
const tee = (i: number) => [0x22, i];
const i32 = (n: number) => [0x41, ...leb(n)]; // small non-negative constants only (< 64)
const I32_ADD = 0x6a;
const I32_SUB = 0x6b;
const I32_SHL = 0x74;
const I32_EQZ = 0x45;
const I32_LT_U = 0x49;
const I32_STORE = [0x36, 0x02, 0x00];
const V128_LOAD = [0xfd, 0x00, 0x01, 0x00]; // align 2^1 (a hint), offset 0
const V128_LOAD8X8_S = [0xfd, 0x01, 0x00, 0x00]; // 8 × int8 → 8 × int16
const V128_ZERO = [0xfd, 0x0c, ...new Array<number>(16).fill(0)];
const I32X4_ADD = [0xfd, 0xae, 0x01];
const I32X4_DOT_I16X8_S = [0xfd, 0xba, 0x01];
const lane = (l: number) => [...get(ACC), 0xfd, 0x1b, l]; // i32x4.extract_lane

/**
 * scan(query: int16[], matrix: int8 rows, rows, rowBytes, out: int32[]): for each row,
 * acc = Σ dot_i16x8(extend(row[j..j+8)), query[j..j+8)); out[r] = horizontal sum of acc.
 */
const BODY = [
  // block $exit / loop $rows
  0x02,
  0x40,
  0x03,
  0x40,
  // if rows == 0: exit
  ...get(ROWS),
  I32_EQZ,
  0x0d,
  0x01,
  ...V128_ZERO,
  ...set(ACC),
  ...i32(0),
  ...set(J),
  // loop $dims: acc += dot(matrix[j..j+8) as int16, query[j..j+8))
  0x03,
  0x40,
  ...get(ACC),
  ...get(MATRIX),
  ...get(J),
  I32_ADD,
  ...V128_LOAD8X8_S,
  ...get(QUERY),
  ...get(J),
  ...i32(1),
  I32_SHL,
  I32_ADD,
  ...V128_LOAD,
  ...I32X4_DOT_I16X8_S,
  ...I32X4_ADD,
  ...set(ACC),
  ...get(J),
  ...i32(8),
  I32_ADD,
  ...tee(J),
  ...get(ROW_BYTES),
  I32_LT_U,
  0x0d,
  0x00,
  0x0b,
  // *out = horizontal sum of acc
  ...get(OUT),
  ...lane(0),
  ...lane(1),
  I32_ADD,
  ...lane(2),
  I32_ADD,
  ...lane(3),
  I32_ADD,
  ...I32_STORE,
  ...get(OUT),
  ...i32(4),
  I32_ADD,
  ...set(OUT),
  ...get(MATRIX),
  ...get(ROW_BYTES),
  I32_ADD,
  ...set(MATRIX),
  ...get(ROWS),
  ...i32(1),
  I32_SUB,
  ...set(ROWS),
  0x0c,
  0x00,
  0x0b,
  0x0b,
  0x0b, // end of function
];
const LOCALS = [0x02, 0x01, 0x7f, 0x01, 0x7b]; // 1 × i32, 1 × v128
const FUNCTION = [...LOCALS, ...BODY];

const MODULE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  ...section(1, [0x01, 0x60, 0x05, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00]),
  ...section(2, [0x01, ...utf8('env'), ...utf8('memory'), 0x02, 0x00, 0x01]),
  ...section(3, [0x01, 0x00]),
  ...section(7, [0x01, ...utf8('scan'), 0x00, 0x00]),
  ...section(10, [0x01, ...leb(FUNCTION.length), ...FUNCTION]),
]);

/** The slice of the WebAssembly API used here (the project's TypeScript libs do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const wasmApi = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

const PAGE = 65536;
const align16 = (n: number) => Math.ceil(n / 16) * 16;

/**
 * Rows of `dims` int8 values in WebAssembly memory, scanned against an int16 query: the first,
 * approximate pass of vector search. Layout: the rows (capacity × rowBytes), then the int32
 * results, then the query; growing keeps the rows in place (they come first).
 */
export class Int8Matrix {
  /** Bytes per row: `dims` padded to a multiple of 8 (zeros). */
  readonly rowBytes: number;
  private readonly memory: WasmMemory | { buffer: ArrayBuffer; grow: null };
  private readonly wasmScan:
    ((query: number, matrix: number, rows: number, rowBytes: number, out: number) => void) | null;
  private bytes: Int8Array;
  private capacity = 0;

  constructor(
    readonly dims: number,
    useWasm = true,
  ) {
    this.rowBytes = Math.ceil(dims / 8) * 8;
    let scan: Int8Matrix['wasmScan'] = null;
    if (useWasm && wasmApi?.validate(MODULE) === true) {
      const memory = new wasmApi.Memory({ initial: 1 });
      const instance = new wasmApi.Instance(new wasmApi.Module(MODULE), { env: { memory } });
      scan = instance.exports.scan as NonNullable<Int8Matrix['wasmScan']>;
      this.memory = memory;
    } else {
      this.memory = { buffer: new ArrayBuffer(0), grow: null };
    }
    this.wasmScan = scan;
    this.bytes = new Int8Array(this.memory.buffer);
  }

  /** Whether scans run as WebAssembly SIMD (else a plain loop). */
  get simd(): boolean {
    return this.wasmScan !== null;
  }

  private get outOffset(): number {
    return align16(this.capacity * this.rowBytes);
  }

  private get queryOffset(): number {
    return align16(this.outOffset + this.capacity * 4);
  }

  /** Makes room for `rows` rows; existing rows are kept. */
  reserve(rows: number): void {
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, Math.ceil(this.capacity * 1.5), 1024);
    const needed = align16(align16(capacity * this.rowBytes) + capacity * 4) + this.rowBytes * 2;
    const have = this.memory.buffer.byteLength;
    if (needed > have) {
      if (this.memory.grow === null) {
        // No WebAssembly: a plain buffer, copied into a larger one.
        const buffer = new ArrayBuffer(needed);
        new Int8Array(buffer).set(new Int8Array(this.memory.buffer));
        this.memory.buffer = buffer;
      } else this.memory.grow(Math.ceil((needed - have) / PAGE));
    }
    this.bytes = new Int8Array(this.memory.buffer);
    this.capacity = capacity;
  }

  /** Row `r` (reserved) as a writable view of `dims` values. */
  row(r: number): Int8Array {
    const start = r * this.rowBytes;
    return this.bytes.subarray(start, start + this.dims);
  }

  /** Rows 0..rows-1 (reserved) as one view, `rowBytes` per row. */
  rows(rows: number): Int8Array {
    return this.bytes.subarray(0, rows * this.rowBytes);
  }

  /** Bytes reserved (rows, the scan's output and its query). */
  get byteLength(): number {
    return this.memory.buffer.byteLength;
  }

  /** Copies row `from` over row `to`. */
  copyRow(from: number, to: number): void {
    this.bytes.copyWithin(to * this.rowBytes, from * this.rowBytes, (from + 1) * this.rowBytes);
  }

  /**
   * Dot products of `query` (`dims` integers in int16 range) with rows from..rows-1 (index 0 of
   * the result is row `from`), as a view that the next scan or `reserve` overwrites.
   */
  scan(query: ArrayLike<number>, rows: number, from = 0): Int32Array {
    if (rows > this.capacity) throw new RangeError('scan past the reserved rows');
    const out = this.outOffset;
    const q = this.queryOffset;
    const buffer = this.memory.buffer;
    const query16 = new Int16Array(buffer, q, this.rowBytes);
    query16.fill(0);
    for (let j = 0; j < this.dims; j++) query16[j] = query[j] ?? 0;
    const n = Math.max(0, rows - from);
    const result = new Int32Array(buffer, out, n);
    if (n === 0) return result;
    if (this.wasmScan !== null) {
      this.wasmScan(q, from * this.rowBytes, n, this.rowBytes, out);
      return result;
    }
    const m = this.bytes;
    for (let i = 0, o = from * this.rowBytes; i < n; i++, o += this.rowBytes) {
      let s = 0;
      for (let j = 0; j < this.dims; j++) s += (m[o + j] ?? 0) * (query16[j] ?? 0);
      result[i] = s;
    }
    return result;
  }
}
