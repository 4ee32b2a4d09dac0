/**
 * What a line of a PDF page is, beyond its size: a printed page number, a table-of-contents or
 * index entry, or a numbered section title (`3.1 Top-level structure`). Pure, on text and lines;
 * `layout.ts` applies it.
 */
import { topDown, type Line } from './lines.js';

/** A roman numeral up to 399 (front matter is numbered i, ii, iii…); not words like `civil`. */
const ROMAN = /^(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})$/i;

/** A printed page number on its own: `3`, `iii`, `Page 3`, `- 3 -`, `3 of 10`, `3/10`. */
export function isPageNumber(text: string): boolean {
  const t = text.trim();
  const m = /^(?:page\s+)?(\S+?)(?:\s*(?:of|\/)\s*\d{1,5})?$/i.exec(t);
  const n = m?.[1] ?? '';
  return /^\d{1,5}$/.test(n) || ROMAN.test(n) || /^[-–—]\s*\d{1,5}\s*[-–—]$/.test(t);
}

/**
 * Drops a page number standing as the page's first or last line (the printed folio a running
 * footer check missed: on too few pages, or roman front matter).
 */
export function dropPageNumbers(lines: readonly Line[]): Line[] {
  const sorted = [...lines].sort(topDown);
  const edges = new Set([sorted[0], sorted.at(-1)].filter((l) => l && isPageNumber(l.text)));
  return edges.size === 0 ? [...lines] : lines.filter((l) => !edges.has(l));
}

/** Four or more leader dots, then (at the end, or before a stray letter) a page number or nothing. */
const LEADER = /(?:[.·…]\s?){4,}\s*(?:(?:\d{1,5}|[ivxlc]{1,7})\b.{0,3})?$/iu;

/** A table-of-contents or index entry: a title, a dot leader, a page number. */
export function isTocEntry(text: string): boolean {
  return LEADER.test(text);
}

/** An index entry: a term, then page numbers (`hash functions, 12, 15–17`). */
const INDEX_ENTRY = /,\s*\d{1,4}(?:\s*[-–]\s*\d{1,4})?(?:\s*,\s*\d{1,4}(?:\s*[-–]\s*\d{1,4})?)*$/;

/** Whether a line is an index entry: a term, then page numbers after a comma. */
export function isIndexEntry(text: string): boolean {
  return INDEX_ENTRY.test(text);
}

/**
 * A TOC entry with its leader as one ellipsis: `7.1 Hash functions … 8`. The dots are no words to
 * search or embed (a contents page was half dots); the title and page number are, and the one `…`
 * still tells the chunker the line is an entry (chunk-sections.ts marks such chunks 'toc').
 */
export function tocEntry(text: string): string {
  return text.replace(/\s*(?:[.·…]\s?){4,}\s*/u, ' … ').trim();
}

/**
 * A definition's prototype with its category tag at the end, where a wrapped prototype printed it
 * at the end of its first line: `int f (int a, [Function] char *b)` → `int f (int a, char *b)
 * [Function]`.
 */
export function tagLast(text: string): string {
  const m = / (\[\p{L}[\p{L} -]{0,30}\])(?= \S)/u.exec(text);
  if (m === null) return text;
  return `${text.slice(0, m.index)}${text.slice(m.index + m[0].length)} ${m[1] ?? ''}`;
}

/**
 * The depth of a numbered section title (`3` → 1, `3.1` → 2, `3.1.4.` → 3), or 0 when the text
 * is not one: a number of at most 3 levels of 1–2 digits, then a title that starts like one and
 * does not end like a sentence, short enough for a heading.
 */
export function sectionDepth(text: string): number {
  const m = /^(\d{1,2}(?:\.\d{1,2}){0,5})\.?\s+(\S.*)$/u.exec(text.trim());
  const title = m?.[2] ?? '';
  if (m === null || title.length > 100 || isTocEntry(text)) return 0;
  if (!/^[\p{Lu}\p{Lt}_`'"‘“(]|^\p{Ll}\w*[_(]/u.test(title) || /[.,;:]$/.test(title)) return 0;
  return (m[1] ?? '').split('.').length;
}

/**
 * Heading levels of numbered titles: learnt from the numbered titles the font size made headings
 * (`## 2.1`, `### 3.1.1` in one manual, `# 1` … in another), so a subsection only its number
 * shows (`7.1.1.2 SHA224`, set a little larger than the text) goes one level below its parent.
 */
export class NumberedLevels {
  private readonly byDepth = new Map<number, number>();

  /** A size-detected heading: remember the level its numbering depth got. */
  learn(text: string, level: number): void {
    const depth = sectionDepth(text);
    if (depth > 0 && !this.byDepth.has(depth)) this.byDepth.set(depth, level);
  }

  /** The level for a numbered title of this depth (1–6). */
  level(depth: number): number {
    let best: [number, number] | undefined; // [depth, level] of the nearest known depth
    for (const [d, l] of this.byDepth)
      if (best === undefined || Math.abs(d - depth) < Math.abs(best[0] - depth)) best = [d, l];
    const level = best === undefined ? depth : best[1] + depth - best[0];
    return Math.min(6, Math.max(1, level));
  }
}
