/**
 * A PDF's pages of lines → markdown. Pure, like `lines.ts`: running headers and footers are
 * dropped across pages, and printed page numbers; headings come from the outline, else from font
 * size against the body text, or from a section number (`3.1 …`, structure.ts), in a style the
 * outline's titles use when there is one; a title wrapped over lines is one heading;
 * table-of-contents and index entries (dot leaders) and definitions' prototypes are never
 * headings; paragraphs come from line spacing, indents and bullets, with line-end hyphenation
 * repaired; text cut by a page break stays on the page it is printed on.
 */
import { escapeParagraph, joinLines } from '../paragraphs.js';
import {
  codeBlock,
  codeGrid,
  inlineCode,
  isCode,
  lineNumberLines,
  outsideCode,
  proseCodeLines,
} from './code.js';
import {
  contentsLines,
  definitionLines,
  fontTitles,
  learnHeadingStyles,
  neverTitles,
  sizeKey,
  sizeLevel,
  type HeadingStyles,
} from './headings.js';
import { isDefinition, median, readingOrder, topDown, type Line } from './lines.js';
import { extractTables } from './tables.js';
import { escapeMarkup, fixLineText, keepsHyphen, vocabulary } from './text-fixes.js';
import {
  inOutlineStyle,
  outlineHeadings,
  outlineStyles,
  type OutlineEntry,
  type OutlineHeading,
  type OutlineStyles,
} from './outline.js';
import { dropPageNumbers, NumberedLevels, sectionDepth, tagLast, tocEntry } from './structure.js';

/** Running headers and footers are set no larger than body size × this. */
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
    const size = sizeKey(line.size);
    chars.set(size, (chars.get(size) ?? 0) + line.text.length);
  }
  return [...chars].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
}

/**
 * Lines that are numbered subsection titles by their number alone (`7.1.1.2 SHA224`, set only a
 * little larger than the text): depth ≥ 2, not smaller than the text, not running to the right
 * margin (a wrapped sentence that starts with `2.5 Mbit` does), and set apart: larger than the
 * text, first on the page, or after a wider gap than the lines of a paragraph.
 */
function numberedTitles(
  lines: readonly Line[],
  body: number,
  leading: number,
  contents: ReadonlySet<Line>,
): Set<Line> {
  const right = Math.max(...lines.map((l) => l.x1));
  return new Set(
    lines.filter((l, i) => {
      const above = lines[i - 1];
      return (
        !contents.has(l) &&
        l.mono !== true &&
        sectionDepth(l.text) >= 2 &&
        l.size >= 0.95 * body &&
        l.x1 < right - 2 * l.size &&
        (l.size >= 1.05 * body || above === undefined || above.y - l.y > 1.2 * leading)
      );
    }),
  );
}

/**
 * One block of a page: its markdown, and (to join across pages) a paragraph's text and edge
 * lines, a listing's lines (one part per page).
 */
interface Block {
  md: string;
  para?: { text: string; first: Line; last: Line };
  code?: Line[][];
}

/** What a page is laid out with: the document's body size, heading styles, words. */
interface DocumentRules {
  body: number;
  styles: HeadingStyles;
  numbered: NumberedLevels;
  words: ReadonlySet<string>;
  /** The styles of the outline's titles (outline.ts); undefined without an outline. */
  outlineStyle: OutlineStyles | undefined;
}

/** A paragraph's markdown from its (unescaped) text. */
const paragraph = (text: string) => escapeParagraph(outsideCode(text, escapeMarkup));

/** One page's lines → markdown blocks. */
function pageBlocks(
  lines: readonly Line[],
  { body, styles, numbered, words, outlineStyle }: DocumentRules,
  outline: ReadonlyMap<Line, OutlineHeading>,
): Block[] {
  const gaps = lines.flatMap((l, i) => {
    const gap = (lines[i - 1]?.y ?? Infinity) - l.y;
    return gap > 0.8 * body && gap < 3 * body ? [gap] : [];
  });
  const leading = median(gaps) ?? 1.2 * body;
  const contents = contentsLines(lines);
  const definitions = definitionLines(lines);
  // Contents entries and definitions' prototypes: never headings, whatever their size.
  const never = definitions.size === 0 ? contents : new Set([...contents, ...definitions]);
  // Monospaced lines of prose paragraphs: inline code in them, not listings.
  const inline = proseCodeLines(lines, leading);
  const code = (l: Line) => isCode(l) && !inline.has(l);
  const titles = numberedTitles(lines, body, leading, never);
  const bold = fontTitles(lines, styles, body, leading, never);
  const fontLevel = (l: Line) => (l.font === undefined ? 0 : (styles.fonts.get(l.font) ?? 0));
  // Asked several times per line by the paragraph rules: worked out once.
  const levels = new Map<Line, number>();
  const level = (l: Line) => {
    let h = levels.get(l);
    if (h === undefined) {
      h =
        outline.get(l)?.level ??
        (!inOutlineStyle(l, outlineStyle)
          ? 0
          : titles.has(l)
            ? numbered.level(sectionDepth(l.text))
            : sizeLevel(l, styles, never) || (bold.has(l) ? fontLevel(l) : 0));
      levels.set(l, h);
    }
    return h;
  };
  const blocks: Block[] = [];
  let para: Line[] = [];
  const flush = () => {
    const [first, last] = [para[0], para.at(-1)];
    if (first === undefined || last === undefined) return;
    const h = level(first);
    const joinedText = joinLines(
      para.map((l) => (inline.has(l) ? inlineCode(l.text) : l.text)),
      (head, tail) => keepsHyphen(words, head, tail),
    );
    const text = definitions.has(first) ? tagLast(joinedText) : joinedText;
    if (first.table !== undefined) blocks.push({ md: first.table });
    else if (h === 0 && code(first)) blocks.push({ md: codeBlock([para]), code: [para] });
    else if (contents.has(first) && !outline.has(first))
      blocks.push({ md: escapeParagraph(tocEntry(escapeMarkup(text))) });
    else if (h > 0 && text.length <= 200)
      blocks.push({ md: `${'#'.repeat(h)} ${escapeMarkup(text)}` });
    else if (BULLET.test(text)) blocks.push({ md: `- ${escapeMarkup(text.replace(BULLET, ''))}` });
    else blocks.push({ md: paragraph(text), para: { text, first, last } });
    para = [];
  };
  const rules = { body, leading, titles, level, contents, code, definitions };
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
          (o === undefined && oPrev === undefined && endsParagraph(para, prev, line, rules));
        if (ends) flush();
      }
    }
    para.push(line);
  }
  flush();
  return blocks;
}

interface ParagraphRules {
  body: number;
  leading: number;
  titles: Set<Line>;
  level: (l: Line) => number;
  contents: ReadonlySet<Line>;
  /** Whether a line belongs to a listing. */
  code: (l: Line) => boolean;
  /** A definition's prototype lines (headings.ts): one block of their own. */
  definitions: ReadonlySet<Line>;
}

/**
 * Whether a paragraph whose last line is `prev` goes on with `line` although `line` is not below
 * it: the bottom of one column and the top of the next, `prev` not ending a sentence (or `line`
 * starting in lower case), both plain text of one size.
 */
export function continues(prev: Line, line: Line, plain: (l: Line) => boolean): boolean {
  return (
    plain(prev) &&
    plain(line) &&
    Math.abs(prev.size - line.size) <= 0.05 * Math.max(prev.size, line.size) &&
    !BULLET.test(line.text) &&
    !isDefinition(line) &&
    (!/[.!?:]$/.test(prev.text) || /^\p{Ll}/u.test(line.text))
  );
}

/** Whether `line` starts a new block after the paragraph `para` (whose last line is `prev`). */
function endsParagraph(
  para: readonly Line[],
  prev: Line,
  line: Line,
  { body, leading, titles, level, contents, code, definitions }: ParagraphRules,
): boolean {
  const first = para[0];
  if (first === undefined) return false;
  const gap = prev.y - line.y;
  // A prototype wrapped over lines is one block, its description another.
  if (definitions.has(prev) || definitions.has(line))
    return !definitions.has(prev) || !definitions.has(line) || isDefinition(line);
  // A listing goes on while lines are monospaced, whatever their indents; a gap of a few lines
  // inside it is kept as an empty line.
  if (code(prev) || code(line))
    return !(code(prev) && code(line)) || gap <= 0 || gap > 3 * Math.max(leading, prev.size);
  const right = Math.max(...para.map((l) => l.x1));
  // The top of the next column: the paragraph may go on there.
  if (gap < 0 && line.x0 > prev.x1 - prev.size) {
    const plain = (l: Line) => level(l) === 0 && !contents.has(l) && !titles.has(l);
    return !continues(prev, line, plain);
  }
  // The second line of a numbered title set larger than the text goes on the title.
  const titleGoesOn =
    titles.has(first) &&
    !titles.has(line) &&
    first.size >= 1.05 * body &&
    Math.abs(first.size - line.size) <= 0.05 * body;
  const heading = level(prev) > 0 && (level(line) > 0 || titleGoesOn);
  return (
    contents.has(prev) ||
    contents.has(line) ||
    titles.has(line) ||
    (!titleGoesOn && level(prev) !== level(line)) ||
    Math.abs(prev.size - line.size) > 0.15 * body ||
    gap <= 0 ||
    gap > 1.3 * Math.max(leading, prev.size) ||
    BULLET.test(line.text) ||
    isDefinition(line) ||
    // A heading's lines may be centred: its indents say nothing.
    (!heading && !BULLET.test(first.text) && line.x0 > prev.x0 + line.size) ||
    (para.length > 1 && /[.!?:]$/.test(prev.text) && prev.x1 < right - 3 * prev.size)
  );
}

/**
 * A paragraph cut by a page break whose last word on the first page is split by a hyphen
 * (`organi-` | `zation …`): the word is joined on the first page, the rest stays on the next.
 * Undefined when the blocks are not one paragraph so cut.
 */
function splitWord(
  tail: Block,
  head: Block,
  words: ReadonlySet<string>,
): [Block, Block?] | undefined {
  const [last, first] = [tail.para, head.para];
  if (last === undefined || first === undefined || !/\p{L}-$/u.test(last.text)) return undefined;
  if (!continues(last.last, first.first, () => true)) return undefined;
  const [, word = '', rest = ''] = /^(\S+)\s*([\s\S]*)$/.exec(first.text) ?? [];
  const text = joinLines([last.text, word], (h, t) => keepsHyphen(words, h, t));
  const joinedTail = { md: paragraph(text), para: { ...last, text } };
  return rest === ''
    ? [joinedTail]
    : [joinedTail, { md: paragraph(rest), para: { ...first, text: rest } }];
}

/**
 * Text that runs from the foot of one page onto the next stays on the page it is printed on (a
 * chunk cites its page; joined onto the first page, the next came out empty): a word split by a
 * hyphen at the break is joined on the first page, and a listing's parts, fenced on each page,
 * share the grid of the whole listing.
 */
function joinAcrossPages(pages: (Block[] | string)[], words: ReadonlySet<string>): void {
  let previous: Block[] | undefined;
  let listing: Block[] = [];
  const endListing = () => {
    if (listing.length > 1) {
      const grid = codeGrid(listing.flatMap((b) => b.code ?? []).flat());
      for (const b of listing) b.md = codeBlock(b.code ?? [], grid);
    }
    listing = [];
  };
  for (const blocks of pages) {
    if (typeof blocks === 'string') {
      endListing();
      previous = undefined;
      continue;
    }
    const [tail, head] = [previous?.at(-1), blocks[0]];
    if (tail?.code !== undefined && head?.code !== undefined) {
      if (listing.at(-1) !== tail) {
        endListing();
        listing.push(tail);
      }
      listing.push(head);
    } else endListing();
    const split =
      tail === undefined || head === undefined ? undefined : splitWord(tail, head, words);
    if (previous !== undefined && split !== undefined) {
      previous[previous.length - 1] = split[0];
      if (split[1] === undefined) blocks.shift();
      else blocks[0] = split[1];
    }
    previous = blocks;
  }
  endListing();
}

/** Markdown of every page, with the text-layer pages laid out against each other. */
export function layoutPages(pages: readonly PageContent[]): string[] {
  const textPages = pages.flatMap((p) => (p.kind === 'text' ? [p.lines] : []));
  const body = bodySize(textPages);
  const kept = dropRepeated(textPages, body)
    .map(dropPageNumbers)
    .map((lines) => {
      // A listing's line numbers set apart from its code: its margin, not its text.
      const numbers = lineNumberLines(lines);
      return numbers.size === 0 ? lines : lines.filter((l) => !numbers.has(l));
    })
    .map((lines) =>
      lines.map((l) => {
        const text = fixLineText(l.text, l.mono === true);
        return text === l.text ? l : { ...l, text };
      }),
    );
  const words = vocabulary(kept.flat().map((l) => l.text));
  const styles = learnHeadingStyles(kept, body);
  const numbered = new NumberedLevels();
  for (const lines of kept) {
    const never = neverTitles(lines);
    for (const l of lines) {
      const level = sizeLevel(l, styles, never);
      if (level > 0) numbered.learn(l.text, level);
    }
  }
  // Each page in reading order with its outline titles found, before any is laid out: the
  // styles of all the titles decide which other lines may be headings.
  let next = 0;
  const ordered = pages.map((p) => {
    if (p.kind === 'ocr') return undefined;
    const lines = readingOrder(extractTables(kept[next++] ?? []));
    return { lines, outline: outlineHeadings(lines, p.outline ?? []) };
  });
  const titles = ordered.flatMap((o) => (o === undefined ? [] : [...o.outline.keys()]));
  const rules = { body, styles, numbered, words, outlineStyle: outlineStyles(titles) };
  const laid = pages.map((p, i): Block[] | string => {
    const page = ordered[i];
    if (p.kind === 'ocr') return p.markdown;
    return page === undefined ? [] : pageBlocks(page.lines, rules, page.outline);
  });
  joinAcrossPages(laid, words);
  return laid.map((p) => (typeof p === 'string' ? p : p.map((b) => b.md).join('\n\n')));
}
