/**
 * Scores of one converter output against the truth: character error rate, heading recall,
 * table cells in the right row, tables found. Plain text (pdftotext) and markdown alike: the
 * markdown syntax is stripped before characters are compared.
 */
import { distance } from 'fastest-levenshtein';

/** Markdown or plain text → the words it shows, one space between them. */
export function plain(text: string): string {
  return text
    .replace(/<!-- page: \d+ -->/g, ' ')
    .replace(/\f/g, ' ')
    .split('\n')
    .filter((l) => !/^\s*\|?\s*:?-{3,}/.test(l) && !/^\s*```/.test(l))
    .map((l) => l.replace(/^\s*#{1,6}\s+/, '').replace(/^\s*[-*]\s+/, ''))
    .join('\n')
    .replace(/\s*\|\s*/g, ' ')
    .replace(/\\([\\`*_{}[\]()#+\-.!|<>~])/g, '$1')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Character error rate of `output` against `truth` (edit distance ÷ truth length). */
export function cer(truth: string, output: string): number {
  const t = plain(truth);
  return t.length === 0 ? 0 : distance(t, plain(output)) / t.length;
}

const key = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/** The markdown headings of `markdown` (text only). */
export function headingsOf(markdown: string): string[] {
  return [...markdown.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => m[1] ?? '');
}

/**
 * Share of `titles` that are a heading of `markdown`: a heading whose letters and digits equal the
 * title's, contain it, or make up most of it (an outline title may carry a number the page drops).
 */
export function headingRecall(markdown: string, titles: readonly string[]): number {
  const headings = headingsOf(markdown).map(key);
  const found = titles.filter((title) => {
    const t = key(title);
    return (
      t === '' ||
      headings.some((h) => h.includes(t) || (h.length >= 0.6 * t.length && t.includes(h)))
    );
  });
  return titles.length === 0 ? 1 : found.length / titles.length;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Share of table cells found on one line of the output together with at least one other cell of
 * their row and with no cell of another row: a row kept as a row (a GFM table row, or a line of
 * `pdftotext -layout`). Cells are unique within the truth.
 */
export function cellsInRow(output: string, tables: readonly string[][][]): number {
  const lines = output.split('\n');
  let right = 0;
  let total = 0;
  for (const table of tables) {
    const patterns = table.map((row) =>
      row.map((c) => new RegExp(`(?<![\\p{L}\\p{N}])${escapeRe(c)}(?![\\p{L}\\p{N}])`, 'u')),
    );
    table.forEach((row, r) => {
      total += row.length;
      let best = 0;
      for (const line of lines) {
        const mine = patterns[r]?.filter((p) => p.test(line)).length ?? 0;
        if (mine < 2 || mine <= best) continue;
        const others = patterns.some((ps, o) => o !== r && ps.some((p) => p.test(line)));
        if (!others) best = mine;
      }
      right += best;
    });
  }
  return total === 0 ? 1 : right / total;
}

/** How many GFM tables a markdown text has (a header row, then a `| --- |` line). */
export function tableCount(markdown: string): number {
  return [...markdown.matchAll(/^\|.*\|\n\|(?:\s*:?-{3,}:?\s*\|)+$/gm)].length;
}
