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

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
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

/**
 * Levels that are pretty-printed. JSON.stringify recurses (a few thousand levels overflow the
 * stack) and indents every line by its depth, so a deep file's output would grow with the square
 * of its depth; below this level values are written compactly on one line instead.
 */
export const MAX_JSON_INDENT_DEPTH = 100;

/** Whether `value` nests arrays or objects more than `limit` levels deep (no recursion). */
function deeperThan(value: Json, limit: number): boolean {
  const stack: [Json, number][] = [[value, 0]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, depth] = top;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

interface Frame {
  items: Json[];
  keys: string[] | null;
  next: number;
  depth: number;
}

/** JSON.stringify(value, null, 2) down to `indentDepth`, compact below it; iterative. */
export function writeJson(root: Json, indentDepth: number): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const open = (value: Json, depth: number) => {
    if (value === null || typeof value !== 'object') {
      out.push(JSON.stringify(value));
      return;
    }
    const keys = Array.isArray(value) ? null : Object.keys(value);
    const items =
      keys === null
        ? (value as Json[])
        : keys.map((k) => (value as Record<string, Json>)[k] ?? null);
    if (items.length === 0) out.push(keys === null ? '[]' : '{}');
    else {
      out.push(keys === null ? '[' : '{');
      stack.push({ items, keys, next: 0, depth });
    }
  };
  open(root, 0);
  for (let frame = stack.at(-1); frame !== undefined; frame = stack.at(-1)) {
    const indented = frame.depth < indentDepth;
    const i = frame.next++;
    if (i === frame.items.length) {
      stack.pop();
      const close = frame.keys === null ? ']' : '}';
      out.push(indented ? `\n${'  '.repeat(frame.depth)}${close}` : close);
      continue;
    }
    if (i > 0) out.push(',');
    if (indented) out.push(`\n${'  '.repeat(frame.depth + 1)}`);
    const key = frame.keys?.[i];
    if (key !== undefined) out.push(`${JSON.stringify(key)}${indented ? ': ' : ':'}`);
    open(frame.items[i] ?? null, frame.depth + 1);
  }
  return out.join('');
}

function pretty(value: Json): string {
  return deeperThan(value, MAX_JSON_INDENT_DEPTH)
    ? writeJson(value, MAX_JSON_INDENT_DEPTH)
    : JSON.stringify(value, null, 2);
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
  return finish(renderDocument(value, options), value);
}

function finish(markdown: string, value: Json): Conversion {
  const warnings = deeperThan(value, MAX_JSON_INDENT_DEPTH)
    ? [
        `the JSON nests more than ${MAX_JSON_INDENT_DEPTH} levels deep; ` +
          'deeper levels are written compactly, on one line',
      ]
    : [];
  return { markdown: markdown === '' ? '' : `${markdown}\n`, warnings };
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
  return finish(renderDocument(values, options), values);
}
