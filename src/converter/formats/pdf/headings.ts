/**
 * Headings of a PDF without an outline, from what its own text shows: the font sizes above the
 * body's that the document uses for short, separate blocks (never for paragraphs), and the fonts
 * at body size (bold) used for whole, separate lines only. Both are learnt from the document's
 * own distribution, not a fixed ratio. Table-of-contents and index lines, and the prototypes of
 * a reference's definitions, are never headings.
 * Pure, on lines; `layout.ts` applies it.
 */
import { isDefinition, topDown, type Line } from './lines.js';
import { isIndexEntry, isTocEntry } from './structure.js';

/** What the document sets its headings in. */
export interface HeadingStyles {
  /** Heading level (1 = top) of each size (rounded, `sizeKey`) above the body's. */
  sizes: Map<number, number>;
  /** Heading level of each font set at body size for headings (bold). */
  fonts: Map<string, number>;
}

/**
 * Whether a text has the two letters a heading needs: a figure's `(3,5)` or `100` in a large size
 * is none. A test, not a count: it runs several times per line (a count allocated every letter).
 */
const TWO_LETTERS = /\p{L}\P{L}*\p{L}/u;
const hasTitleLetters = (text: string) => TWO_LETTERS.test(text);

/** A size rounded to half a point: the class sizes are compared by. */
export const sizeKey = (size: number) => Math.round(size * 2) / 2;

/** A line ending in a page number after a space: a TOC entry on a page of them. */
const TRAILING_NUMBER = /\s(?:\d{1,4}|[ivxlc]{1,7})$/i;

/**
 * The lines of a page that are table-of-contents or index entries: a dot leader, page numbers
 * after a comma, or (on a page where a third of the lines do so) a page number at the end of the
 * line, right-aligned with four others (table cells such as `record 5` are not aligned so).
 */
export function contentsLines(lines: readonly Line[]): Set<Line> {
  const numbered = lines.filter((l) => TRAILING_NUMBER.test(l.text));
  const tocPage = numbered.length >= 5 && numbered.length * 3 >= lines.length;
  const aligned = (l: Line) =>
    numbered.filter((o) => Math.abs(o.x1 - l.x1) <= 0.2 * l.size).length >= 5;
  return new Set(
    lines.filter(
      (l) =>
        isTocEntry(l.text) ||
        isIndexEntry(l.text) ||
        (tocPage && TRAILING_NUMBER.test(l.text) && aligned(l)),
    ),
  );
}

/** How many more `(` than `)` a text has: an argument list still open. */
const openParens = (text: string) =>
  (text.match(/\(/g)?.length ?? 0) - (text.match(/\)/g)?.length ?? 0);

/**
 * The lines of a page that are a definition's header: its first line, which ends in the category
 * tag (Texinfo's `int asn1_create_element (…) [Function]`, often set larger than the text), and
 * the lines its open argument list wraps onto (indented under it, same size, at line spacing). A
 * prototype is what a reference documents, not a title over it: it never becomes a heading.
 */
export function definitionLines(lines: readonly Line[]): Set<Line> {
  const found = new Set<Line>();
  if (!lines.some(isDefinition)) return found; // most pages: no sort needed
  let head: Line | undefined;
  let prev: Line | undefined;
  let open = 0;
  for (const l of [...lines].sort(topDown)) {
    if (isDefinition(l)) {
      [head, open] = [l, openParens(l.text)];
      found.add(l);
    } else if (
      head !== undefined &&
      prev !== undefined &&
      found.has(prev) &&
      open > 0 &&
      l.x0 > head.x0 + l.size &&
      Math.abs(l.size - head.size) <= 0.05 * head.size &&
      prev.y - l.y <= 1.6 * l.size
    ) {
      open += openParens(l.text);
      found.add(l);
    } else head = undefined;
    prev = l;
  }
  return found;
}

/** The lines of a page that are never headings: contents and index entries, definitions. */
export function neverTitles(lines: readonly Line[]): Set<Line> {
  return new Set([...contentsLines(lines), ...definitionLines(lines)]);
}

/** Blocks of consecutive lines in one style: how long they run and how they end. */
interface Usage {
  lines: number;
  blocks: number;
  chars: number;
  /** Blocks whose last line ends a sentence or clause. */
  sentences: number;
  /** Sum of the lines' advance per character per point (wider for bold). */
  advance: number;
}

const emptyUsage = (): Usage => ({ lines: 0, blocks: 0, chars: 0, sentences: 0, advance: 0 });

/** Advance per character per point: the width of a font relative to its size. */
const advance = (l: Line) => (l.x1 - l.x0) / Math.max(1, l.text.length * l.size);

/** Counts each style's blocks: `key` gives a line's style, or undefined for none of interest. */
function usage(pages: readonly Line[][], key: (l: Line) => string | undefined): Map<string, Usage> {
  const out = new Map<string, Usage>();
  for (const page of pages) {
    const lines = [...page].sort(topDown);
    const keys = lines.map(key);
    lines.forEach((l, i) => {
      const k = keys[i];
      if (k === undefined) return;
      const u = out.get(k) ?? emptyUsage();
      out.set(k, u);
      const [prev, next] = [lines[i - 1], lines[i + 1]];
      const joined = (a: Line | undefined, b: Line | undefined, ka: string | undefined) =>
        a !== undefined && b !== undefined && ka === k && a.y - b.y < 2 * b.size;
      u.lines++;
      u.chars += l.text.length;
      u.advance += advance(l);
      if (!joined(prev, l, keys[i - 1])) u.blocks++;
      if (!joined(l, next, keys[i + 1]) && /[.,;:]$/.test(l.text)) u.sentences++;
    });
  }
  return out;
}

/** Short blocks of a line or two, rarely ending like a sentence: what headings are set in. */
const headingLike = (u: Usage, maxLines: number) =>
  u.blocks >= 1 &&
  u.lines <= maxLines * u.blocks &&
  u.chars <= 80 * u.lines &&
  u.sentences * 4 <= u.blocks;

/** Learns the document's heading sizes and fonts from all its text pages. */
export function learnHeadingStyles(pages: readonly Line[][], body: number): HeadingStyles {
  const plain = pages.map((lines) => {
    // Definitions stay in: their sizes and fonts are the document's, only never a heading.
    const toc = contentsLines(lines);
    return lines.filter((l) => !toc.has(l) && l.mono !== true && hasTitleLetters(l.text));
  });
  // Sizes: every class above the body's (a rounding step at least) used for short blocks.
  const bySize = usage(plain, (l) => {
    const k = sizeKey(l.size);
    return k >= body + 0.5 && k > 1.04 * body ? String(k) : undefined;
  });
  const sizes = [...bySize]
    .filter(([, u]) => headingLike(u, 2.5))
    .map(([k]) => Number(k))
    .sort((a, b) => b - a);
  const levels = new Map(sizes.map((s, i) => [s, Math.min(i + 1, 6)]));
  // Fonts at body size: the body's own, and others whose whole lines stand alone and run wider.
  const atBody = (l: Line) => Math.abs(l.size - body) <= 0.1 * body && l.font !== undefined;
  const byFont = usage(plain, (l) => (atBody(l) ? l.font : undefined));
  const [bodyFont, bodyUsage] = [...byFont].sort((a, b) => b[1].chars - a[1].chars)[0] ?? [];
  const fonts = new Map<string, number>();
  if (bodyUsage !== undefined) {
    const bodyAdvance = bodyUsage.advance / bodyUsage.lines;
    for (const [font, u] of byFont) {
      if (font === bodyFont || u.blocks < 2 || !headingLike(u, 2)) continue;
      if (u.advance / u.lines >= 1.03 * bodyAdvance) fonts.set(font, Math.min(sizes.length + 1, 6));
    }
  }
  return { sizes: levels, fonts };
}

/** A line's size-based heading level (0: none); TOC and index lines are never headings. */
export function sizeLevel(l: Line, styles: HeadingStyles, contents: ReadonlySet<Line>): number {
  if (l.mono === true || !hasTitleLetters(l.text) || contents.has(l)) return 0;
  return styles.sizes.get(sizeKey(l.size)) ?? 0;
}

/**
 * The lines of a page set in a heading font at body size: short, not ending like a sentence, set
 * apart from the line above (a wider gap, or the top of the page or column); the next line of a
 * title wrapped in the same font goes with it.
 */
export function fontTitles(
  lines: readonly Line[],
  styles: HeadingStyles,
  body: number,
  leading: number,
  contents: ReadonlySet<Line>,
): Set<Line> {
  const titles = new Set<Line>();
  lines.forEach((l, i) => {
    if (l.font === undefined || !styles.fonts.has(l.font) || contents.has(l)) return;
    if (Math.abs(l.size - body) > 0.1 * body || !hasTitleLetters(l.text) || l.text.length > 100)
      return;
    if (/[.,;:]$/.test(l.text)) return;
    const above = lines[i - 1];
    const gap = above === undefined ? Infinity : above.y - l.y;
    const apart = gap < 0 || gap > 1.15 * leading;
    const wrapped = above !== undefined && titles.has(above) && above.font === l.font;
    if (apart || (wrapped && gap <= 1.3 * leading)) titles.add(l);
  });
  return titles;
}
