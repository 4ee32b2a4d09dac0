/**
 * ODS → one section per sheet. content.xml is streamed one row at a time, and each row is read by
 * a small tokenizer rather than a tree parser (a tree per row costs several times more in time and
 * garbage on sheets of a million cells). Cells show their displayed text (`<text:p>`, e.g.
 * `12.50 €`, a formatted date) and fall back to the typed value; comments and notes are left out.
 * ODF compresses runs of equal rows and cells (`number-rows-repeated`, often a million empty rows
 * to the sheet's end): empty runs are skipped without expanding them, and non-empty runs are
 * expanded cell by cell against maxCells.
 */
import { EXIT_CODES } from '../../contract.js';
import { ConvertError } from '../convert-error.js';
import { checkOdfPackage } from './odf.js';
import { scanXml } from './scan.js';
import { CellBudget, joinSheets, SheetGrid } from './sheets.js';
import { attr, decodeEntities, tagAttributes, type XmlElement } from './xml.js';
import type { ZipArchive } from './zip.js';

/** Columns of the widest spreadsheet applications; a repeat running past this is cut. */
const MAX_COLUMNS = 16_384;
const CELLS = new Set(['table-cell', 'covered-table-cell']);
/** Content of a cell that is not its value. */
const SKIPPED = new Set(['annotation', 'note', 'tracked-changes']);
const VALUE_ATTRIBUTES = ['string-value', 'value', 'date-value', 'time-value', 'boolean-value'];
const TOKEN = /<(\/?)(?:[\w.-]+:)?([\w.-]+)((?:\s[^>]*?)?)(\/?)>|([^<]+)/g;

function element(local: string, source: string): XmlElement {
  return { name: local, local, attrs: tagAttributes(source), children: [] };
}

function repeatCount(el: XmlElement, name: string): number {
  const n = Number(attr(el, name) ?? 1);
  return Number.isSafeInteger(n) && n > 1 ? n : 1;
}

interface Cell {
  el: XmlElement;
  nested: number; // cells of a sub-table inside this one
  paragraphs: string[];
  text: string | null; // the paragraph being read
  skip: number; // depth inside a comment or note
}

/** One row's source → its repeat count and non-empty cells as `[column, text]`. */
export function readRow(xml: string): { repeat: number; cells: [number, string][] } {
  const cells: [number, string][] = [];
  let repeat = 1;
  let col = 0;
  let cell: Cell | null = null;
  const finish = (c: Cell) => {
    const value =
      c.paragraphs.length > 0
        ? c.paragraphs.join('\n')
        : (VALUE_ATTRIBUTES.map((n) => attr(c.el, n)).find((v) => v !== undefined) ?? '');
    const span = repeatCount(c.el, 'number-columns-repeated');
    if (value.trim() !== '') {
      for (let i = 0; i < span && col + i < MAX_COLUMNS; i++) cells.push([col + i, value]);
    }
    col = Math.min(MAX_COLUMNS, col + span);
  };
  for (const m of xml.matchAll(TOKEN)) {
    const [, slash, local = '', attrs = '', selfClosing, text] = m;
    if (text !== undefined) {
      if (cell !== null && cell.skip === 0 && cell.text !== null) cell.text += decodeEntities(text);
      continue;
    }
    if (cell === null) {
      if (local === 'table-row' && slash === '')
        repeat = repeatCount(element(local, attrs), 'number-rows-repeated');
      if (CELLS.has(local) && slash === '') {
        cell = { el: element(local, attrs), nested: 0, paragraphs: [], text: null, skip: 0 };
        if (selfClosing === '/') {
          finish(cell);
          cell = null;
        }
      }
      continue;
    }
    const open = slash === '';
    if (cell.skip > 0 || (open && SKIPPED.has(local))) {
      if (selfClosing !== '/') cell.skip += open ? 1 : -1;
    } else if (CELLS.has(local)) {
      if (open && selfClosing !== '/') cell.nested++;
      else if (!open && cell.nested-- === 0) {
        finish(cell);
        cell = null;
      }
    } else if (local === 'p' || local === 'h') {
      if (open && cell.text === null) cell.text = '';
      if ((!open || selfClosing === '/') && cell.text !== null) {
        cell.paragraphs.push(cell.text);
        cell.text = null;
      }
    } else if (cell.text !== null && open) {
      if (local === 's')
        cell.text += ' '.repeat(Math.min(1000, repeatCount(element(local, attrs), 'c')));
      else if (local === 'tab') cell.text += '\t';
      else if (local === 'line-break') cell.text += '\n';
    }
  }
  return { repeat, cells };
}

export async function odsToMarkdown(
  archive: ZipArchive,
  maxCells: number,
): Promise<{ markdown: string; warnings: string[] }> {
  await checkOdfPackage(archive, 'ODS');
  const budget = new CellBudget(maxCells);
  const sections: string[] = [];
  let grid: SheetGrid | null = null;
  let depth = 0;
  let sheets = 0;
  const events = scanXml(archive.textChunks('content.xml'), ['table'], ['table-row']);
  for await (const event of events) {
    if (event.type === 'open') {
      if (depth++ === 0) {
        const table: XmlElement = { name: '', local: 'table', attrs: event.attrs, children: [] };
        grid = new SheetGrid(attr(table, 'name') ?? `Sheet ${sheets + 1}`, budget);
        sheets++;
      }
    } else if (event.type === 'close') {
      if (--depth === 0 && grid !== null) {
        sections.push(grid.render());
        grid = null;
      }
    } else if (grid !== null) {
      const { repeat, cells } = readRow(event.xml);
      if (cells.length === 0) continue;
      for (let i = 0; i < repeat; i++) grid.addRow(cells);
    }
  }
  if (sheets === 0) throw new ConvertError(EXIT_CODES.CORRUPT, 'the ODS file has no sheets');
  return { markdown: joinSheets(sections, 'spreadsheet'), warnings: [] };
}
