/**
 * Jumps in the keyword index's posting lists (posting-lists.ts), for the rows a pruned search
 * (keyword-maxscore.ts) still needs a common word's count of: a list of a million postings is
 * not decoded to find a few thousand rows.
 *
 * A long list gets skip entries the first time it is looked in: every `every` postings, the byte
 * offset (from the list's start, so a list moved in the arena keeps them) and the row before
 * that posting, so a jump binary-searches the entries and decodes at most `every` postings.
 * Lists only grow at their end (new rows have the highest numbers), so entries made once stay
 * true and are extended over the new bytes at the next look-up; compaction re-encodes every list,
 * and the entries are dropped (`clear`). A short list is decoded from its start.
 */
import { PostingCursor } from './keyword-postings.js';
import type { PostingLists } from './posting-lists.js';

/** Postings between two skip entries. */
export const SKIP_EVERY = 64;

export interface Skips {
  /** Per entry: the byte offset of its first posting, and the row before it (-1 first). */
  offsets: Int32Array;
  before: Int32Array;
  entries: number;
  /** The list's bytes the entries cover, the row of the last posting there, postings since the last entry. */
  covered: number;
  last: number;
  since: number;
  /**
   * Over those postings: the largest doubled count and the shortest row (a row's length never
   * changes), from which a search bounds what the word can add to any row (keyword-maxscore.ts).
   */
  maxDoubled: number;
  minLength: number;
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
   * A long list's entries (made or extended now; `lengths`: the rows' lengths); null for a short
   * list (decoded from its start).
   */
  of(lists: PostingLists, id: number, lengths: Int32Array): Skips | null {
    const used = lists.used[id] as number;
    return used > 4 * this.every ? this.extended(lists, id, used, lengths) : null;
  }

  /** The list's entries, extended over the bytes appended since they were made. */
  private extended(lists: PostingLists, id: number, used: number, lengths: Int32Array): Skips {
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
        maxDoubled: 0,
        minLength: 0x7fffffff,
      };
      this.skips.set(id, skips);
    }
    if (skips.covered === used) return skips;
    const start = lists.start[id] as number;
    const cursor = new PostingCursor(lists.bytes, start + skips.covered, start + used, skips.last);
    let maxDoubled = skips.maxDoubled;
    let minLength = skips.minLength;
    while (cursor.at < cursor.end) {
      if (skips.since === this.every) {
        skips.since = 0;
        if (skips.entries === skips.offsets.length) this.grow(skips);
        skips.offsets[skips.entries] = cursor.at - start;
        skips.before[skips.entries] = cursor.row;
        skips.entries++;
      }
      cursor.next();
      maxDoubled = Math.max(maxDoubled, cursor.doubled);
      minLength = Math.min(minLength, lengths[cursor.row] as number);
      skips.since++;
    }
    skips.maxDoubled = maxDoubled;
    skips.minLength = minLength;
    skips.covered = used;
    skips.last = cursor.row;
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
