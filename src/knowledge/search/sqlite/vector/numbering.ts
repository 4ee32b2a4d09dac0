/**
 * Strings numbered in the order they are first seen (document ids, project keys): the in-process
 * indexes keep a number per row in a typed array instead of a string per row.
 */
export class Numbering {
  private readonly numbers = new Map<string, number>();
  private readonly ids: string[] = [];

  /** Numbers in use: every number is below this. */
  get size(): number {
    return this.ids.length;
  }

  /** The number of `id`, given one when it has none. */
  number(id: string): number {
    let n = this.numbers.get(id);
    if (n === undefined) {
      n = this.ids.length;
      this.numbers.set(id, n);
      this.ids.push(id);
    }
    return n;
  }

  find(id: string): number | undefined {
    return this.numbers.get(id);
  }

  /** The string of a number ('' for none). */
  id(n: number): string {
    return this.ids[n] ?? '';
  }

  /** The strings by number (a copy). */
  list(): string[] {
    return this.ids.slice();
  }

  /** Numbered in order (a fresh Numbering's numbers are their indexes). */
  static of(ids: readonly string[]): Numbering {
    const numbering = new Numbering();
    for (const id of ids) numbering.number(id);
    return numbering;
  }
}
