/** Small markdown builders shared by the format converters (GFM tables, fences, headings). */

/** Data rows per GFM table before a sheet is split into sections (each repeats the header). */
export const DEFAULT_ROWS_PER_TABLE = 500;

/**
 * One GFM table cell: a `|` would end the cell and a newline the row, so pipes are escaped (and a
 * backslash right before a pipe doubled, so it cannot swallow the escape) and line breaks become
 * `<br>`, which GFM renders as a break inside the cell.
 */
export function escapeCell(value: string): string {
  return (
    value
      .trim()
      .replace(/\\(?=\|)/g, '\\\\')
      .replace(/\|/g, '\\|')
      // The lookbehind starts a match only at the first blank of a run: without it the regex
      // retries at every blank of a long run that ends in no line break (quadratic).
      .replace(/(?<![ \t])[ \t]*(?:\r\n|\r|\n)+[ \t]*/g, '<br>')
  );
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** A GFM table; rows are padded (or the header widened) so every row has the same width. */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  // A loop, not Math.max(...rows): spreading a million rows overflows the call stack.
  let width = Math.max(1, header.length);
  for (const r of rows) width = Math.max(width, r.length);
  const pad = (cells: readonly string[]) => {
    const out = cells.map(escapeCell);
    while (out.length < width) out.push('');
    return out;
  };
  const lines = [row(pad(header)), row(Array.from({ length: width }, () => '---'))];
  for (const r of rows) lines.push(row(pad(r)));
  return lines.join('\n');
}

/**
 * One table, or — above `rowsPerTable` data rows — a section per slice, headed `Rows a–b` and
 * repeating the header, so every chunk the indexer cuts still knows its column names.
 */
export function renderTables(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: { rowsPerTable?: number; headingLevel?: number } = {},
): string {
  const size = Math.max(1, options.rowsPerTable ?? DEFAULT_ROWS_PER_TABLE);
  if (rows.length <= size) return renderTable(header, rows);
  const hashes = '#'.repeat(options.headingLevel ?? 2);
  const sections: string[] = [];
  for (let start = 0; start < rows.length; start += size) {
    const slice = rows.slice(start, start + size);
    sections.push(
      `${hashes} Rows ${start + 1}–${start + slice.length}\n\n${renderTable(header, slice)}`,
    );
  }
  return sections.join('\n\n');
}

/** A fenced code block whose fence is longer than any backtick run inside the code. */
export function fenced(code: string, language = ''): string {
  let longest = 0;
  for (const m of code.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${language}\n${code}\n${fence}`;
}

/** Text safe to use as an ATX heading: one line, no trailing `#`s eaten by the heading syntax. */
export function headingText(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  // (?<!#): try only at the start of a run of #s, so a long run costs its length, not its square.
  return line === '' ? '(empty)' : line.replace(/(?<!#)#+$/, (m) => `\\${m}`);
}
