/**
 * Row look-ups in the keyword index's posting lists (posting-lists.ts), for the few candidate
 * rows a pruned search (keyword-index.ts) still needs a common word's count of: a list of a
 * million postings is not decoded to find a hundred rows.
 *
 * A long list gets skip entries the first time it is looked in: every `every` postings, the byte
 * offset (from the list's start, so a list moved in the arena keeps them) and the row before
 * that posting, so looking rows up binary-searches the entries and decodes at most `every`
 * postings per row.
 * Lists only grow at their end (new rows have the highest numbers), so entries made once stay
 * true and are extended over the new bytes at the next look-up; compaction re-encodes every list,
 * and the entries are dropped (`clear`). A short list is decoded from its start.
 */
import type { PostingLists } from './posting-lists.js';

/** Postings between two skip entries. */
export const SKIP_EVERY = 64;

interface Skips {
  /** Per entry: the byte offset of its first posting, and the row before it (-1 first). */
  offsets: Int32Array;
  before: Int32Array;
  entries: number;
  /** The list's bytes the entries cover, the row of the last posting there, postings since the last entry. */
  covered: number;
  last: number;
  since: number;
}

export class PostingSkips {
  private readonly skips = new Map<number, Skips>();

  constructor(private readonly every = SKIP_EVERY) {}

  /** Forgets every entry (the lists were re-encoded). */
  clear(): void {
    this.skips.clear();
  }

  /** Lexemes with entries, and their bytes. */
  get byteLength(): number {
    let bytes = 0;
    for (const s of this.skips.values()) bytes += s.offsets.byteLength + s.before.byteLength;
    return bytes;
  }

  /**
   * The doubled weighted counts of `rows` (ascending) in lexeme `id`'s list, 0 for a row not in
   * it: one walk along the list, jumping over the blocks no row falls in.
   */
  counts(lists: PostingLists, id: number, rows: Int32Array): Int32Array {
    const out = new Int32Array(rows.length);
    const used = lists.used[id] as number;
    const bytes = lists.bytes;
    const start = lists.start[id] as number;
    const end = start + used;
    const skips = used > 4 * this.every ? this.extended(lists, id, used) : null;
    let p = start;
    let r = -1;
    let doubled = 0;
    let entry = 0;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as number;
      if (r < row && skips !== null) {
        // The last entry before the row, from the current one on.
        let lo = entry;
        let hi = skips.entries - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if ((skips.before[mid] as number) < row) lo = mid;
          else hi = mid - 1;
        }
        entry = lo;
        const at = start + (skips.offsets[lo] as number);
        if (at > p) {
          p = at;
          r = skips.before[lo] as number;
        }
      }
      while (r < row && p < end) {
        let b = bytes[p++] as number;
        let v = b & 0x7f;
        for (let shift = 7; b >= 0x80; shift += 7) {
          b = bytes[p++] as number;
          v |= (b & 0x7f) << shift;
        }
        r += v >>> 1;
        doubled = 2;
        if ((v & 1) === 0) {
          b = bytes[p++] as number;
          doubled = b & 0x7f;
          for (let shift = 7; b >= 0x80; shift += 7) {
            b = bytes[p++] as number;
            doubled |= (b & 0x7f) << shift;
          }
        }
      }
      out[i] = r === row ? doubled : 0;
    }
    return out;
  }

  /** The list's entries, extended over the bytes appended since they were made. */
  private extended(lists: PostingLists, id: number, used: number): Skips {
    let skips = this.skips.get(id);
    if (skips === undefined) {
      const size = Math.ceil(used / this.every) + 1;
      skips = {
        offsets: new Int32Array(size),
        before: new Int32Array(size).fill(-1),
        entries: 1,
        covered: 0,
        last: -1,
        since: 0,
      };
      this.skips.set(id, skips);
    }
    if (skips.covered === used) return skips;
    const bytes = lists.bytes;
    const start = lists.start[id] as number;
    let p = start + skips.covered;
    const end = start + used;
    let r = skips.last;
    while (p < end) {
      if (skips.since === this.every) {
        skips.since = 0;
        if (skips.entries === skips.offsets.length) this.grow(skips);
        skips.offsets[skips.entries] = p - start;
        skips.before[skips.entries] = r;
        skips.entries++;
      }
      let b = bytes[p++] as number;
      let v = b & 0x7f;
      for (let shift = 7; b >= 0x80; shift += 7) {
        b = bytes[p++] as number;
        v |= (b & 0x7f) << shift;
      }
      r += v >>> 1;
      if ((v & 1) === 0) while ((bytes[p++] as number) >= 0x80);
      skips.since++;
    }
    skips.covered = used;
    skips.last = r;
    return skips;
  }

  private grow(skips: Skips): void {
    const size = Math.ceil(skips.offsets.length * 1.5) + 1;
    const offsets = new Int32Array(size);
    offsets.set(skips.offsets);
    const before = new Int32Array(size);
    before.set(skips.before);
    skips.offsets = offsets;
    skips.before = before;
  }
}
