/**
 * The embedding worker's waiting line (pure): queries in arrival order ahead of indexing slices,
 * and every waiting query sent to the worker in one message.
 *
 * One message per query made the worker's throughput depend on the main thread's event loop:
 * each answer needs a turn of the loop before the next query is sent, so under load (hundreds of
 * concurrent retrievals) queries waited seconds in line, past the hybrid wait, while the worker
 * sat idle. A batch of every waiting query costs one round trip instead.
 */

/** A piece of one job: `texts` are the job's texts from `offset` on. */
export interface Slice<J> {
  job: J;
  offset: number;
  texts: string[];
  query: boolean;
}

export class SliceQueue<J> {
  private queries: Slice<J>[] = [];
  private documents: Slice<J>[] = [];

  get length(): number {
    return this.queries.length + this.documents.length;
  }

  /** Queues one job's slices: a query behind earlier queries, ahead of every indexing slice. */
  push(slices: readonly Slice<J>[]): void {
    for (const slice of slices) (slice.query ? this.queries : this.documents).push(slice);
  }

  /**
   * The next message's slices: the waiting queries, oldest first, up to `maxTexts` texts and
   * `maxChars` characters (always at least one); with no query waiting, one indexing slice.
   */
  take(maxTexts: number, maxChars: number): Slice<J>[] {
    if (this.queries.length === 0) {
      const slice = this.documents.shift();
      return slice === undefined ? [] : [slice];
    }
    let texts = 0;
    let chars = 0;
    let n = 0;
    for (const slice of this.queries) {
      const size = slice.texts.reduce((sum, t) => sum + t.length, 0);
      if (n > 0 && (texts + slice.texts.length > maxTexts || chars + size > maxChars)) break;
      texts += slice.texts.length;
      chars += size;
      n++;
    }
    return this.queries.splice(0, n);
  }

  /** Removes a job's waiting slices (it was answered, failed or abandoned). */
  drop(job: J): void {
    this.queries = this.queries.filter((s) => s.job !== job);
    this.documents = this.documents.filter((s) => s.job !== job);
  }

  /** Every job with a waiting slice. */
  jobs(): Set<J> {
    return new Set([...this.queries, ...this.documents].map((s) => s.job));
  }
}
