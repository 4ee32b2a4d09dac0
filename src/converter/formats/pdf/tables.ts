/**
 * Tables in a page's text layer: three or more rows of short text boxes on shared column edges
 * become one GFM table, so each cell stays in its row (reading order by XY-cut would read them
 * column by column). Prose never qualifies: its lines are one box each, two-column text has long
 * lines, table-of-contents or index entries (dot leaders, page numbers) and code listings
 * (monospaced rows) are left alone. Pure, on lines.
 */
import type { Line } from './lines.js';
import { isIndexEntry, isTocEntry } from './structure.js';

/** Fewer rows than this are not a table. */
const MIN_ROWS = 3;
/** Cells longer than this (on average) are text columns, not a table. */
const MAX_MEAN_CELL = 32;
/** Cells of more words than this (on average) are lines of prose columns, not a table. */
const MAX_MEAN_WORDS = 3;

/** Lines on one baseline, left to right. */
function rowsOf(lines: readonly Line[]): Line[][] {
  const sorted = [...lines].sort((a, b) => b.y - a.y || a.x0 - b.x0);
  const rows: Line[][] = [];
  for (const line of sorted) {
    const row = rows.at(-1);
    const first = row?.[0];
    if (row !== undefined && first !== undefined && Math.abs(first.y - line.y) <= 0.3 * first.size)
      row.push(line);
    else rows.push([line]);
  }
  for (const row of rows) row.sort((a, b) => a.x0 - b.x0);
  return rows;
}

/** A cell's text in a GFM row: a `|` would end the cell. */
const escapeCell = (text: string) => text.replace(/\|/g, '\\|');

/** The column of `cell` among `edges` (left edges, or right edges for right-aligned numbers). */
function columnOf(cell: Line, lefts: readonly number[], rights: readonly number[]): number {
  const tolerance = 0.6 * cell.size;
  const left = lefts.findIndex((x) => Math.abs(x - cell.x0) <= tolerance);
  return left >= 0 ? left : rights.findIndex((x) => Math.abs(x - cell.x1) <= tolerance);
}

/** A row that may be a table's: short cells, no TOC entries, not all code (a listing). */
const tableLike = (row: readonly Line[]) =>
  row.length >= 2 &&
  row.every((c) => !isTocEntry(c.text) && c.text.length <= 60) &&
  !row.every((c) => c.mono === true);

/** A table of contents set in columns: every row ends in a page number, never going down. */
function isToc(block: readonly Line[][]): boolean {
  const numbers = block.map((row) => {
    const t = row.at(-1)?.text ?? '';
    return /^\d{1,4}$/.test(t) ? Number(t) : NaN;
  });
  return numbers.every((n, i) => !Number.isNaN(n) && n >= (numbers[i - 1] ?? 0));
}

/** An index set in columns: most cells are index entries (`abs, 37`). */
const isIndex = (block: readonly Line[][]) =>
  block.flat().filter((c) => isIndexEntry(c.text)).length * 2 >= block.flat().length;

/**
 * One row's boxes as one line: a TOC entry and its page number, or a line of code and its comment
 * (the gap kept as spaces, in the font's character width), so reading order keeps the row.
 */
function mergeRow(row: readonly Line[]): Line {
  const [first, ...rest] = row;
  if (first === undefined) throw new Error('empty row');
  const merged = { ...first };
  for (const cell of rest) {
    const advance = (cell.x1 - cell.x0) / Math.max(1, cell.text.length);
    const gap = cell.mono === true ? Math.round((cell.x0 - merged.x1) / advance) : 1;
    merged.text += ' '.repeat(Math.max(1, gap)) + cell.text;
    merged.x1 = Math.max(merged.x1, cell.x1);
    merged.mono = merged.mono === true && cell.mono === true;
    if (merged.font !== cell.font) merged.font = undefined;
  }
  return merged;
}

/** The GFM of rows laid on the columns of the first row. */
function gfm(rows: readonly Line[][], lefts: number[], rights: number[]): string {
  const cells = rows.map((row) => {
    const out = lefts.map(() => '');
    for (const cell of row) {
      const c = Math.max(0, columnOf(cell, lefts, rights));
      out[c] = out[c] === '' ? cell.text : `${out[c]} ${cell.text}`;
    }
    return `| ${out.map((c) => escapeCell(c)).join(' | ')} |`;
  });
  const rule = `|${lefts.map(() => ' --- |').join('')}`;
  return [cells[0], rule, ...cells.slice(1)].join('\n');
}

/**
 * How many columns of the block hold different texts: a label repeated on every row (a manual's
 * `[Constant]` beside each definition) is no column of a table.
 */
function varyingColumns(block: readonly Line[][], head: readonly Line[]): number {
  const [lefts, rights] = [head.map((c) => c.x0), head.map((c) => c.x1)];
  const texts = head.map(() => new Set<string>());
  for (const row of block) for (const c of row) texts[columnOf(c, lefts, rights)]?.add(c.text);
  return texts.filter((t) => t.size > 1).length;
}

/**
 * Replaces each table on the page by one line carrying its markdown (`table`), placed where the
 * table starts; the other lines are returned as they were.
 */
export function extractTables(lines: readonly Line[]): Line[] {
  const rows = rowsOf(lines).map((row) =>
    row.length > 1 && row.every((c) => c.mono === true) ? [mergeRow(row)] : row,
  );
  const out: Line[] = [];
  let i = 0;
  while (i < rows.length) {
    const head = rows[i] ?? [];
    let end = i;
    if (tableLike(head)) {
      const lefts = head.map((c) => c.x0);
      const rights = head.map((c) => c.x1);
      const size = head[0]?.size ?? 10;
      while (end + 1 < rows.length) {
        const next = rows[end + 1] ?? [];
        const prevY = rows[end]?.[0]?.y ?? 0;
        const aligned = next.filter((c) => columnOf(c, lefts, rights) >= 0).length;
        if (!tableLike(next) || aligned < Math.min(2, next.length) || aligned < next.length - 1)
          break;
        if (prevY - (next[0]?.y ?? 0) > 3 * size) break;
        end++;
      }
    }
    const block = rows.slice(i, end + 1);
    const cells = block.flat();
    // Cell statistics only for a block that may be a table (most rows are a block of one).
    const mean = () => cells.reduce((n, c) => n + c.text.length, 0) / Math.max(1, cells.length);
    const words = () =>
      cells.reduce((n, c) => n + c.text.split(' ').length, 0) / Math.max(1, cells.length);
    if (
      block.length >= MIN_ROWS &&
      mean() <= MAX_MEAN_CELL &&
      words() <= MAX_MEAN_WORDS &&
      varyingColumns(block, head) >= 2 &&
      !isToc(block) &&
      !isIndex(block)
    ) {
      const first = head[0] as Line;
      out.push({
        text: cells.map((c) => c.text).join(' '),
        x0: Math.min(...cells.map((c) => c.x0)),
        x1: Math.max(...cells.map((c) => c.x1)),
        y: Math.min(...cells.map((c) => c.y)),
        top: Math.max(...cells.map((c) => c.y + c.size)),
        size: first.size,
        table: gfm(
          block,
          head.map((c) => c.x0),
          head.map((c) => c.x1),
        ),
      });
      i = end + 1;
    } else if (block.length >= MIN_ROWS && head.length === 2 && isToc(block)) {
      out.push(...block.map(mergeRow));
      i = end + 1;
    } else {
      out.push(...head);
      i++;
    }
  }
  return out;
}
