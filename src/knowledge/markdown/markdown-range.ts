/**
 * Pure helpers of the markdown route: a page range or a chunk range of a document's converted
 * markdown, cut to a character budget. Pages follow the converter's markers (contract.ts): text
 * before the first marker is page 1, as the chunker counts it.
 */
import { PAGE_MARKER_PATTERN } from '../../converter/contract.js';

/** Where each page starts in the markdown: `starts[i]` is the offset of page `i + 1`'s text. */
export interface PageIndex {
  /** Number of pages; null when the markdown has no page markers (an unpaged format). */
  pages: number | null;
  /** Offset where page n starts (its marker line), for n = 1..pages; starts[0] is 0. */
  starts: number[];
}

/** Finds the page markers of `markdown` (each on its own line). */
export function pageIndex(markdown: string): PageIndex {
  const starts: number[] = [0];
  let seen = false;
  let lineStart = 0;
  while (lineStart <= markdown.length) {
    const newline = markdown.indexOf('\n', lineStart);
    const lineEnd = newline === -1 ? markdown.length : newline;
    const line = markdown.slice(lineStart, lineEnd).replace(/\r$/, '');
    const match = PAGE_MARKER_PATTERN.exec(line);
    if (match !== null) {
      const page = Number(match[1]);
      // Page 1 (its marker, or text before any marker) starts at 0; later pages at their marker.
      if (page > 1) starts[page - 1] ??= lineStart;
      seen = true;
    }
    if (newline === -1) break;
    lineStart = newline + 1;
  }
  if (!seen) return { pages: null, starts: [0] };
  // A converter that skipped a number still yields a contiguous index: a missing page starts
  // where the next present one does.
  for (let i = starts.length - 1; i > 0; i--) starts[i] ??= starts[i + 1] ?? markdown.length;
  return { pages: starts.length, starts };
}

/** The [start, end) offsets of pages fromPage..toPage (1-based, inclusive, within 1..pages). */
export function pageRange(index: PageIndex, length: number, fromPage: number, toPage: number) {
  const start = index.starts[fromPage - 1] ?? length;
  const end = index.starts[toPage] ?? length;
  return { start, end };
}

/**
 * Cuts `text` to at most `maxChars` UTF-16 units, at the last line end (else space) within the
 * budget when one lies in its second half, never inside a surrogate pair.
 */
export function cutToBudget(text: string, maxChars: number): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  let end = maxChars;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  const head = text.slice(0, end);
  const line = head.lastIndexOf('\n');
  const space = head.lastIndexOf(' ');
  const cut = line >= end / 2 ? line : space >= end / 2 ? space : end;
  return { text: text.slice(0, cut).trimEnd(), truncated: true };
}
