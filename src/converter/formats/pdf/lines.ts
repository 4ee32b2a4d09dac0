/**
 * A PDF page's text runs → lines → reading order. Pure: plain objects in and out, no pdf.js
 * (`../pdf.ts` turns pdf.js text items into TextRuns), so the rules are tested on hand-made runs.
 */
import { fixRunText } from './text-fixes.js';

/** Above this many lines on a page reading order is a plain sort (XY-cut is quadratic). */
const MAX_XY_CUT_LINES = 1500;
/** Fewer letters/digits than this on a page: no usable text layer (a scan, or just a number). */
const MIN_TEXT_CHARS = 10;

/** One positioned run of text as the PDF draws it, in PDF units (origin bottom left, y upwards). */
export interface TextRun {
  str: string;
  /** Start of the baseline. */
  x: number;
  y: number;
  width: number;
  /** Font size (the text matrix's vertical scale). */
  size: number;
  /** The font's id within the document (runs in one font share it). */
  font?: string;
  /** Whether the font is monospaced. */
  mono?: boolean;
}

/** Runs on one baseline, joined; what the layout works on. */
export interface Line {
  text: string;
  x0: number;
  x1: number;
  /** Baseline, PDF units (upwards). */
  y: number;
  size: number;
  /** Top of a block taller than a line (a table), PDF units; else `y + size`. */
  top?: number;
  /** A table found on the page (tables.ts): its GFM, emitted as it is. */
  table?: string;
  /** The font of the whole line, when it is set in one (a heading's bold, say). */
  font?: string;
  /** Every run of the line is monospaced (a line of a code listing). */
  mono?: boolean;
}

/** The middle value; sorts `values` in place. */
export const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1];
/** Top of the page first, then left to right. */
export const topDown = (a: Line, b: Line) => b.y - a.y || a.x0 - b.x0;
/**
 * How many letters and digits `text` has (what is left once the rest is removed: a match list
 * was an array entry per letter, 1 % of a manual's conversion).
 */
export const letters = (text: string) => text.replace(/[^\p{L}\p{N}]+/gu, '').length;

/**
 * Whether a wide gap on a row is a gutter (columns, table cells) rather than the stretched word
 * space of a justified line: the rows just above and below with text near it have no text across
 * it either.
 * A row with no neighbours splits at any wide gap.
 */
function isGutter(
  rows: readonly Line[][],
  r: number,
  from: number,
  to: number,
  size: number,
): boolean {
  const row = rows[r];
  const y = row?.[0]?.y ?? 0;
  // The strip just after the left text or just before the right text must be free on the
  // neighbours (a column's edge); word spaces of justified lines fall elsewhere on each line.
  const reach = Math.min(0.5 * (to - from), size);
  const strips = [
    [from + 0.1 * size, from + reach],
    [to - reach, to - 0.1 * size],
  ] as const;
  let near = 0;
  let covered = 0;
  for (let k = Math.max(0, r - 4); k <= Math.min(rows.length - 1, r + 4); k++) {
    const other = rows[k];
    if (k === r || other === undefined || Math.abs((other[0]?.y ?? 0) - y) > 4 * size) continue;
    // Only rows with text around the gap say anything (not the other column's rows).
    if (!other.some((run) => run.x0 < to + 3 * size && run.x1 > from - 3 * size)) continue;
    near++;
    if (strips.every(([a, b]) => other.some((run) => run.x0 < b && run.x1 > a))) covered++;
  }
  return near === 0 || covered * 2 < near;
}

/**
 * Whether a gap on a row that ends at `to` is a column's left edge: a row close above or below
 * has a wide gap (1.5 em or more) ending at the same place. Table cells line up so, however long
 * the cell before the gap (and a table header under a paragraph has the paragraph's lines across
 * its gaps, which isGutter would count against it); the stretched word spaces of justified lines
 * do not.
 */
function isColumnEdge(rows: readonly Line[][], r: number, to: number, size: number): boolean {
  const y = rows[r]?.[0]?.y ?? 0;
  for (let k = Math.max(0, r - 2); k <= Math.min(rows.length - 1, r + 2); k++) {
    const other = rows[k];
    if (k === r || other === undefined || Math.abs((other[0]?.y ?? 0) - y) > 3 * size) continue;
    const edge = other.some(
      (run, i) =>
        i > 0 &&
        Math.abs(run.x0 - to) <= 0.15 * size &&
        run.x0 - (other[i - 1]?.x1 ?? -Infinity) > 1.5 * size,
    );
    if (edge) return true;
  }
  return false;
}

/**
 * A definition's category set flush right on its first line (Texinfo's `[Function]`, `[Macro]`):
 * part of that line, though the tags of a run of definitions line up like a narrow column.
 */
const DEFINITION_TAG = /^\s*\[\p{L}[\p{L} -]{0,30}\]\s*$/u;

/** Whether a line is a definition's first line (it ends with its category tag): a new block. */
export const isDefinition = (l: Line) => / \[\p{L}[\p{L} -]{0,30}\]$/u.test(l.text);

/**
 * Text runs → lines: runs on one baseline, split where a gap is wide enough to be a gutter (and
 * the neighbouring rows agree; a justified line's wide word spaces stay spaces).
 */
export function toLines(items: readonly TextRun[]): Line[] {
  const runs = items
    .filter((item) => item.str.trim() !== '')
    .map((item): Line => ({
      text: fixRunText(item.str),
      x0: item.x,
      x1: item.x + item.width,
      y: item.y,
      size: item.size,
      font: item.font,
      mono: item.mono,
    }))
    .sort(topDown);
  const rows: Line[][] = [];
  let row: Line[] = [];
  for (const run of runs) {
    const first = row[0];
    if (first !== undefined && Math.abs(first.y - run.y) > 0.5 * Math.min(first.size, run.size)) {
      rows.push(row.sort((a, b) => a.x0 - b.x0));
      row = [];
    }
    row.push(run);
  }
  if (row.length > 0) rows.push(row.sort((a, b) => a.x0 - b.x0));
  const lines: Line[] = [];
  rows.forEach((runsOfRow, r) => {
    let line: Line | undefined;
    for (const [i, run] of runsOfRow.entries()) {
      const gap = line === undefined ? 0 : run.x0 - line.x1;
      // Wider than 3 em is never a word space; between 1.5 and 3 em the neighbours decide; from
      // 1 em, a column edge the rows around share (a table's long cell ends short of the next).
      // The smaller size decides: a letter heading of an index beside an entry of the other column.
      const size = Math.min(line?.size ?? run.size, run.size);
      // A code listing's aligned comment is no column: monospaced text splits only far apart.
      const code = line?.mono === true && run.mono === true;
      if (
        line === undefined ||
        (code
          ? gap > 8 * size
          : ((gap > 1.5 * size && (gap > 3 * size || isGutter(rows, r, line.x1, run.x0, size))) ||
              (gap > size && isColumnEdge(rows, r, run.x0, size))) &&
            !(run === runsOfRow.at(-1) && DEFINITION_TAG.test(run.text))) ||
        // A listing's line number in a text font, then the rest of the row in code: two lines
        // (code.ts drops the number). `7 LaTeX usage`, a title with a logo font, goes on.
        (line.mono !== true &&
          /^\d{1,5}$/.test(line.text) &&
          runsOfRow.slice(i).every((next) => next.mono === true))
      ) {
        line = { ...run };
        lines.push(line);
        continue;
      }
      const space = gap > 0.15 * run.size && !/\s$/.test(line.text) && !/^\s/.test(run.text);
      // Monospaced text keeps its alignment: as many spaces as the gap holds characters.
      const advance = (run.x1 - run.x0) / Math.max(1, run.text.length);
      const spaces = code && space ? Math.max(1, Math.round(gap / advance)) : space ? 1 : 0;
      line.text += ' '.repeat(spaces) + run.text;
      line.x1 = Math.max(line.x1, run.x1);
      // A line's size is its text's, not that of code set larger inside it (Texinfo's @code).
      if (line.mono === true && run.mono !== true) line.size = run.size;
      else if ((line.mono === true) === (run.mono === true))
        line.size = Math.max(line.size, run.size);
      if (line.font !== run.font) line.font = undefined;
      line.mono = line.mono === true && run.mono === true;
    }
  });
  for (const line of lines)
    line.text = line.mono
      ? line.text.replace(/\s/g, ' ').trim()
      : line.text.replace(/\s+/g, ' ').trim();
  return lines;
}

/**
 * Whether a page's text layer is worth reading: enough letters/digits, and not mostly unmapped
 * glyphs (U+FFFD or private-use characters from a font without a usable Unicode map).
 */
export function hasUsableText(lines: readonly Line[]): boolean {
  const text = lines.map((l) => l.text).join(' ');
  const junk = text.match(/[\uFFFD\p{Co}]/gu)?.length ?? 0;
  const count = letters(text);
  return count >= MIN_TEXT_CHARS && junk <= count / 10;
}

/** The widest gap between parts of `lines` along one axis, splitting them in two. */
function widestGap(
  lines: readonly Line[],
  start: (l: Line) => number,
  end: (l: Line) => number,
): { gap: number; first: Line[]; second: Line[] } | null {
  const sorted = [...lines].sort((a, b) => start(a) - start(b));
  let reach = -Infinity;
  let best: { gap: number; at: number } | null = null;
  for (const [i, line] of sorted.entries()) {
    const gap = start(line) - reach;
    if (i > 0 && gap > 0 && (best === null || gap > best.gap)) best = { gap, at: i };
    reach = Math.max(reach, end(line));
  }
  if (best === null) return null;
  return { gap: best.gap, first: sorted.slice(0, best.at), second: sorted.slice(best.at) };
}

/** Vertical extent of some lines (bottom, top). */
function extent(lines: readonly Line[]): [number, number] {
  return [
    Math.min(...lines.map((l) => l.y - 0.25 * l.size)),
    Math.max(...lines.map((l) => l.top ?? l.y + l.size)),
  ];
}

/**
 * Reading order by recursive XY-cut: columns (a vertical gutter with text beside it on both
 * sides) are read left to right, else bands (a horizontal gap) top to bottom.
 */
export function readingOrder(lines: readonly Line[]): Line[] {
  if (lines.length <= 1 || lines.length > MAX_XY_CUT_LINES) return [...lines].sort(topDown);
  const em = median(lines.map((l) => l.size)) ?? 0;
  const columns = widestGap(
    lines,
    (l) => l.x0,
    (l) => l.x1,
  );
  if (columns !== null && columns.gap >= em) {
    const [b1, t1] = extent(columns.first);
    const [b2, t2] = extent(columns.second);
    // A right-aligned date above a letter is not a column: require the parts to sit side by side.
    if (Math.min(t1, t2) - Math.max(b1, b2) >= 0.5 * Math.min(t1 - b1, t2 - b2)) {
      return [...readingOrder(columns.first), ...readingOrder(columns.second)];
    }
  }
  const bands = widestGap(
    lines,
    (l) => -(l.top ?? l.y + l.size),
    (l) => -(l.y - 0.25 * l.size),
  );
  if (bands === null) return [...lines].sort(topDown);
  return [...readingOrder(bands.first), ...readingOrder(bands.second)];
}
