/** Ranking metrics with binary relevance (BEIR conventions) and latency percentiles. */

export interface QueryMetrics {
  /** 1 when the first hit is relevant. */
  hit1: number;
  /** 1 when one of the first three hits is relevant. */
  hit3: number;
  ndcg10: number;
  recall5: number;
  recall10: number;
  mrr10: number;
}

/** `ranked`: distinct ids, best first. */
export function rankMetrics(
  ranked: readonly string[],
  relevant: ReadonlySet<string>,
): QueryMetrics {
  const top = ranked.slice(0, 10);
  let dcg = 0;
  top.forEach((d, i) => {
    if (relevant.has(d)) dcg += 1 / Math.log2(i + 2);
  });
  let idcg = 0;
  for (let i = 0; i < Math.min(relevant.size, 10); i++) idcg += 1 / Math.log2(i + 2);
  const hits = (k: number) => top.slice(0, k).filter((d) => relevant.has(d)).length;
  const first = top.findIndex((d) => relevant.has(d));
  const n = Math.max(1, relevant.size);
  return {
    hit1: first === 0 ? 1 : 0,
    hit3: first >= 0 && first < 3 ? 1 : 0,
    ndcg10: idcg === 0 ? 0 : dcg / idcg,
    recall5: hits(5) / n,
    recall10: hits(10) / n,
    mrr10: first < 0 ? 0 : 1 / (first + 1),
  };
}

export function meanMetrics(all: readonly QueryMetrics[]): QueryMetrics {
  const n = Math.max(1, all.length);
  const sum = (f: (m: QueryMetrics) => number) => all.reduce((s, m) => s + f(m), 0) / n;
  return {
    hit1: sum((m) => m.hit1),
    hit3: sum((m) => m.hit3),
    ndcg10: sum((m) => m.ndcg10),
    recall5: sum((m) => m.recall5),
    recall10: sum((m) => m.recall10),
    mrr10: sum((m) => m.mrr10),
  };
}

/** Nearest-rank percentile of an ascending array (0 when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
}

export function latencySummary(samples: readonly number[]): {
  p50: number;
  p95: number;
  p99: number;
} {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    p99: percentile(sorted, 0.99),
  };
}
