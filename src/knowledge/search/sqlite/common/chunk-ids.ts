/**
 * Chunk ids by row, for the in-process indexes (vector-index.ts, keyword-store.ts). An id that is
 * a canonical UUID (lowercase 8-4-4-4-12 hex: what indexing/index-pipeline.ts gives every chunk)
 * is kept in 16 bytes; any other id as its string. A million ids as strings would hold ~64 MB with
 * their pointers, and a million objects for the collector to walk; packed, ~17 MB.
 *
 * `idHash` is the hash the id table (id-table.ts) files ids under; `hashAt` gives it for a row
 * without making the id's string.
 */
import { FNV_OFFSET, fnv1a, fnvStep } from './fnv1a.js';

const NONE = 0;
const PACKED = 1;
const OTHER = 2;

/** Offsets of the dashes in a canonical UUID. */
const DASHES = [8, 13, 18, 23];
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
/** Char code of each hex digit value; -1 for a char that is not a lowercase hex digit. */
const DIGIT = new Int8Array(128).fill(-1);
for (let v = 0; v < 16; v++) DIGIT[v.toString(16).charCodeAt(0)] = v;

/** The hash the id table files an id under (`hashAt` gives it for a row). */
export const idHash = fnv1a;

/** The 16 bytes of a canonical UUID into `out` at `at`; false when `id` is not one. */
function pack(id: string, out: Uint8Array, at: number): boolean {
  if (id.length !== 36) return false;
  for (const d of DASHES) if (id.charCodeAt(d) !== 0x2d) return false;
  let byte = 0;
  for (let i = 0; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) continue;
    const c = id.charCodeAt(i);
    const v = c < 128 ? (DIGIT[c] as number) : -1;
    if (v < 0) return false;
    if ((byte & 1) === 0) out[at + (byte >> 1)] = v << 4;
    else out[at + (byte >> 1)] = (out[at + (byte >> 1)] as number) | v;
    byte++;
  }
  return true;
}

export class ChunkIds {
  /** 16 bytes per row (a packed UUID), and what each row holds (NONE, PACKED, OTHER). */
  private bytes: Uint8Array = new Uint8Array(0);
  private kinds: Uint8Array = new Uint8Array(0);
  /** The ids of OTHER rows. */
  private readonly others = new Map<number, string>();
  private readonly scratch = new Uint8Array(16);

  /** Room for rows below `rows`. */
  reserve(rows: number): void {
    if (rows <= this.kinds.length) return;
    const capacity = Math.max(rows, Math.ceil(this.kinds.length * 1.5), 1024);
    const bytes = new Uint8Array(capacity * 16);
    bytes.set(this.bytes);
    this.bytes = bytes;
    const kinds = new Uint8Array(capacity);
    kinds.set(this.kinds);
    this.kinds = kinds;
  }

  /** Whether row `r` holds an id. */
  has(r: number): boolean {
    return this.kinds[r] !== undefined && this.kinds[r] !== NONE;
  }

  /** The id of row `r` ('' for none). */
  get(r: number): string {
    const kind = this.kinds[r];
    if (kind === PACKED) {
      const b = this.bytes;
      const at = r * 16;
      const h = (i: number) => HEX[b[at + i] as number] as string;
      return (
        h(0) +
        h(1) +
        h(2) +
        h(3) +
        '-' +
        h(4) +
        h(5) +
        '-' +
        h(6) +
        h(7) +
        '-' +
        h(8) +
        h(9) +
        '-' +
        h(10) +
        h(11) +
        h(12) +
        h(13) +
        h(14) +
        h(15)
      );
    }
    return kind === OTHER ? (this.others.get(r) ?? '') : '';
  }

  /** Row `r` (reserved) holds `id` ('' for none). */
  set(r: number, id: string): void {
    this.others.delete(r);
    if (id === '') this.kinds[r] = NONE;
    else if (pack(id, this.bytes, r * 16)) this.kinds[r] = PACKED;
    else {
      this.kinds[r] = OTHER;
      this.others.set(r, id);
    }
  }

  /** Row `r` holds no id any more. */
  clear(r: number): void {
    if (this.kinds[r] === OTHER) this.others.delete(r);
    this.kinds[r] = NONE;
  }

  /** Whether row `r` holds `id` (without making its string). */
  equals(r: number, id: string): boolean {
    const kind = this.kinds[r];
    if (kind === OTHER) return this.others.get(r) === id;
    if (kind !== PACKED || !pack(id, this.scratch, 0)) return false;
    const b = this.bytes;
    const at = r * 16;
    for (let i = 0; i < 16; i++) if (b[at + i] !== this.scratch[i]) return false;
    return true;
  }

  /** The first of `rows` that holds `id`, or -1 (the id is packed once, not per row). */
  find(rows: readonly number[], id: string): number {
    const wanted = this.scratch;
    if (!pack(id, wanted, 0)) {
      for (const r of rows) if (this.kinds[r] === OTHER && this.others.get(r) === id) return r;
      return -1;
    }
    const b = this.bytes;
    for (const r of rows) {
      if (this.kinds[r] !== PACKED) continue;
      const at = r * 16;
      let i = 0;
      while (i < 16 && b[at + i] === wanted[i]) i++;
      if (i === 16) return r;
    }
    return -1;
  }

  /** idHash of row `r`'s id (0 for none), without making its string. */
  hashAt(r: number): number {
    const kind = this.kinds[r];
    if (kind === OTHER) return idHash(this.others.get(r) ?? '');
    if (kind !== PACKED) return 0;
    let h = FNV_OFFSET;
    const b = this.bytes;
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) h = fnvStep(h, 0x2d);
      const text = HEX[b[r * 16 + i] as number] as string;
      h = fnvStep(fnvStep(h, text.charCodeAt(0)), text.charCodeAt(1));
    }
    return h >>> 0;
  }

  /** Row `to` takes row `from`'s id (both reserved). */
  copy(from: number, to: number): void {
    if (from === to) return;
    this.clear(to);
    const kind = this.kinds[from] as number;
    this.kinds[to] = kind;
    if (kind === PACKED) this.bytes.copyWithin(to * 16, from * 16, from * 16 + 16);
    else if (kind === OTHER) this.others.set(to, this.others.get(from) ?? '');
  }

  /** Rows from `count` on hold nothing. */
  truncate(count: number): void {
    this.kinds.fill(NONE, count);
    for (const r of this.others.keys()) if (r >= count) this.others.delete(r);
  }

  /** The ids of the first `count` rows ('' for none). */
  list(count: number): string[] {
    return Array.from({ length: count }, (_, r) => this.get(r));
  }

  /** The first `count` rows as arrays, for a snapshot (views of the live arrays, and a copy). */
  packed(count: number): { bytes: Uint8Array; kinds: Uint8Array; others: [number, string][] } {
    const others = [...this.others].filter(([r]) => r < count);
    return {
      bytes: this.bytes.subarray(0, count * 16),
      kinds: this.kinds.subarray(0, count),
      others,
    };
  }

  /** Ids from a snapshot's packed arrays (kept as they are: nothing else may hold them). */
  static fromPacked(
    bytes: Uint8Array,
    kinds: Uint8Array,
    others: readonly (readonly [number, string])[],
  ): ChunkIds {
    if (bytes.length !== kinds.length * 16) throw new RangeError('chunk id bytes');
    const ids = new ChunkIds();
    ids.bytes = bytes;
    ids.kinds = kinds;
    for (const [r, id] of others) {
      if (kinds[r] !== OTHER) throw new RangeError('chunk id kinds');
      ids.others.set(r, id);
    }
    return ids;
  }

  /** A copy of the first `count` rows. */
  clone(count: number): ChunkIds {
    const { bytes, kinds, others } = this.packed(count);
    return ChunkIds.fromPacked(bytes.slice(), kinds.slice(), others);
  }

  /** Ids from a list ('' for none). */
  static from(list: readonly string[]): ChunkIds {
    const ids = new ChunkIds();
    ids.reserve(list.length);
    list.forEach((id, r) => {
      ids.set(r, id);
    });
    return ids;
  }

  get byteLength(): number {
    return this.bytes.byteLength + this.kinds.byteLength + this.others.size * 64;
  }
}
