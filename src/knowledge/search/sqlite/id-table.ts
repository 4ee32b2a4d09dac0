/**
 * Chunk id → row of a vector index (vector-index.ts): open addressing in one Int32Array of rows,
 * the ids themselves being the index's own strings (`idOf(row)`), so an entry costs 4–8 bytes
 * instead of a Map entry's ~40 (40 MB at a million chunks) and nothing for the collector to walk.
 *
 * Linear probing on a 32-bit FNV-1a hash of the id's characters; a deleted entry leaves a
 * tombstone until the table is rebuilt (when it fills, or by the index after a compaction).
 */
const EMPTY = -1;
const DELETED = -2;

function hash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class IdTable {
  private slots = new Int32Array(1024).fill(EMPTY);
  /** Live entries, and slots taken (live and deleted). */
  size = 0;
  private taken = 0;

  /** `idOf(row)`: the id a row holds now (the table compares it on every look-up). */
  constructor(private readonly idOf: (row: number) => string) {}

  get(id: string): number | undefined {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = hash(id) & mask; ; i = (i + 1) & mask) {
      const row = slots[i] as number;
      if (row === EMPTY) return undefined;
      if (row !== DELETED && this.idOf(row) === id) return row;
    }
  }

  /** Adds `id` at `row` (`idOf(row)` must be `id` already); the id must not be in the table. */
  add(id: string, row: number): void {
    if ((this.taken + 1) * 2 > this.slots.length) this.rebuild(this.size + 1);
    const slots = this.slots;
    const mask = slots.length - 1;
    let i = hash(id) & mask;
    while ((slots[i] as number) >= 0) i = (i + 1) & mask;
    if (slots[i] === EMPTY) this.taken++;
    slots[i] = row;
    this.size++;
  }

  /** Removes `id` (while `idOf` still gives it for its row). */
  delete(id: string): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = hash(id) & mask; ; i = (i + 1) & mask) {
      const row = slots[i] as number;
      if (row === EMPTY) return;
      if (row !== DELETED && this.idOf(row) === id) {
        slots[i] = DELETED;
        this.size--;
        return;
      }
    }
  }

  /** Empties the table, sized for `rows` entries (the index adds them again). */
  clear(rows = 0): void {
    this.slots = new Int32Array(IdTable.sizeFor(rows)).fill(EMPTY);
    this.size = 0;
    this.taken = 0;
  }

  get byteLength(): number {
    return this.slots.byteLength;
  }

  private static sizeFor(entries: number): number {
    let size = 1024;
    while (size < entries * 2) size *= 2;
    return size;
  }

  /** The live entries again, in a table with room for `entries` (tombstones dropped). */
  private rebuild(entries: number): void {
    const old = this.slots;
    this.clear(Math.max(entries, this.size) * 2);
    for (const row of old) if (row >= 0) this.add(this.idOf(row), row);
  }
}
