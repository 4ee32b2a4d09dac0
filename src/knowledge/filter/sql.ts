/**
 * Filters as SQL conditions on `knowledge_documents`, one per engine, with the meaning of
 * evaluate.ts. SQLite calls that evaluator itself (a registered function, `aps_filter`), so the
 * two cannot drift; PostgreSQL compiles the tree to jsonb operators, and the filter tests run
 * the same cases against both.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sql, type RawBuilder } from 'kysely';
import { matchesFilter } from './evaluate.js';
import type { Field, FilterNode } from './filter.js';
import { isoMillis } from './iso-date.js';

/** SQL text and bound values, in order; turned into a query by toPg or toKysely. */
export type Fragment = (string | { value: unknown })[];

/** An engine's filter condition on documents; `alias` prefixes their columns (e.g. `d.`). */
export type FilterSql = (node: FilterNode, alias: string) => Fragment;

/** What document lists need of an engine: filters, and "the name contains `q`" (any case). */
export interface DocumentSql {
  filter: FilterSql;
  nameContains(q: string, alias: string): Fragment;
}

/** The fragment's SQL with `$n` placeholders; its values appended to `params`. */
export function toPg(fragment: Fragment, params: unknown[]): string {
  return fragment
    .map((part) => {
      if (typeof part === 'string') return part;
      params.push(part.value);
      return `$${params.length}`;
    })
    .join('');
}

/** The fragment's SQL with `?` placeholders (SQLite); its values appended to `params`. */
export function toSqlite(fragment: Fragment, params: unknown[]): string {
  return fragment
    .map((part) => {
      if (typeof part === 'string') return part;
      params.push(part.value);
      return '?';
    })
    .join('');
}

/** The fragment as a Kysely expression (values bound). */
export function toKysely(fragment: Fragment): RawBuilder<boolean> {
  return sql<boolean>`${sql.join(
    fragment.map((part) => (typeof part === 'string' ? sql.raw(part) : sql.val(part.value))),
    sql.raw(''),
  )}`;
}

// --- SQLite -------------------------------------------------------------------------------------

/** Parsed trees by their JSON: a query evaluates its filter once per document row. */
const parsed = new Map<string, FilterNode>();

function treeOf(json: string): FilterNode {
  let node = parsed.get(json);
  if (node === undefined) {
    if (parsed.size >= 64) parsed.delete(parsed.keys().next().value as string);
    node = JSON.parse(json) as FilterNode;
    parsed.set(json, node);
  }
  return node;
}

/**
 * Parsed metadata by its JSON text: a filter evaluates every document's metadata, and parsing is
 * most of that cost (the texts repeat query after query). Emptied when full.
 */
const metadataCache = new Map<string, Record<string, unknown>>();
const METADATA_CACHE_MAX = 50_000;

function metadataOf(text: string): Record<string, unknown> {
  let metadata = metadataCache.get(text);
  if (metadata === undefined) {
    const value: unknown = JSON.parse(text);
    metadata =
      typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
    if (metadataCache.size >= METADATA_CACHE_MAX) metadataCache.clear();
    metadataCache.set(text, metadata);
  }
  return metadata;
}

/** Registers `aps_filter(tree, metadata, name, file_type, source, created_at)` on a connection. */
export function registerSqliteFilter(native: BetterSqlite3.Database): void {
  native.function(
    'aps_filter',
    { deterministic: true, varargs: false },
    (
      tree: unknown,
      metadata: unknown,
      name: unknown,
      fileType: unknown,
      source: unknown,
      createdAt: unknown,
    ) => {
      const target = {
        name: String(name),
        fileType: String(fileType),
        source: String(source),
        createdAt: String(createdAt),
        metadata: metadataOf(String(metadata)),
      };
      return matchesFilter(treeOf(String(tree)), target) ? 1 : 0;
    },
  );
  registerContains(native);
}

/** SQLite's lower() folds ASCII only: names are compared in JavaScript, case-folded. */
function registerContains(native: BetterSqlite3.Database): void {
  native.function('aps_contains', { deterministic: true }, (text: unknown, part: unknown) =>
    String(text).toLowerCase().includes(String(part).toLowerCase()) ? 1 : 0,
  );
}

export const sqliteFilterSql: FilterSql = (node, alias) => [
  'aps_filter(',
  { value: JSON.stringify(node) },
  `, ${alias}metadata, ${alias}name, ${alias}file_type, ${alias}source, ${alias}created_at) = 1`,
];

// --- PostgreSQL ---------------------------------------------------------------------------------

const COLUMNS = { name: 'name', fileType: 'file_type', source: 'source', createdAt: 'created_at' };
const OPERATORS = { gt: '>', gte: '>=', lt: '<', lte: '<=' };

function pgNode(node: FilterNode, alias: string, out: Fragment): void {
  const metadata = (field: Extract<Field, { kind: 'metadata' }>) => {
    out.push(`(${alias}metadata::jsonb -> `, { value: field.key }, '::text)');
  };
  switch (node.op) {
    case 'and':
    case 'or': {
      if (node.nodes.length === 0) {
        out.push(node.op === 'and' ? 'true' : 'false');
        return;
      }
      out.push('(');
      node.nodes.forEach((n, i) => {
        if (i > 0) out.push(` ${node.op} `);
        pgNode(n, alias, out);
      });
      out.push(')');
      return;
    }
    case 'not':
      out.push('not ');
      pgNode(node.node, alias, out);
      return;
    case 'exists':
      if (node.field.kind === 'document') out.push('true');
      else out.push(`(${alias}metadata::jsonb ? `, { value: node.field.key }, '::text)');
      return;
    case 'in': {
      const field = node.field;
      if (field.kind === 'metadata') {
        // A jsonb scalar contains only an equal scalar; an array, also each of its elements.
        out.push('coalesce(');
        metadata(field);
        out.push(
          ' @> any(',
          { value: node.values.map((v) => JSON.stringify(v)) },
          '::jsonb[]), false)',
        );
      } else if (field.name === 'createdAt') {
        out.push(`coalesce(aps_iso_ms(${alias}created_at) = any(`);
        out.push({ value: node.values.map((v) => isoMillis(v as string)) }, '::float8[]), false)');
      } else {
        out.push(`${alias}${COLUMNS[field.name]} = any(`, { value: node.values }, '::text[])');
      }
      return;
    }
    case 'range': {
      const op = OPERATORS[node.range];
      const field = node.field;
      const { bound } = node;
      if (field.kind === 'document') {
        out.push(`coalesce(aps_iso_ms(${alias}created_at) ${op} `);
        out.push({ value: bound.type === 'date' ? bound.ms : Number.NaN }, '::float8, false)');
        return;
      }
      // CASE, not AND: PostgreSQL may evaluate either side of an AND first, and the cast of a
      // string to numeric fails.
      out.push('coalesce(case jsonb_typeof(');
      metadata(field);
      if (bound.type === 'number') {
        out.push(") when 'number' then ");
        metadata(field);
        out.push(`::numeric ${op} `, { value: String(bound.value) }, '::numeric end, false)');
      } else {
        out.push(") when 'string' then aps_iso_ms(");
        metadata(field);
        out.push(` #>> '{}') ${op} `, { value: bound.ms }, '::float8 end, false)');
      }
      return;
    }
  }
}

export const postgresFilterSql: FilterSql = (node, alias) => {
  const out: Fragment = [];
  pgNode(node, alias, out);
  return out;
};

export const sqliteDocumentSql: DocumentSql = {
  filter: sqliteFilterSql,
  nameContains: (q, alias) => [`aps_contains(${alias}name, `, { value: q }, ') = 1'],
};

export const postgresDocumentSql: DocumentSql = {
  filter: postgresFilterSql,
  nameContains: (q, alias) => [`strpos(lower(${alias}name), lower(`, { value: q }, '::text)) > 0'],
};
