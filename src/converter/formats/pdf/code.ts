/**
 * Code listings: a block of monospaced lines becomes fenced code with its line breaks and
 * indentation kept (measured in the font's character width from the block's left edge) and an
 * empty line where the listing leaves a gap; a listing cut by a page break is one block. A single
 * monospaced line standing alone (a command, a path) is a listing too, as most converters fence a
 * line set apart in a code font; one that is a line of a prose paragraph (the sentence runs
 * through it) stays in the paragraph as inline code. Pure, on lines.
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

/**
 * The fenced markdown of a listing's lines (in reading order); more `parts` (the same listing
 * continued on the next pages) are laid out on the first one's grid: one left edge and character
 * width, rows never merged across parts.
 */
export function codeBlock(...parts: (readonly Line[])[]): string {
  const lines = parts.flat();
  // Each character is as wide as the narrowest line says (collapsed spaces only widen it).
  const widths = lines.map((l) => (l.x1 - l.x0) / Math.max(1, l.text.length));
  const char = Math.max(0.1, Math.min(...widths));
  const left = Math.min(...lines.map((l) => l.x0));
  const out = parts.flatMap((part) => codeRows(part, left, char));
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
