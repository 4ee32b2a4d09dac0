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

/**
 * Every list's entries as three arrays (a snapshot's sections, snapshots.ts): per list,
 * SAVED_FIELDS numbers in `table` (its lexeme id, entries, covered, last, since, maxDoubled,
 * minLength), its entries in `offsets` and `before`, lists in table order.
 */
export interface SavedSkips {
  table: Int32Array;
  offsets: Int32Array;
  before: Int32Array;
}

const SAVED_FIELDS = 7;

/** Saved entries that cannot be their lists' (`PostingSkips.load`). */
export class SkipEntriesError extends Error {}

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

  /** Whether list `id` has entries. */
  has(id: number): boolean {
    return this.skips.has(id);
  }

  /** The entries of every list that has them (copies: `SavedSkips`). */
  save(): SavedSkips {
    let total = 0;
    for (const s of this.skips.values()) total += s.entries;
    const table = new Int32Array(this.skips.size * SAVED_FIELDS);
    const offsets = new Int32Array(total);
    const before = new Int32Array(total);
    let at = 0;
    let row = 0;
    for (const [id, s] of this.skips) {
      table.set([id, s.entries, s.covered, s.last, s.since, s.maxDoubled, s.minLength], row);
      offsets.set(s.offsets.subarray(0, s.entries), at);
      before.set(s.before.subarray(0, s.entries), at);
      at += s.entries;
      row += SAVED_FIELDS;
    }
    return { table, offsets, before };
  }

  /**
   * Takes the entries `saved` holds for `lists` (`idOf`: a saved lexeme id's id here, -1 for
   * none; `rows`: the index's rows); throws SkipEntriesError, taking none, where one of them
   * could not be true of its list: a search would jump through it to a wrong row.
   */
  load(saved: SavedSkips, lists: PostingLists, idOf: (id: number) => number, rows: number): void {
    const { table, offsets, before } = saved;
    if (table.length % SAVED_FIELDS !== 0 || offsets.length !== before.length) {
      throw new SkipEntriesError('skip entries: sections');
    }
    const taken = new Map<number, Skips>();
    let at = 0;
    for (let row = 0; row < table.length; row += SAVED_FIELDS) {
      // The fields in SAVED_FIELDS order.
      const field = (k: number) => table[row + k] as number;
      const id = idOf(field(0));
      const list: Skips = {
        // Views of the sections (a snapshot's, the index's to keep): a list's entries are
        // copied out only when it grows past them.
        offsets: offsets.subarray(at, at + field(1)),
        before: before.subarray(at, at + field(1)),
        entries: field(1),
        covered: field(2),
        last: field(3),
        since: field(4),
        maxDoubled: field(5),
        minLength: field(6),
      };
      const end = at + list.entries;
      const ok =
        id >= 0 &&
        !taken.has(id) &&
        list.entries >= 1 &&
        end <= offsets.length &&
        list.covered <= (lists.used[id] ?? -1) &&
        list.last < rows &&
        list.since >= 0 &&
        list.since <= this.every &&
        list.maxDoubled >= 0 &&
        list.minLength >= 0 &&
        ascending(offsets, before, at, end, list.covered, list.last);
      if (!ok) throw new SkipEntriesError('skip entries: a list');
      taken.set(id, list);
      at = end;
    }
    if (at !== offsets.length) throw new SkipEntriesError('skip entries: sections');
    this.skips.clear();
    for (const [id, s] of taken) this.skips.set(id, s);
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
    // Sized from the list's bytes at first, for up to one posting a byte: a posting takes one to
    // two bytes, so up to half of the entries would stay empty.
    if (skips.offsets.length > skips.entries * 1.25 + 16) this.resize(skips, skips.entries + 1);
    return skips;
  }

  private grow(skips: Skips): void {
    this.resize(skips, Math.ceil(skips.offsets.length * 1.5) + 1);
  }

  /** Room for `size` entries (at least the entries made). */
  private resize(skips: Skips, size: number): void {
    const offsets = new Int32Array(size);
    offsets.set(skips.offsets.subarray(0, skips.entries));
    const before = new Int32Array(size).fill(-1);
    before.set(skips.before.subarray(0, skips.entries));
    skips.offsets = offsets;
    skips.before = before;
  }
}

/**
 * Whether entries [from, to) can be a list's: the first at its start (no row before), then
 * offsets within the bytes covered and rows within the last, both rising.
 */
function ascending(
  offsets: Int32Array,
  before: Int32Array,
  from: number,
  to: number,
  covered: number,
  last: number,
): boolean {
  if (offsets[from] !== 0 || before[from] !== -1) return false;
  for (let i = from + 1; i < to; i++) {
    const offset = offsets[i] as number;
    const row = before[i] as number;
    if (offset <= (offsets[i - 1] as number) || offset >= covered) return false;
    if (row <= (before[i - 1] as number) || row > last) return false;
  }
  return true;
}

/** A position in one lexeme's list that jumps through the list's skip entries. */
export class SkipCursor extends PostingCursor {
  private entry = 0;

  constructor(
    bytes: Uint8Array,
    private readonly start: number,
    used: number,
    private readonly skips: Skips | null,
  ) {
    super(bytes, start, start + used);
    this.next();
  }

  /** Moves to the first posting at or after `target`, jumping through the skip entries. */
  seek(target: number): void {
    if (this.row >= target) return;
    const skips = this.skips;
    if (skips !== null) {
      // The last entry before `target`: galloping from the last jump's (targets only rise, and
      // are mostly in the same or a near block), then a binary search.
      const before = skips.before;
      const last = skips.entries - 1;
      let lo = this.entry;
      let step = 1;
      while (lo + step <= last && (before[lo + step] as number) < target) {
        lo += step;
        step *= 2;
      }
      let hi = Math.min(last, lo + step - 1);
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if ((before[mid] as number) < target) lo = mid;
        else hi = mid - 1;
      }
      this.entry = lo;
      const at = this.start + (skips.offsets[lo] as number);
      if (at > this.at) {
        this.at = at;
        this.row = skips.before[lo] as number;
        this.next();
      }
    }
    while (this.row < target) this.next();
  }
}
