/** CSV / TSV → GFM table(s). The first row is the header; big sheets are split into sections. */
import { parse } from 'csv-parse/sync';
import { renderTables } from './markdown.js';
import type { Conversion } from './types.js';

interface CsvOptions {
  /** Field separator; sniffed from the first line when omitted. */
  delimiter?: string;
  rowsPerTable?: number;
}

const CANDIDATES = [',', ';', '\t', '|'] as const;

/**
 * The separator used most often on the first line outside quotes. European spreadsheets export
 * `;`-separated "CSV", so trusting the extension alone would produce one-column tables.
 */
export function sniffDelimiter(text: string): string {
  const counts = new Map<string, number>();
  let quoted = false;
  for (const ch of text.slice(0, 64 * 1024)) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === '\n') break;
    else if (!quoted && (CANDIDATES as readonly string[]).includes(ch))
      counts.set(ch, (counts.get(ch) ?? 0) + 1);
  }
  let best = ',';
  let bestCount = 0;
  for (const d of CANDIDATES) {
    const count = counts.get(d) ?? 0;
    if (count > bestCount) [best, bestCount] = [d, count];
  }
  return best;
}

/**
 * Parses the text and renders it. Lenient on purpose (ragged rows, stray quotes): a spreadsheet
 * export with one odd line should still be indexed. A parse error is thrown as-is; the caller
 * decides what to do with it.
 */
export function csvToMarkdown(text: string, options: CsvOptions = {}): Conversion {
  const delimiter = options.delimiter ?? sniffDelimiter(text);
  const records = parse(text, {
    delimiter,
    bom: true,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
  });
  const warnings: string[] = [];
  const nonEmpty = records.filter((r) => r.some((cell) => cell.trim() !== ''));
  const [header, ...rows] = nonEmpty;
  if (header === undefined) return { markdown: '', warnings };
  if (rows.some((r) => r.length !== header.length)) {
    warnings.push('some rows have a different number of columns than the header row');
  }
  const markdown = renderTables(header, rows, { rowsPerTable: options.rowsPerTable });
  return { markdown: `${markdown}\n`, warnings };
}
