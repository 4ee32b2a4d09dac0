/**
 * XLSX → one section per sheet. Sheets and shared strings are streamed row by row through the zip
 * guard (a sheet is never one XML tree), so memory follows the cells kept, which maxCells caps.
 * Values: shared and inline strings as text, formulas as their cached value, booleans TRUE/FALSE,
 * numbers without float noise (15 significant digits, as Excel shows them), date-formatted
 * numbers as ISO dates, percent formats as percentages.
 */
import { EXIT_CODES } from '../../contract.js';
import { ConvertError } from '../convert-error.js';
import { dirname, mainPart, parseTree, readRelationships } from './opc.js';
import { CellBudget, joinSheets, SheetGrid } from './sheets.js';
import { scanXml } from './scan.js';
import { attr, childNamed, childrenNamed, decodeEntities, tagAttributes } from './xml.js';
import type { ZipArchive } from './zip.js';

type NumberKind = 'general' | 'date' | 'time' | 'datetime' | 'percent';

const BUILTIN_FORMATS: Record<number, NumberKind> = {
  9: 'percent',
  10: 'percent',
  14: 'date',
  15: 'date',
  16: 'date',
  17: 'date',
  18: 'time',
  19: 'time',
  20: 'time',
  21: 'time',
  22: 'datetime',
  45: 'time',
  46: 'time',
  47: 'time',
};
// Locale-specific built-in date formats (CJK calendars).
for (const id of [27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 50, 51, 52, 53, 54, 55, 56, 57, 58]) {
  BUILTIN_FORMATS[id] = 'date';
}

/** What a custom number format shows, judged from its first section without literals. */
export function formatKind(code: string): NumberKind {
  const section = code.split(';')[0] ?? '';
  const elapsed = /\[(?:h+|m+|s+)\]/i.test(section);
  const bare = section.replace(/"[^"]*"|\\.|_.|\*.|\[[^\]]*\]/g, '');
  if (/^general$/i.test(bare.trim())) return 'general';
  const time = elapsed || /[hs]/i.test(bare);
  const date = /[dy]/i.test(bare) || (/m/i.test(bare) && !time);
  if (date && time) return 'datetime';
  if (date) return 'date';
  if (time) return 'time';
  return bare.includes('%') ? 'percent' : 'general';
}

function plainNumber(n: number): string {
  return String(Number(n.toPrecision(15)));
}

/** Most stored numbers are already short and canonical (`42`, `-0.5`); only the rest need work. */
function isShortNumber(value: string): boolean {
  return value.length <= 16 && /^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/.test(value);
}

/** An Excel serial day number as `YYYY-MM-DD`, `HH:MM[:SS]` or both. */
export function serialDate(serial: number, kind: NumberKind, date1904: boolean): string | null {
  // Excel counts a fictitious 1900-02-29 (serial 60); serials before it are one day off.
  const base = date1904 ? Date.UTC(1904, 0, 1) : Date.UTC(1899, 11, serial < 60 ? 31 : 30);
  const date = new Date(base + Math.round(serial * 86_400) * 1000);
  if (Number.isNaN(date.getTime())) return null;
  const iso = date.toISOString();
  const day = iso.slice(0, 10);
  const time = iso.slice(11, 19).replace(/:00$/, '');
  if (kind === 'time' && serial < 1) return time;
  if (kind === 'date' && time === '00:00') return day;
  return `${day} ${time}`;
}

interface Styles {
  kinds: NumberKind[];
  date1904: boolean;
}

async function readStyles(archive: ZipArchive, part: string | undefined): Promise<NumberKind[]> {
  if (part === undefined || !archive.has(part)) return [];
  const root = await parseTree(archive, part);
  const custom = new Map<number, NumberKind>();
  const numFmts = childNamed(root, 'numFmts');
  for (const fmt of numFmts === undefined ? [] : childrenNamed(numFmts, 'numFmt')) {
    custom.set(Number(attr(fmt, 'numFmtId')), formatKind(attr(fmt, 'formatCode') ?? ''));
  }
  const xfs = childNamed(root, 'cellXfs');
  return (xfs === undefined ? [] : childrenNamed(xfs, 'xf')).map((xf) => {
    const id = Number(attr(xf, 'numFmtId') ?? 0);
    return custom.get(id) ?? BUILTIN_FORMATS[id] ?? 'general';
  });
}

/** Text of `<t>` runs, leaving out phonetic guides (`<rPh>`), which repeat the text as kana. */
function runText(xml: string): string {
  const body = xml.replace(/<(?:[\w.-]+:)?rPh\b[\s\S]*?<\/(?:[\w.-]+:)?rPh>/g, '');
  let text = '';
  for (const m of body.matchAll(/<(?:[\w.-]+:)?t\b[^>]*>([\s\S]*?)<\/(?:[\w.-]+:)?t>/g)) {
    text += decodeEntities(m[1] ?? '');
  }
  return text;
}

async function readSharedStrings(archive: ZipArchive, part: string | undefined) {
  const strings: string[] = [];
  if (part === undefined || !archive.has(part)) return strings;
  for await (const event of scanXml(archive.textChunks(part), [], ['si'])) {
    if (event.type === 'element') strings.push(runText(event.xml));
  }
  return strings;
}

/** `B12` → 1 (zero-based column); undefined when the reference has no column letters. */
function columnOf(ref: string | undefined): number | undefined {
  const letters = /^\$?([A-Za-z]{1,3})/.exec(ref ?? '')?.[1];
  if (letters === undefined) return undefined;
  let col = 0;
  for (const ch of letters.toUpperCase()) col = col * 26 + ch.charCodeAt(0) - 64;
  return col - 1;
}

const CELL = /<(?:[\w.-]+:)?c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/(?:[\w.-]+:)?c>)/g;
const VALUE = /<(?:[\w.-]+:)?v\b[^>]*>([\s\S]*?)<\/(?:[\w.-]+:)?v>/;
const INLINE = /<(?:[\w.-]+:)?is\b[^>]*>([\s\S]*?)<\/(?:[\w.-]+:)?is>/;

function cellText(
  attrs: Record<string, string>,
  inner: string,
  shared: readonly string[],
  styles: Styles,
): string {
  const type = attrs.t ?? 'n';
  if (type === 'inlineStr') return runText(INLINE.exec(inner)?.[1] ?? '');
  const raw = VALUE.exec(inner)?.[1];
  if (raw === undefined) return ''; // a formula never calculated has no cached value
  const value = decodeEntities(raw);
  switch (type) {
    case 's':
      return shared[Number(value)] ?? '';
    case 'b':
      return value.trim() === '1' ? 'TRUE' : 'FALSE';
    case 'd':
      return value.replace(/T00:00:00(?:\.0+)?Z?$/, '');
    case 'str':
    case 'e':
      return value;
    default: {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n)) return value;
      const kind = styles.kinds[Number(attrs.s ?? 0)] ?? 'general';
      if (kind === 'percent') return `${plainNumber(n * 100)}%`;
      if (kind !== 'general') return serialDate(n, kind, styles.date1904) ?? plainNumber(n);
      return isShortNumber(value) ? value : plainNumber(n);
    }
  }
}

async function readSheet(
  archive: ZipArchive,
  part: string,
  grid: SheetGrid,
  shared: readonly string[],
  styles: Styles,
): Promise<void> {
  for await (const event of scanXml(archive.textChunks(part), [], ['row'])) {
    if (event.type !== 'element') continue;
    const cells: [number, string][] = [];
    let next = 0;
    for (const m of event.xml.matchAll(CELL)) {
      const attrs = tagAttributes(m[1] ?? '');
      const col = columnOf(attrs.r) ?? next;
      next = col + 1;
      cells.push([col, cellText(attrs, m[2] ?? '', shared, styles)]);
    }
    grid.addRow(cells);
  }
}

export async function xlsxToMarkdown(
  archive: ZipArchive,
  maxCells: number,
): Promise<{ markdown: string; warnings: string[] }> {
  const workbookPart = await mainPart(archive, 'xl/workbook.xml', 'XLSX');
  const workbook = await parseTree(archive, workbookPart);
  const rels = await readRelationships(archive, workbookPart);
  const byType = (type: string) => rels.find((r) => r.type === type)?.target;
  const dir = dirname(workbookPart);
  const date1904 = ['1', 'true'].includes(
    attr(childNamed(workbook, 'workbookPr') ?? workbook, 'date1904') ?? '',
  );
  const styles: Styles = {
    kinds: await readStyles(archive, byType('styles') ?? `${dir}/styles.xml`),
    date1904,
  };
  const shared = await readSharedStrings(
    archive,
    byType('sharedStrings') ?? `${dir}/sharedStrings.xml`,
  );
  const sheets = childNamed(workbook, 'sheets');
  if (sheets === undefined) {
    throw new ConvertError(EXIT_CODES.CORRUPT, 'the XLSX workbook lists no sheets');
  }
  const budget = new CellBudget(maxCells);
  const warnings: string[] = [];
  const sections: string[] = [];
  for (const sheet of childrenNamed(sheets, 'sheet')) {
    const name = attr(sheet, 'name') ?? 'Sheet';
    const rel = rels.find((r) => r.id === attr(sheet, 'r:id'));
    if (rel !== undefined && rel.type !== 'worksheet') continue; // chart sheets hold no cells
    if (rel === undefined || !archive.has(rel.target)) {
      warnings.push(`sheet "${name}" is missing from the file and was skipped`);
      continue;
    }
    const grid = new SheetGrid(name, budget);
    await readSheet(archive, rel.target, grid, shared, styles);
    sections.push(grid.render());
  }
  return { markdown: joinSheets(sections, 'workbook'), warnings };
}
