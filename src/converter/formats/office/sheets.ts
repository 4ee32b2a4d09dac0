/**
 * Spreadsheet sheets → markdown, shared by XLSX and ODS: one `## <sheet name>` section per sheet,
 * its first non-empty row as the header, large sheets split into `### Rows a–b` tables that each
 * repeat the header (as CSV files are). Cells are counted against `maxCells` while the rows are
 * read, so a huge sheet is refused before it is held in memory.
 */
import { EXIT_CODES } from '../../contract.js';
import { ConvertError } from '../convert-error.js';
import { DEFAULT_ROWS_PER_TABLE, headingText, renderTables } from '../markdown.js';

/** Cells converted so far across the whole workbook. */
export class CellBudget {
  private used = 0;

  constructor(private readonly max: number) {}

  take(count: number): void {
    this.used += count;
    if (this.used > this.max) {
      throw new ConvertError(
        EXIT_CODES.TOO_LARGE,
        `the spreadsheet has more than ${this.max} cells; at most ${this.max} are converted`,
      );
    }
  }
}

/** One sheet's non-empty cells as `[column, text]` pairs per row; empty rows are dropped. */
export class SheetGrid {
  private readonly rows: (readonly [number, string])[][] = [];
  private minCol = Number.POSITIVE_INFINITY;
  private maxCol = -1;
  private cells = 0;

  constructor(
    readonly name: string,
    private readonly budget: CellBudget,
  ) {}

  /** Adds a row; cells with only whitespace count as empty. */
  addRow(cells: Iterable<readonly [number, string]>): void {
    const row: (readonly [number, string])[] = [];
    for (const [col, value] of cells) {
      if (value.trim() === '') continue;
      row.push([col, value]);
      this.minCol = Math.min(this.minCol, col);
      this.maxCol = Math.max(this.maxCol, col);
    }
    if (row.length === 0) return;
    this.budget.take(row.length);
    this.cells += row.length;
    this.rows.push(row);
  }

  get isEmpty(): boolean {
    return this.rows.length === 0;
  }

  /**
   * The sheet's section, or '' when it has no cells. Leading and trailing empty columns are cut;
   * the empty cells that pad the rest are counted too, since they are written out.
   */
  render(rowsPerTable = DEFAULT_ROWS_PER_TABLE): string {
    if (this.rows.length === 0) return '';
    const width = this.maxCol - this.minCol + 1;
    this.budget.take(this.rows.length * width - this.cells);
    const dense = this.rows.map((row) => {
      const out = Array.from({ length: width }, () => '');
      for (const [col, value] of row) out[col - this.minCol] = value;
      return out;
    });
    const [header = [], ...body] = dense;
    const tables = renderTables(header, body, { rowsPerTable, headingLevel: 3 });
    return `## ${headingText(this.name)}\n\n${tables}`;
  }
}

/** Joins the rendered sheets; throws NOTHING_EXTRACTABLE when every sheet is empty. */
export function joinSheets(sections: readonly string[], what: string): string {
  const nonEmpty = sections.filter((s) => s !== '');
  if (nonEmpty.length === 0) {
    throw new ConvertError(EXIT_CODES.NOTHING_EXTRACTABLE, `the ${what} has no non-empty cells`);
  }
  return `${nonEmpty.join('\n\n')}\n`;
}
