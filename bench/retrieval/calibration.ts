/** The minScore calibration table: what a threshold keeps of answerable questions and drops of the rest. */
import { percentile } from './metrics.js';

export interface CalibrationSample {
  /** The top hit's score of each answerable question. */
  answerableTop: readonly number[];
  /** The top hit's score of each question without an answer in the corpus. */
  unanswerableTop: readonly number[];
  /** The score of the hit that answers, when it is in the top 10; null otherwise. */
  answerScore: readonly (number | null)[];
}

const THRESHOLDS = [
  0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.72, 0.74, 0.75, 0.76, 0.77, 0.78, 0.8, 0.82, 0.84, 0.86,
  0.88, 0.9, 0.92, 0.94,
];

/** Markdown lines: percentiles of the top scores, then threshold → kept / dropped shares. */
export function calibrationTable(sample: CalibrationSample): string[] {
  const pct = (x: number) => `${Math.round(x * 100)} %`;
  const share = (xs: readonly (number | null)[], keep: (x: number) => boolean) =>
    xs.filter((x) => x !== null && keep(x)).length / Math.max(1, xs.length);
  const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
  const a = sorted(sample.answerableTop);
  const u = sorted(sample.unanswerableTop);
  const lines = [
    `top score of answerable questions (${a.length}): p10 ${percentile(a, 0.1).toFixed(3)}, median ${percentile(a, 0.5).toFixed(3)}; ` +
      `of unanswerable ones (${u.length}): median ${percentile(u, 0.5).toFixed(3)}, p90 ${percentile(u, 0.9).toFixed(3)}`,
    '',
    '| minScore | answerable questions kept (top hit ≥ minScore) | answers kept (answering hit in top 10 and ≥ minScore) | unanswerable questions dropped (no hit left) |',
    '|---|---|---|---|',
  ];
  for (const t of THRESHOLDS) {
    lines.push(
      `| ${t.toFixed(2)} | ${pct(share(a, (x) => x >= t))} | ${pct(share(sample.answerScore, (x) => x >= t))} | ${pct(share(u, (x) => x < t))} |`,
    );
  }
  return lines;
}
