/**
 * Chunk id → row of a vector index (vector-index.ts): open addressing in one Int32Array of rows,
 * the ids themselves being the index's own (`RowIds`, chunk-ids.ts: compared and hashed where
 * they are kept), so an entry costs 4–8 bytes instead of a Map entry's ~40 (40 MB at a million
 * chunks) and nothing for the collector to walk.
 *
 * Linear probing on a 32-bit FNV-1a hash of the id's characters (`idHash`); a deleted entry
 * leaves a tombstone until the table is rebuilt (when it fills, or by the index after a
 * compaction).
 */
import { idHash as hash } from '../common/chunk-ids.js';

const EMPTY = -1;
const DELETED = -2;

/** The ids rows hold now (the table compares them on every look-up). */
export interface RowIds {
  /** Whether row `row` holds `id`. */
  equals(row: number, id: string): boolean;
  /** `idHash` of the id row `row` holds. */
  hashAt(row: number): number;
}

export class IdTable {
  private slots = new Int32Array(1024).fill(EMPTY);
  /** Live entries, and slots taken (live and deleted). */
  size = 0;
  private taken = 0;

  constructor(private readonly ids: RowIds) {}

  get(id: string): number | undefined {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = hash(id) & mask; ; i = (i + 1) & mask) {
      const row = slots[i] as number;
      if (row === EMPTY) return undefined;
      if (row !== DELETED && this.ids.equals(row, id)) return row;
    }
  }

  /** Adds `id` at `row` (which must hold `id` already); the id must not be in the table. */
  add(id: string, row: number): void {
    this.insert(hash(id), row);
  }

  /** Adds `row` (holding an id not in the table) under its id's hash. */
  addRow(row: number): void {
    this.insert(this.ids.hashAt(row), row);
  }

  private insert(hashed: number, row: number): void {
    if ((this.taken + 1) * 2 > this.slots.length) this.rebuild(this.size + 1);
    const slots = this.slots;
    const mask = slots.length - 1;
    let i = hashed & mask;
    while ((slots[i] as number) >= 0) i = (i + 1) & mask;
    if (slots[i] === EMPTY) this.taken++;
    slots[i] = row;
    this.size++;
  }

  /** Removes `id` (while its row still holds it). */
  delete(id: string): void {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = hash(id) & mask; ; i = (i + 1) & mask) {
      const row = slots[i] as number;
      if (row === EMPTY) return;
      if (row !== DELETED && this.ids.equals(row, id)) {
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
    for (const row of old) if (row >= 0) this.addRow(row);
  }
}
