/**
 * Code listings: a block of monospaced lines becomes fenced code with its line breaks and
 * indentation kept (measured in the font's character width from the block's left edge) and an
 * empty line where the listing leaves a gap. Pure, on lines.
 */
import { median, type Line } from './lines.js';

/** A listing's lines: fewer than this many monospaced lines stay text (a URL, a command). */
export const MIN_CODE_LINES = 2;

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

/** The fenced markdown of a listing's lines (in reading order). */
export function codeBlock(lines: readonly Line[]): string {
  // Each character is as wide as the narrowest line says (collapsed spaces only widen it).
  const widths = lines.map((l) => (l.x1 - l.x0) / Math.max(1, l.text.length));
  const char = Math.max(0.1, Math.min(...widths));
  const left = Math.min(...lines.map((l) => l.x0));
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
  const longest = Math.max(
    0,
    ...out.flatMap((l) => [...l.matchAll(/`+/g)].map((m) => m[0].length)),
  );
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return [fence, ...out, fence].join('\n');
}
