/**
 * A PDF's pages of lines → markdown. Pure, like `lines.ts`: running headers and footers are
 * dropped across pages, and printed page numbers; headings come from font size against the body
 * text, or from a section number (`3.1 …`, structure.ts); a title wrapped over lines is one
 * heading; table-of-contents and index entries (dot leaders) are never headings and keep a line
 * each; paragraphs come from line spacing, indents and bullets, with line-end hyphenation repaired.
 */
import { escapeParagraph, joinLines } from '../paragraphs.js';
import { letters, median, readingOrder, topDown, type Line } from './lines.js';
import { extractTables } from './tables.js';
import { combineAccents, escapeMarkup, keepsHyphen, vocabulary } from './text-fixes.js';
import { outlineHeadings, type OutlineEntry } from './outline.js';
import {
  dropPageNumbers,
  isTocEntry,
  NumberedLevels,
  sectionDepth,
  tocEntry,
} from './structure.js';

/** Line size ≥ body size × this: a heading. */
const HEADING_RATIO = 1.2;
const BULLET = /^[•◦▪‣●■·]\s*/u;

/** One page as read: lines of its text layer to lay out, or the markdown OCR made of it. */
export type PageContent =
  { kind: 'text'; lines: Line[]; outline?: OutlineEntry[] } | { kind: 'ocr'; markdown: string };

/**
 * Running headers and footers: the same text at the same height at the top or bottom of a page,
 * in body size or smaller (a heading may repeat: "Chapter 1", "Chapter 2"). Numbers in them may
 * differ only as page numbers do: by the page's index (`Page 3 of 9`, `- 4 -`). "Total 120" on
 * one page and "Total 95" on the next are content.
 */
function repeatKey(line: Line): string {
  const text = line.text.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ');
  return `${text}@${Math.round(line.y / 2)}`;
}

type Sighting = { page: number; numbers: number[] };

/** Whether each number in the sightings stays the same or moves with the page (a page number). */
function isRunning(seen: readonly Sighting[]): boolean {
  const [first] = seen;
  if (first === undefined) return false;
  return first.numbers.every((n, k) => {
    const at = (s: Sighting) => s.numbers[k] ?? NaN;
    return seen.every((s) => at(s) === n) || seen.every((s) => at(s) - s.page === n - first.page);
  });
}

/** Drops the lines that repeat as a running header or footer. */
export function dropRepeated(pages: Line[][], body: number): Line[][] {
  const edges = pages.map((lines) => {
    const sorted = [...lines].sort(topDown);
    const edge = [...sorted.slice(0, 2), ...sorted.slice(-2)];
    return edge.filter((l) => l.size < body * HEADING_RATIO);
  });
  const seen = new Map<string, Sighting[]>();
  edges.forEach((edge, page) => {
    for (const l of edge) {
      const list = seen.get(repeatKey(l)) ?? [];
      if (list.at(-1)?.page !== page)
        list.push({ page, numbers: (l.text.match(/\d+/g) ?? []).map(Number) });
      seen.set(repeatKey(l), list);
    }
  });
  // On most pages of a short document; on 3 pages of a longer one (chapter titles as headers).
  const needed = Math.min(3, Math.max(2, Math.ceil(pages.length / 2)));
  const running = new Set(
    [...seen].filter(([, list]) => list.length >= needed && isRunning(list)).map(([key]) => key),
  );
  return pages.map((lines, i) =>
    lines.filter((l) => !(edges[i]?.includes(l) && running.has(repeatKey(l)))),
  );
}

/** The body text size: the size most characters are set in. */
function bodySize(pages: readonly Line[][]): number {
  const chars = new Map<number, number>();
  for (const line of pages.flat()) {
    const size = Math.round(line.size * 2) / 2;
    chars.set(size, (chars.get(size) ?? 0) + line.text.length);
  }
  return [...chars].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
}

/** Size-based heading level of a line (0: not a heading); `levels` maps sizes to `#` counts. */
function sizeLevel(l: Line, body: number, levels: Map<number, number>): number {
  return l.size >= body * HEADING_RATIO && letters(l.text) >= 2 && !isTocEntry(l.text)
    ? (levels.get(Math.round(l.size * 2) / 2) ?? 3)
    : 0;
}

/**
 * Lines that are numbered subsection titles by their number alone (`7.1.1.2 SHA224`, set only a
 * little larger than the text): depth ≥ 2, not smaller than the text, not running to the right
 * margin (a wrapped sentence that starts with `2.5 Mbit` does), and set apart: larger than the
 * text, first on the page, or after a wider gap than the lines of a paragraph.
 */
function numberedTitles(lines: readonly Line[], body: number, leading: number): Set<Line> {
  const right = Math.max(...lines.map((l) => l.x1));
  return new Set(
    lines.filter((l, i) => {
      const above = lines[i - 1];
      return (
        sectionDepth(l.text) >= 2 &&
        l.size >= 0.95 * body &&
        l.x1 < right - 2 * l.size &&
        (l.size >= 1.05 * body || above === undefined || above.y - l.y > 1.2 * leading)
      );
    }),
  );
}

/** One page's lines → markdown blocks. */
function pageToMarkdown(
  lines: readonly Line[],
  body: number,
  levels: Map<number, number>,
  numbered: NumberedLevels,
  entries: readonly OutlineEntry[] = [],
  words: ReadonlySet<string> = new Set(),
): string {
  const outline = outlineHeadings(lines, entries);
  const gaps = lines.flatMap((l, i) => {
    const gap = (lines[i - 1]?.y ?? Infinity) - l.y;
    return gap > 0.8 * body && gap < 3 * body ? [gap] : [];
  });
  const leading = median(gaps) ?? 1.2 * body;
  const titles = numberedTitles(lines, body, leading);
  const level = (l: Line) =>
    outline.get(l)?.level ??
    (titles.has(l) ? numbered.level(sectionDepth(l.text)) : sizeLevel(l, body, levels));
  const blocks: string[] = [];
  let para: Line[] = [];
  const flush = () => {
    const first = para[0];
    if (first === undefined) return;
    const text = escapeMarkup(
      joinLines(
        para.map((l) => l.text),
        (head, tail) => keepsHyphen(words, head, tail),
      ),
    );
    const h = level(first);
    if (first.table !== undefined) blocks.push(first.table);
    else if (isTocEntry(first.text)) blocks.push(escapeParagraph(tocEntry(text)));
    else if (h > 0 && text.length <= 200) blocks.push(`${'#'.repeat(h)} ${text}`);
    else if (BULLET.test(text)) blocks.push(`- ${text.replace(BULLET, '')}`);
    else blocks.push(escapeParagraph(text));
    para = [];
  };
  for (const line of lines) {
    const [first, prev] = [para[0], para.at(-1)];
    if (first !== undefined && prev !== undefined) {
      const [o, oPrev] = [outline.get(line), outline.get(prev)];
      if (line.table !== undefined || prev.table !== undefined) flush();
      else {
        // An outline title: a block of its own, its wrapped lines kept together.
        const ends =
          o?.first === true ||
          (oPrev !== undefined && o === undefined) ||
          (o === undefined &&
            oPrev === undefined &&
            endsParagraph(para, prev, line, { body, leading, titles, level }));
        if (ends) flush();
      }
    }
    para.push(line);
  }
  flush();
  return blocks.join('\n\n');
}

interface ParagraphRules {
  body: number;
  leading: number;
  titles: Set<Line>;
  level: (l: Line) => number;
}

/** Whether `line` starts a new block after the paragraph `para` (whose last line is `prev`). */
function endsParagraph(
  para: readonly Line[],
  prev: Line,
  line: Line,
  { body, leading, titles, level }: ParagraphRules,
): boolean {
  const first = para[0];
  if (first === undefined) return false;
  const gap = prev.y - line.y;
  const right = Math.max(...para.map((l) => l.x1));
  // The second line of a numbered title set larger than the text goes on the title.
  const titleGoesOn =
    titles.has(first) &&
    !titles.has(line) &&
    first.size >= 1.05 * body &&
    Math.abs(first.size - line.size) <= 0.05 * body;
  const heading = level(prev) > 0 && (level(line) > 0 || titleGoesOn);
  return (
    isTocEntry(prev.text) ||
    isTocEntry(line.text) ||
    titles.has(line) ||
    (!titleGoesOn && level(prev) !== level(line)) ||
    Math.abs(prev.size - line.size) > 0.15 * body ||
    gap <= 0 ||
    gap > 1.3 * Math.max(leading, prev.size) ||
    BULLET.test(line.text) ||
    // A heading's lines may be centred: its indents say nothing.
    (!heading && !BULLET.test(first.text) && line.x0 > prev.x0 + line.size) ||
    (para.length > 1 && /[.!?:]$/.test(prev.text) && prev.x1 < right - 3 * prev.size)
  );
}

/** Markdown of every page, with the text-layer pages laid out against each other. */
export function layoutPages(pages: readonly PageContent[]): string[] {
  const textPages = pages.flatMap((p) => (p.kind === 'text' ? [p.lines] : []));
  const body = bodySize(textPages);
  const kept = dropRepeated(textPages, body)
    .map(dropPageNumbers)
    .map((lines) => lines.map((l) => ({ ...l, text: combineAccents(l.text) })));
  const words = vocabulary(kept.flat().map((l) => l.text));
  const headingSizes = [
    ...new Set(
      kept
        .flat()
        .filter((l) => l.size >= body * HEADING_RATIO)
        .map((l) => Math.round(l.size * 2) / 2),
    ),
  ].sort((a, b) => b - a);
  const levels = new Map(headingSizes.map((s, i) => [s, Math.min(i + 1, 3)]));
  const numbered = new NumberedLevels();
  for (const l of kept.flat()) {
    const level = sizeLevel(l, body, levels);
    if (level > 0) numbered.learn(l.text, level);
  }
  let next = 0;
  return pages.map((p) =>
    p.kind === 'ocr'
      ? p.markdown
      : pageToMarkdown(
          readingOrder(extractTables(kept[next++] ?? [])),
          body,
          levels,
          numbered,
          p.outline,
          words,
        ),
  );
}
