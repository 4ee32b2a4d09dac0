/**
 * Scores of a converter's pages and glyphs, for the PDF comparison: page accuracy against
 * `pdftotext`'s pages, pages with text that come out empty, and leaked glyphs (ligatures,
 * double-encoded UTF-8, TeX's `©c`). Pure, on text.
 */
import { plain } from './metrics.js';

/** A markdown output's pages (1-based index 0 = page 1), split at its page markers. */
export function markdownPages(markdown: string): string[] {
  return markdown
    .split(/^<!-- page: \d+ -->$/m)
    .slice(1)
    .map((p) => p.trim());
}

/** Lower-case words of two characters or more: what a page's text is compared by. */
const words = (text: string) =>
  (plain(text)
    .toLowerCase()
    .match(/[\p{L}\p{N}]{2,}/gu) ?? []) as string[];

function counts(list: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const w of list) out.set(w, (out.get(w) ?? 0) + 1);
  return out;
}

/**
 * Share of the words of `pages` (ours) printed on the same page of `truth` (pdftotext's pages,
 * split at form feeds), counted with multiplicity: text filed under the wrong page lowers it;
 * running headers and folios we drop do not (they are not in ours).
 */
export function pageAccuracy(pages: readonly string[], truth: readonly string[]): number {
  let right = 0;
  let total = 0;
  pages.forEach((page, i) => {
    const want = counts(words(truth[i] ?? ''));
    for (const [w, n] of counts(words(page))) {
      total += n;
      right += Math.min(n, want.get(w) ?? 0);
    }
  });
  return total === 0 ? 1 : right / total;
}

/**
 * Pages with text in `truth` (20 words or more: not a lone folio or header) that are empty in
 * `pages`, 1-based.
 */
export function emptiedPages(pages: readonly string[], truth: readonly string[]): number[] {
  return truth.flatMap((t, i) =>
    words(t).length >= 20 && words(pages[i] ?? '').length === 0 ? [i + 1] : [],
  );
}

/** Glyphs that should never reach the text: ligatures, double-encoded UTF-8, TeX's `©c`. */
const LEAKS = /[\uFB00-\uFB06]|Ã|Â[\u0080-\u00BF]|â€|©c(?![\p{L}\p{N}])/gu;

/** How many leaked glyphs `text` has. */
export function glyphLeaks(text: string): number {
  return text.match(LEAKS)?.length ?? 0;
}

/** The headings of `markdown` whose text contains a cell of `tables` (a row made a heading). */
export function rowHeadings(markdown: string, tables: readonly string[][][]): string[] {
  const key = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
  const cells = tables
    .flat(2)
    .map(key)
    .filter((c) => c.length >= 3);
  return [...markdown.matchAll(/^#{1,6}\s+(.+)$/gm)]
    .map((m) => m[1] ?? '')
    .filter((h) => cells.some((c) => key(h).includes(c)));
}
