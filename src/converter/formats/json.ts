/**
 * JSON → readable markdown. The rules, in order (kept deliberately simple):
 *
 * 1. An array of flat objects (every value a string, number, boolean or null) → a GFM table whose
 *    columns are the keys in first-seen order (split into `Rows a–b` sections like CSV).
 * 2. Anything whose pretty-printed form is small (≤ `smallBytes`) → one fenced ```json block.
 * 3. A large object → a `## key` section per top-level key; each value is rendered as a scalar
 *    paragraph, a table (rule 1) or a fenced block — one level only, no deeper splitting.
 * 4. A large array that is not a table → fenced blocks of `itemsPerBlock` items under `## Items a–b`.
 *
 * JSON Lines (`.jsonl`/`.ndjson`) is read as an array of its lines' values.
 */
import { fenced, headingText, renderTables } from './markdown.js';
import type { Conversion } from './types.js';

interface JsonOptions {
  /** Pretty-printed size up to which the whole document is one code block. */
  smallBytes?: number;
  rowsPerTable?: number;
  itemsPerBlock?: number;
}

const DEFAULT_SMALL_BYTES = 32 * 1024;
const DEFAULT_ITEMS_PER_BLOCK = 100;
/** More columns than this is not a table anyone can read; it is shown as JSON instead. */
const MAX_TABLE_COLUMNS = 50;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Scalar = null | boolean | number | string;

function isScalar(value: Json): value is Scalar {
  return value === null || typeof value !== 'object';
}

function isPlainObject(value: Json): value is { [key: string]: Json } {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function scalarText(value: Scalar): string {
  return value === null ? '' : String(value);
}

/** The columns of an array of flat objects, or null if the array is not one. */
function tableColumns(value: Json): string[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const columns = new Set<string>();
  for (const item of value) {
    if (!isPlainObject(item)) return null;
    for (const [key, v] of Object.entries(item)) {
      if (!isScalar(v)) return null;
      columns.add(key);
    }
  }
  return columns.size === 0 || columns.size > MAX_TABLE_COLUMNS ? null : [...columns];
}

function renderTable(
  items: Json[],
  columns: string[],
  options: JsonOptions,
  level: number,
): string {
  const rows = items.map((item) => {
    const record = item as { [key: string]: Scalar | undefined };
    return columns.map((c) => scalarText(record[c] ?? null));
  });
  return renderTables(columns, rows, { rowsPerTable: options.rowsPerTable, headingLevel: level });
}

function pretty(value: Json): string {
  return JSON.stringify(value, null, 2);
}

/** A section's body: a table, a paragraph for a scalar, or a fenced block. */
function renderPart(value: Json, options: JsonOptions, level: number): string {
  const columns = tableColumns(value);
  if (columns !== null) return renderTable(value as Json[], columns, options, level);
  if (typeof value === 'string') return value.trim() === '' ? '(empty string)' : value;
  if (isScalar(value)) return scalarText(value) || 'null';
  return fenced(pretty(value), 'json');
}

/** `null`, `""`, `[]` and `{}` carry no text; the CLI reports them as nothing to extract. */
function isEmpty(value: Json): boolean {
  if (value === null) return true;
  if (typeof value === 'string') return value.trim() === '';
  if (typeof value !== 'object') return false;
  return Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0;
}

function renderDocument(value: Json, options: JsonOptions): string {
  if (isEmpty(value)) return '';
  const columns = tableColumns(value);
  if (columns !== null) return renderTable(value as Json[], columns, options, 2);
  const text = pretty(value);
  if (text.length <= (options.smallBytes ?? DEFAULT_SMALL_BYTES) || isScalar(value)) {
    return fenced(text, 'json');
  }
  if (Array.isArray(value)) {
    const size = Math.max(1, options.itemsPerBlock ?? DEFAULT_ITEMS_PER_BLOCK);
    const sections: string[] = [];
    for (let start = 0; start < value.length; start += size) {
      const slice = value.slice(start, start + size);
      sections.push(
        `## Items ${start + 1}–${start + slice.length}\n\n${fenced(pretty(slice), 'json')}`,
      );
    }
    return sections.join('\n\n');
  }
  return Object.entries(value)
    .map(([key, v]) => `## ${headingText(key)}\n\n${renderPart(v, options, 3)}`)
    .join('\n\n');
}

/** Parses and renders a JSON document; a SyntaxError is left for the caller to handle. */
export function jsonToMarkdown(text: string, options: JsonOptions = {}): Conversion {
  const value = JSON.parse(text.replace(/^\uFEFF/, '')) as Json;
  return finish(renderDocument(value, options));
}

function finish(markdown: string): Conversion {
  return { markdown: markdown === '' ? '' : `${markdown}\n`, warnings: [] };
}

/** JSON Lines: one value per non-blank line, rendered as if it were an array. */
export function jsonLinesToMarkdown(text: string, options: JsonOptions = {}): Conversion {
  const values: Json[] = [];
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      values.push(JSON.parse(line) as Json);
    } catch (error) {
      throw new SyntaxError(`line ${i + 1}: ${(error as Error).message}`, { cause: error });
    }
  });
  return finish(renderDocument(values, options));
}
