/**
 * Which texts the model's worker embeds together (pure). A batch is padded to its longest text,
 * and the worker computes every padded position, so texts of like length go together: of the
 * texts waiting longest (a window in arrival order, so that no text waits behind an endless stream
 * of longer ones), the longest are taken first, and a batch closes when its padded size would
 * pass the budget. Search queries go first, whatever waited before them: a query then waits for
 * at most the one batch the worker is computing, never for a whole document's.
 */

/** A text waiting to be embedded: its length (what padding costs) and whether it is a query. */
export interface Waiting {
  length: number;
  query: boolean;
}

export interface BatchLimits {
  /** Texts in one batch at most. */
  maxTexts: number;
  /** Padded size of one batch at most (texts × the longest one's length); one text may pass it. */
  maxPadded: number;
}

/** Documents considered for a batch: this many batches' worth of the oldest waiting texts. */
const WINDOW_BATCHES = 8;

/**
 * The indices (into `waiting`, in arrival order) of the next batch: the waiting queries if there
 * are any (up to `maxTexts`), else the longest of the oldest documents that fit the padded budget.
 * Empty when nothing waits.
 */
export function nextBatch(waiting: readonly Waiting[], limits: BatchLimits): number[] {
  const queries: number[] = [];
  for (let i = 0; i < waiting.length && queries.length < limits.maxTexts; i++) {
    if (waiting[i]?.query === true) queries.push(i);
  }
  const window = Math.min(waiting.length, limits.maxTexts * WINDOW_BATCHES);
  const pool = queries.length > 0 ? queries : Array.from({ length: window }, (_, i) => i);
  const order = pool.sort((a, b) => (waiting[b]?.length ?? 0) - (waiting[a]?.length ?? 0) || a - b);
  const batch: number[] = [];
  let longest = 0;
  for (const i of order) {
    const length = waiting[i]?.length ?? 0;
    longest = Math.max(longest, length);
    const padded = longest * (batch.length + 1);
    if (batch.length > 0 && (batch.length >= limits.maxTexts || padded > limits.maxPadded)) break;
    batch.push(i);
  }
  return batch;
}
