/**
 * Code listings: a block of monospaced lines becomes fenced code with its line breaks and
 * indentation kept (measured in the font's character width from the block's left edge) and an
 * empty line where the listing leaves a gap; a listing cut by a page break is fenced on each
 * page, on one grid; line numbers set in a text font in front of the code are dropped (numbers
 * in the code's own font stay, apart by their spacing: they may be a table's option values). A
 * single monospaced line standing alone (a command, a path) is a listing too, as most converters
 * fence a line set apart in a code font; one that is a line of a prose paragraph (the sentence
 * runs through it) stays in the paragraph as inline code. Pure, on lines.
 */
import { median, type Line } from './lines.js';

/** Whether a line belongs to a listing. */
export const isCode = (l: Line) => l.mono === true && l.table === undefined;

/** Lines on one baseline (a comment split off as far apart), joined left to right. */
function rows(lines: readonly Line[]): Line[][] {
  const out: Line[][] = [];
  for (const l of lines) {
    const row = out.at(-1);
    const first = row?.[0];
    if (row !== undefined && first !== undefined && Math.abs(first.y - l.y) <= 0.3 * l.size)
      row.push(l);
    else out.push([l]);
  }
  return out.map((r) => r.sort((a, b) => a.x0 - b.x0));
}

/** Where a listing's columns are counted from: its left edge and the font's character width. */
export interface CodeGrid {
  left: number;
  char: number;
}

/** The grid of a listing's lines: each character as wide as the narrowest line says. */
export function codeGrid(lines: readonly Line[]): CodeGrid {
  // Collapsed spaces only widen a line's mean character.
  const widths = lines.map((l) => (l.x1 - l.x0) / Math.max(1, l.text.length));
  return {
    left: Math.min(...lines.map((l) => l.x0)),
    char: Math.max(0.1, Math.min(...widths)),
  };
}

/**
 * The fenced markdown of a listing's lines (in reading order), in `parts` whose rows are never
 * merged, on `grid` (by default their own): a listing cut by a page break is fenced on each page
 * on the grid of the whole listing, so its indentation reads the same on both.
 */
export function codeBlock(
  parts: readonly (readonly Line[])[],
  grid = codeGrid(parts.flat()),
): string {
  const out = parts.flatMap((part) => codeRows(part, grid.left, grid.char));
  const longest = Math.max(
    0,
    ...out.flatMap((l) => [...l.matchAll(/`+/g)].map((m) => m[0].length)),
  );
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return [fence, ...out, fence].join('\n');
}

/** One part of a listing as text rows, columns counted from `left` in `char` widths. */
function codeRows(lines: readonly Line[], left: number, char: number): string[] {
  const grouped = rows(lines);
  const pitches = grouped.flatMap((r, i) => {
    const above = grouped[i - 1]?.[0];
    const gap = above === undefined ? 0 : above.y - (r[0]?.y ?? 0);
    return gap > 0 ? [gap] : [];
  });
  const pitch = median(pitches) ?? Infinity;
  const out: string[] = [];
  grouped.forEach((row, i) => {
    const above = grouped[i - 1]?.[0];
    const y = row[0]?.y ?? 0;
    if (above !== undefined && above.y - y > 1.6 * pitch) out.push('');
    let text = '';
    for (const part of row) {
      const column = Math.max(0, Math.round((part.x0 - left) / char));
      text += ' '.repeat(Math.max(text === '' ? 0 : 1, column - text.length)) + part.text;
    }
    out.push(text);
  });
  return out;
}

/** Line numbers of a listing: at least this many, counting up by one. */
const MIN_NUMBERED_ROWS = 3;

/** Whether `numbers` count up by one, row after row. */
const countsUp = (numbers: readonly number[]) =>
  numbers.length >= MIN_NUMBERED_ROWS &&
  numbers.every((n, i) => i === 0 || n === (numbers[i - 1] ?? 0) + 1);

/**
 * The lines of a page that are a listing's line numbers set apart from its code (their own text
 * runs, often in a text font): a lone number with a monospaced line on its baseline just to its
 * right, among at least three such that count up by one.
 */
export function lineNumberLines(lines: readonly Line[]): Set<Line> {
  const candidates = lines
    .filter(
      (n) =>
        /^\d{1,5}$/.test(n.text) &&
        lines.some(
          (c) =>
            c !== n &&
            isCode(c) &&
            Math.abs(c.y - n.y) <= 0.3 * n.size &&
            c.x0 > n.x1 &&
            c.x0 - n.x1 < 4 * n.size,
        ),
    )
    .sort((a, b) => b.y - a.y);
  return countsUp(candidates.map((l) => Number(l.text))) ? new Set(candidates) : new Set();
}

/** `text` as a markdown code span (its fence longer than any backtick run inside). */
export function inlineCode(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/**
 * The monospaced lines (in reading order) that are lines of a prose paragraph: between prose
 * lines at the paragraph's line spacing, not indented, and the sentence running through them
 * (the line above does not end one, or the paragraph goes on below). A line after a colon, or
 * set apart by a gap or an indent, stands alone (a command shown on its own).
 */
export function proseCodeLines(lines: readonly Line[], leading: number): Set<Line> {
  const found = new Set<Line>();
  lines.forEach((line, i) => {
    const [prev, next] = [lines[i - 1], lines[i + 1]];
    if (!isCode(line) || prev === undefined || isCode(prev) || prev.table !== undefined) return;
    const near = (a: Line, b: Line) => a.y - b.y > 0 && a.y - b.y <= 1.3 * leading;
    if (!near(prev, line) || line.x0 > prev.x0 + prev.size || /:$/.test(prev.text)) return;
    if (next !== undefined && isCode(next)) return;
    const below = next !== undefined && next.table === undefined && near(line, next);
    if (below ? next.x0 <= line.x0 + line.size : !/[.!?]$/.test(prev.text)) found.add(line);
  });
  return found;
}

/** Markdown escaping (`escape`) applied to the text outside code spans only. */
export function outsideCode(text: string, escape: (prose: string) => string): string {
  return text
    .split(/((`+)(?:[^`]|[^`][\s\S]*?[^`])\2(?!`))/)
    .map((part, i) => (i % 3 === 0 ? escape(part) : i % 3 === 1 ? part : ''))
    .join('');
}
