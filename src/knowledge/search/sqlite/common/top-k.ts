/**
 * A bounded heap that keeps the `size` best (score, row) pairs seen: higher score first, and on
 * equal scores the lower row (FTS5 and SQLite order ties by rowid). The root is the worst kept.
 */
export class TopK {
  private readonly scores: Float64Array;
  private readonly rows: Int32Array;
  length = 0;

  constructor(private readonly size: number) {
    this.scores = new Float64Array(size);
    this.rows = new Int32Array(size);
  }

  /**
   * The lowest kept score once full, else -Infinity. A caller pushing rows in ascending order
   * may skip any score not above it: on a tie the earlier (kept) row wins.
   */
  get floor(): number {
    return this.length < this.size ? Number.NEGATIVE_INFINITY : (this.scores[0] ?? 0);
  }

  /** Whether slot i holds a worse pair than (score, row). */
  private worseAt(i: number, score: number, row: number): boolean {
    const s = this.scores[i] ?? 0;
    return s < score || (s === score && (this.rows[i] ?? 0) > row);
  }

  push(score: number, row: number): void {
    if (this.size === 0) return;
    const s = this.scores;
    const r = this.rows;
    if (this.length < this.size) {
      // Sift up: the new pair rises above every parent that is better than it.
      let i = this.length++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (this.worseAt(parent, score, row)) break;
        s[i] = s[parent] ?? 0;
        r[i] = r[parent] ?? 0;
        i = parent;
      }
      s[i] = score;
      r[i] = row;
      return;
    }
    if (!this.worseAt(0, score, row)) return;
    // Replace the root and sift down below every child that is worse than the new pair.
    let i = 0;
    const n = this.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.worseAt(right, s[left] ?? 0, r[left] ?? 0) ? right : left;
      if (!this.worseAt(child, score, row)) break;
      s[i] = s[child] ?? 0;
      r[i] = r[child] ?? 0;
      i = child;
    }
    s[i] = score;
    r[i] = row;
  }

  /** The kept pairs, best first. */
  sorted(): { row: number; score: number }[] {
    const out: { row: number; score: number }[] = [];
    for (let i = 0; i < this.length; i++)
      out.push({ row: this.rows[i] ?? 0, score: this.scores[i] ?? 0 });
    return out.sort((a, b) => b.score - a.score || a.row - b.row);
  }

  /** The kept rows (any order). */
  keptRows(): Int32Array {
    return this.rows.subarray(0, this.length);
  }
}

/**
 * The `keep`-th best of some lower bounds (-Infinity when there are fewer): whatever has an upper
 * bound below it is outscored by `keep` others.
 */
export function keepFloor(lower: ArrayLike<number>, keep: number): number {
  if (keep <= 0 || lower.length < keep) return Number.NEGATIVE_INFINITY;
  return Float64Array.from(lower).sort()[lower.length - keep] as number;
}
