/**
 * The byte encoding of one lexeme's posting list in the keyword index (keyword-store.ts): per
 * posting, the gap from the previous row number (the first from -1) and the row's doubled
 * weighted count, as unsigned LEB128 varints. The gap is shifted left by one and its low bit
 * set when the count is 2 (the word once in the content, most postings), which then takes no
 * byte of its own: Lucene's trick for freq = 1 in its VInt postings. A posting of a common word
 * takes one byte, where an Int32 row and a Uint16 count would take six.
 *
 * Rows ascend within a list (they are added in row order, and compaction keeps the order), so
 * gaps are ≥ 1. The term-at-a-time loops in keyword-index.ts decode inline (a call per posting
 * costs more than the decoding); `forEachPosting` is their reference, property-tested against
 * `encodePostings` through `decodePostings`, and what compaction uses. `PostingCursor` walks a
 * list a posting at a time (the document-at-a-time search, skip entries).
 *
 * Not a library: npm's `varint` decodes one number per call with its length in a module-level
 * property, and has no place for the flag; the loops here are a few lines each.
 */

/** Row numbers stay below this: a gap shifted left by one then fits a positive int32. */
export const MAX_ROWS = 2 ** 30;

/** The most bytes one posting takes: a gap below 2^31 (5 bytes) and a count below 2^16 (3). */
export const MAX_POSTING_BYTES = 8;

/**
 * Writes one posting at `at` (room for MAX_POSTING_BYTES is the caller's) and returns the
 * position after it. `gap` ≥ 1, `doubled` in [1, 0xffff].
 */
export function writePosting(bytes: Uint8Array, at: number, gap: number, doubled: number): number {
  let v = doubled === 2 ? gap * 2 + 1 : gap * 2;
  while (v >= 0x80) {
    bytes[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  bytes[at++] = v;
  if (doubled !== 2) {
    let c = doubled;
    while (c >= 0x80) {
      bytes[at++] = (c & 0x7f) | 0x80;
      c >>>= 7;
    }
    bytes[at++] = c;
  }
  return at;
}

/** A list's bytes for rows (ascending, from 0) and their doubled counts. */
export function encodePostings(rows: ArrayLike<number>, counts: ArrayLike<number>): Uint8Array {
  const bytes = new Uint8Array(rows.length * MAX_POSTING_BYTES);
  let at = 0;
  let last = -1;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as number;
    if (!(row > last) || row >= MAX_ROWS) throw new RangeError(`posting row ${row} after ${last}`);
    at = writePosting(bytes, at, row - last, counts[i] as number);
    last = row;
  }
  return bytes.slice(0, at);
}

/**
 * Calls `visit(row, doubled)` for each posting in the first `length` bytes of a list, in order.
 * The position has moved past a posting before its visit, so a visit may write the list in place
 * behind it (compaction, keyword-store.ts).
 */
export function forEachPosting(
  bytes: Uint8Array,
  length: number,
  visit: (row: number, doubled: number) => void,
): void {
  const cursor = new PostingCursor(bytes, 0, length);
  for (;;) {
    cursor.next();
    if (cursor.row === END) return;
    visit(cursor.row, cursor.doubled);
  }
}

/** The rows and doubled counts of the first `length` bytes of a list. */
export function decodePostings(
  bytes: Uint8Array,
  length = bytes.length,
): { rows: number[]; counts: number[] } {
  const rows: number[] = [];
  const counts: number[] = [];
  forEachPosting(bytes, length, (row, doubled) => {
    rows.push(row);
    counts.push(doubled);
  });
  return { rows, counts };
}

/** Row of a cursor past its list's end. */
export const END = 0x7fffffff;

/**
 * A position in a list: the posting it is at (`row`, END past the end, and its `doubled` count)
 * and the byte after that posting (`at`), up to `end`.
 */
export class PostingCursor {
  doubled = 0;

  constructor(
    readonly bytes: Uint8Array,
    /** The byte the next posting starts at. */
    public at: number,
    readonly end: number,
    /** The row of the posting before `at` (-1 at a list's start). */
    public row = -1,
  ) {}

  /** Moves to the next posting. */
  next(): void {
    const bytes = this.bytes;
    let p = this.at;
    if (p >= this.end) {
      this.row = END;
      return;
    }
    let b = bytes[p++] as number;
    let v = b & 0x7f;
    for (let shift = 7; b >= 0x80; shift += 7) {
      b = bytes[p++] as number;
      v |= (b & 0x7f) << shift;
    }
    this.row += v >>> 1;
    let doubled = 2;
    if ((v & 1) === 0) {
      b = bytes[p++] as number;
      doubled = b & 0x7f;
      for (let shift = 7; b >= 0x80; shift += 7) {
        b = bytes[p++] as number;
        doubled |= (b & 0x7f) << shift;
      }
    }
    this.doubled = doubled;
    this.at = p;
  }
}
