/**
 * The posting lists of the keyword index (keyword-store.ts), all of them in one byte arena
 * (each list encoded as keyword-postings.ts says): list `id` is `bytes[start[id], start[id] +
 * used[id])`, free to grow to `room[id]` bytes in place.
 *
 * One buffer and a few Int32 per lexeme, not a Uint8Array per lexeme: most lexemes of a large
 * corpus (names, numbers, codes) have one or two postings, two or three bytes, and a typed array
 * of their own cost ~200 bytes of object headers and allocator bookkeeping beside them — at 1M
 * chunks of the synthetic bench, more than all the lists' bytes.
 *
 * A list that outgrows its room moves to the arena's end with half as much room again; what it
 * left is reclaimed when the arena is full, by copying every list into a new arena, each with
 * half its size again as room, and a quarter of the whole free at the end. After a bulk load
 * (`repack()`), or when compaction left the arena a third empty, the lists are packed tight.
 */
import { MAX_POSTING_BYTES, writePosting } from './keyword-postings.js';

/** The smallest arena made (bytes). */
const MIN_ARENA = 1 << 16;
/** The free part of an arena made because it was full, as a fraction of what it holds. */
const ARENA_SLACK = 0.25;

export class PostingLists {
  bytes: Uint8Array = new Uint8Array(0);
  /** Bytes handed out (lists, their room, and room left by lists that moved); free beyond. */
  end = 0;
  start: Int32Array = new Int32Array(0);
  used: Int32Array = new Int32Array(0);
  room: Int32Array = new Int32Array(0);
  /** By lexeme id: the last row of its list (-1: none), where its next gap starts from. */
  last: Int32Array = new Int32Array(0);

  /** `minArena`: the smallest arena a repack with room makes (bytes); small in tests. */
  constructor(private readonly minArena = MIN_ARENA) {}

  /** Lexeme ids below this have a (maybe empty) list. */
  get capacity(): number {
    return this.start.length;
  }

  /** Makes lists for lexeme ids below `capacity`, empty. */
  reserve(capacity: number): void {
    if (capacity <= this.start.length) return;
    const grown = (old: Int32Array, fill: number): Int32Array => {
      const next = new Int32Array(capacity).fill(fill, old.length);
      next.set(old);
      return next;
    };
    this.start = grown(this.start, 0);
    this.used = grown(this.used, 0);
    this.room = grown(this.room, 0);
    this.last = grown(this.last, -1);
  }

  /** Appends a posting of `row` (above the list's last) with its doubled count. */
  append(id: number, row: number, doubled: number): void {
    const used = this.used[id] as number;
    const room = this.room[id] as number;
    if (used + MAX_POSTING_BYTES > room) {
      this.move(id, Math.max(used + MAX_POSTING_BYTES, Math.ceil(room * 1.5)));
    }
    const start = this.start[id] as number;
    const gap = row - (this.last[id] as number);
    this.used[id] = writePosting(this.bytes, start + used, gap, doubled) - start;
    this.last[id] = row;
  }

  /** Moves a list to the arena's end, with `room` bytes. */
  private move(id: number, room: number): void {
    if (this.end + room > this.bytes.length) this.repack(room, true);
    const from = this.start[id] as number;
    this.bytes.copyWithin(this.end, from, from + (this.used[id] as number));
    this.start[id] = this.end;
    this.room[id] = room;
    this.end += room;
  }

  /** The bytes the lists use. */
  liveBytes(): number {
    let live = 0;
    for (const used of this.used) live += used;
    return live;
  }

  /**
   * Copies the lists, packed, into a new arena with `extra` free bytes at its end. Without
   * `room` a list gets no room (after a bulk load, or when lists shrank); with it (the arena is
   * full) each list gets half its size again plus a posting's worth, and the arena a quarter of
   * the total free at its end, so that the next repack is far off.
   */
  repack(extra = 0, room = false): void {
    const roomOf = (used: number) => (room ? used + (used >> 1) + MAX_POSTING_BYTES : used);
    let total = extra;
    for (let id = 0; id < this.used.length; id++) {
      const used = this.used[id] as number;
      if (used > 0) total += roomOf(used);
    }
    const size = room ? Math.max(Math.ceil(total * (1 + ARENA_SLACK)), this.minArena) : total;
    const bytes = new Uint8Array(size);
    const old = this.bytes;
    let at = 0;
    for (let id = 0; id < this.start.length; id++) {
      const used = this.used[id] as number;
      const from = this.start[id] as number;
      // Most lists are a few bytes: a loop costs less than a view for `set`.
      if (used < 64) for (let i = 0; i < used; i++) bytes[at + i] = old[from + i] as number;
      else bytes.set(old.subarray(from, from + used), at);
      const kept = used > 0 ? roomOf(used) : 0;
      this.start[id] = at;
      this.room[id] = kept;
      at += kept;
    }
    this.bytes = bytes;
    this.end = at;
  }

  /** Packs the lists when less than two thirds of the arena holds them (after a compaction). */
  packIfSparse(): void {
    if (this.liveBytes() * 3 < this.bytes.length * 2) this.repack();
  }

  /** Bytes held: the arena and the per-lexeme arrays. */
  get byteLength(): number {
    return (
      this.bytes.byteLength +
      this.start.byteLength +
      this.used.byteLength +
      this.room.byteLength +
      this.last.byteLength
    );
  }
}
