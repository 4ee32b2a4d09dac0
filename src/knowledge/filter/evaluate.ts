/**
 * The filter language's meaning, in JavaScript: SQLite evaluates filters with it (sql.ts
 * registers it as a SQL function), and tests hold the PostgreSQL compiler to it.
 */
import type { Bound, Field, FilterNode, RangeOp, Scalar } from './filter.js';
import { isoMillis } from './iso-date.js';

/** What a filter sees of a document. */
export interface FilterTarget {
  name: string;
  fileType: string;
  source: string;
  /** ISO date-time (`toISOString()`). */
  createdAt: string;
  metadata: Record<string, unknown>;
}

function valueOf(field: Field, doc: FilterTarget): unknown {
  if (field.kind === 'document') return doc[field.name];
  return Object.hasOwn(doc.metadata, field.key) ? doc.metadata[field.key] : undefined;
}

function compare(range: RangeOp, a: number, b: number): boolean {
  switch (range) {
    case 'gt':
      return a > b;
    case 'gte':
      return a >= b;
    case 'lt':
      return a < b;
    case 'lte':
      return a <= b;
  }
}

/** A stored value equals a filter value: same type, or a stored array containing the string. */
function equals(field: Field, stored: unknown, value: Scalar): boolean {
  if (field.kind === 'document' && field.name === 'createdAt') {
    const ms = typeof stored === 'string' ? isoMillis(stored) : null;
    return ms !== null && ms === isoMillis(value as string);
  }
  if (Array.isArray(stored)) return typeof value === 'string' && stored.includes(value);
  return stored === value;
}

function inRange(stored: unknown, range: RangeOp, bound: Bound): boolean {
  if (bound.type === 'number')
    return typeof stored === 'number' && compare(range, stored, bound.value);
  const ms = typeof stored === 'string' ? isoMillis(stored) : null;
  return ms !== null && compare(range, ms, bound.ms);
}

/** Whether the document satisfies the filter. */
export function matchesFilter(node: FilterNode, doc: FilterTarget): boolean {
  switch (node.op) {
    case 'and':
      return node.nodes.every((n) => matchesFilter(n, doc));
    case 'or':
      return node.nodes.some((n) => matchesFilter(n, doc));
    case 'not':
      return !matchesFilter(node.node, doc);
    case 'in': {
      const stored = valueOf(node.field, doc);
      return node.values.some((v) => equals(node.field, stored, v));
    }
    case 'range':
      return inRange(valueOf(node.field, doc), node.range, node.bound);
    case 'exists':
      return valueOf(node.field, doc) !== undefined;
  }
}
