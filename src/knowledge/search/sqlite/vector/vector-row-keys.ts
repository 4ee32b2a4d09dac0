/**
 * Which chunk each row of a vector index is (vector-index.ts), and where the vector table keeps
 * its exact vector: the rows' chunk ids (chunk-ids.ts), chunk id → row (id-table.ts), and each
 * row's rowid in the table (NaN: not known), where its vector is read first (vector-tables.ts).
 */
import { ChunkIds } from '../common/chunk-ids.js';
import { IdTable } from './id-table.js';

export class RowKeys {
  /** Row → chunk id; none for a deleted row (compacted away later). */
  private ids = new ChunkIds();
  private rowids: Float64Array = new Float64Array(0);
  private readonly rowOf = new IdTable({
    equals: (r, id) => this.ids.equals(r, id),
    hashAt: (r) => this.ids.hashAt(r),
  });

  /** Room for `capacity` rows, the first `count` kept. */
  reserve(capacity: number, count: number): void {
    this.ids.reserve(capacity);
    if (capacity <= this.rowids.length) return;
    const rowids = new Float64Array(capacity).fill(Number.NaN);
    rowids.set(this.rowids.subarray(0, count));
    this.rowids = rowids;
  }

  /** Whether row `r` is live (holds a chunk). */
  has(r: number): boolean {
    return this.ids.has(r);
  }

  /** The live row of a chunk, if any. */
  row(chunkId: string): number | undefined {
    return this.rowOf.get(chunkId);
  }

  /** Row `r` (reserved, new) is chunk `chunkId`, its vector at `rowid` in the table if known. */
  set(r: number, chunkId: string, rowid = Number.NaN): void {
    this.ids.set(r, chunkId);
    this.rowids[r] = rowid;
    this.rowOf.add(chunkId, r);
  }

  /** Row `r` is deleted; whether it was live. */
  kill(r: number): boolean {
    if (!this.ids.has(r)) return false;
    this.rowOf.delete(this.ids.get(r));
    this.ids.clear(r);
    return true;
  }

  /** A compaction starts: the id table is made again for `live` rows (`moved` adds them). */
  compacting(live: number): void {
    this.rowOf.clear(live);
  }

  /** In a compaction: live row `from` becomes row `to` (≤ `from`). */
  moved(from: number, to: number): void {
    if (to !== from) {
      this.ids.copy(from, to);
      this.rowids[to] = this.rowids[from] ?? Number.NaN;
    }
    this.rowOf.addRow(to);
  }

  /** The compaction kept `count` rows. */
  compacted(count: number): void {
    this.ids.truncate(count);
  }

  /** The chunk ids of rows. */
  idsOf(rows: readonly number[]): string[] {
    return rows.map((r) => this.ids.get(r));
  }

  /** The vector table rowids of rows (NaN: not known). */
  rowidsOf(rows: readonly number[]): Float64Array {
    return Float64Array.from(rows, (r) => this.rowids[r] ?? Number.NaN);
  }

  /** Whether a live row among the first `count` does not know its table rowid. */
  rowidsUnknown(count: number): boolean {
    for (let r = 0; r < count; r++) {
      if (this.ids.has(r) && Number.isNaN(this.rowids[r])) return true;
    }
    return false;
  }

  /**
   * Records that chunk `chunkId`'s vector is at `rowid` in the table, for a live row that did not
   * know; whether it was recorded. Reads check what they find there, so no answer changes.
   */
  learnRowid(chunkId: string, rowid: number): boolean {
    const r = this.rowOf.get(chunkId);
    if (r === undefined || !Number.isNaN(this.rowids[r])) return false;
    this.rowids[r] = rowid;
    return true;
  }

  /** The first `count` rows' keys, for a snapshot (the live objects: read, not kept). */
  state(count: number): { ids: ChunkIds; rowids: Float64Array } {
    return { ids: this.ids, rowids: this.rowids.subarray(0, count) };
  }

  /**
   * The keys of a snapshot's `count` rows (kept as they are with `owned`, else copied), with room
   * for `capacity`; the deleted rows counted in `dead`.
   */
  static restore(
    state: { ids: ChunkIds; rowids?: Float64Array | undefined },
    count: number,
    capacity: number,
    owned: boolean,
  ): { keys: RowKeys; dead: number } {
    const keys = new RowKeys();
    keys.ids = owned ? state.ids : state.ids.clone(count);
    if (owned && state.rowids !== undefined) keys.rowids = state.rowids;
    else {
      keys.rowids = new Float64Array(count).fill(Number.NaN);
      if (state.rowids !== undefined) keys.rowids.set(state.rowids.subarray(0, count));
    }
    keys.reserve(capacity, count);
    keys.rowOf.clear(count);
    let dead = 0;
    for (let r = 0; r < count; r++) {
      if (keys.ids.has(r)) keys.rowOf.addRow(r);
      else dead++;
    }
    return { keys, dead };
  }

  get byteLength(): number {
    return this.ids.byteLength + this.rowids.byteLength + this.rowOf.byteLength;
  }
}
