/**
 * The filter language of retrieval and document lists: parsed and validated once into a typed
 * tree (`FilterNode`) that the JS evaluator (evaluate.ts) and the SQL compilers (sql.ts) share.
 *
 * Field names: the document fields `name`, `fileType`, `source` and `createdAt` are written bare;
 * any other bare name is a metadata key (`{"lang": "en"}`, as users write it). `metadata.<key>`
 * (everything after the first dot is the key, dots included) always names a metadata key, which is
 * how to reach a key spelt like a document field (`metadata.name`); clients that build filters from
 * user keys should use that spelling.
 *
 * Operators: a value (equality), `$eq`, `$ne`, `$in`, `$nin`, `$gt`, `$gte`, `$lt`, `$lte`,
 * `$exists`; `$and` / `$or` (arrays of filters); several keys in one object all apply. Types are
 * strict: `"1"` never equals `1`. A metadata array (of strings) equals a string it contains.
 * `$ne` and `$nin` also match documents without the key. Ranges take a number (numbers only) or
 * an ISO 8601 date (dates only, compared as instants; see isoMillis).
 */
import { AppError } from '../../errors.js';
import { isoMillis } from './iso-date.js';

export type Scalar = string | number | boolean;

export const DOCUMENT_FIELDS = ['name', 'fileType', 'source', 'createdAt'] as const;
export type DocumentField = (typeof DOCUMENT_FIELDS)[number];

export type Field = { kind: 'metadata'; key: string } | { kind: 'document'; name: DocumentField };

/** A range bound: a number, or an ISO date as milliseconds since the epoch (UTC). */
export type Bound = { type: 'number'; value: number } | { type: 'date'; ms: number };

export type RangeOp = 'gt' | 'gte' | 'lt' | 'lte';

export type FilterNode =
  | { op: 'and' | 'or'; nodes: FilterNode[] }
  | { op: 'not'; node: FilterNode }
  /** Equal to one of `values` (a metadata array: contains one of them). */
  | { op: 'in'; field: Field; values: Scalar[] }
  | { op: 'range'; field: Field; range: RangeOp; bound: Bound }
  | { op: 'exists'; field: Field };

/** Bounds of a filter: nesting depth, conditions in all, values of one `$in`, its JSON size. */
export const FILTER_LIMITS = { depth: 8, conditions: 100, inValues: 100, jsonBytes: 16_384 };

const RANGES: Record<string, RangeOp> = { $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte' };

function fail(path: string, message: string): never {
  throw new AppError('VALIDATION_ERROR', `${path} ${message}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The field a key names, or a 400 that says how to write a metadata key. */
function fieldOf(key: string, path: string): Field {
  if (key.startsWith('metadata.')) {
    const name = key.slice('metadata.'.length);
    if (name === '') fail(path, 'names no metadata key (write `metadata.<key>`)');
    return { kind: 'metadata', key: name };
  }
  if ((DOCUMENT_FIELDS as readonly string[]).includes(key)) {
    return { kind: 'document', name: key as DocumentField };
  }
  if (key.startsWith('$')) fail(path, `is not an operator here (at this level: $and, $or)`);
  return { kind: 'metadata', key };
}

class Parser {
  private conditions = 0;

  private count(path: string): void {
    if (++this.conditions > FILTER_LIMITS.conditions) {
      fail(path, `makes the filter hold more than ${FILTER_LIMITS.conditions} conditions`);
    }
  }

  /** An object of keys (fields, `$and`, `$or`), all of which apply. */
  object(value: unknown, path: string, depth: number): FilterNode {
    if (!isPlainObject(value)) fail(path, 'must be an object');
    if (depth > FILTER_LIMITS.depth) fail(path, `nests deeper than ${FILTER_LIMITS.depth} levels`);
    const nodes: FilterNode[] = [];
    for (const [key, inner] of Object.entries(value)) {
      const at = `${path}.${key}`;
      if (key === '$and' || key === '$or') {
        if (!Array.isArray(inner) || inner.length === 0) fail(at, 'must be a non-empty array');
        const parts = inner.map((v, i) => this.object(v, `${at}[${i}]`, depth + 1));
        nodes.push({ op: key === '$and' ? 'and' : 'or', nodes: parts });
      } else {
        nodes.push(...this.conditionsOf(fieldOf(key, at), inner, at));
      }
    }
    return nodes.length === 1 ? (nodes[0] as FilterNode) : { op: 'and', nodes };
  }

  /** What one field must satisfy: a value, or an object of operators. */
  private conditionsOf(field: Field, value: unknown, path: string): FilterNode[] {
    if (!isPlainObject(value)) {
      this.count(path);
      return [{ op: 'in', field, values: [this.scalar(field, value, path)] }];
    }
    const keys = Object.keys(value);
    if (keys.length === 0) fail(path, 'must hold at least one operator');
    return keys.map((op) => {
      const at = `${path}.${op}`;
      const operand = value[op];
      this.count(at);
      switch (op) {
        case '$eq':
          return { op: 'in', field, values: [this.scalar(field, operand, at)] };
        case '$ne':
          return {
            op: 'not',
            node: { op: 'in', field, values: [this.scalar(field, operand, at)] },
          };
        case '$in':
        case '$nin': {
          if (!Array.isArray(operand) || operand.length === 0)
            fail(at, 'must be a non-empty array');
          if (operand.length > FILTER_LIMITS.inValues) {
            fail(at, `holds more than ${FILTER_LIMITS.inValues} values`);
          }
          const values = operand.map((v, i) => this.scalar(field, v, `${at}[${i}]`));
          const node: FilterNode = { op: 'in', field, values };
          return op === '$in' ? node : { op: 'not', node };
        }
        case '$exists': {
          if (typeof operand !== 'boolean') fail(at, 'must be true or false');
          const node: FilterNode = { op: 'exists', field };
          return operand ? node : { op: 'not', node };
        }
        default: {
          const range = RANGES[op];
          if (range === undefined) {
            fail(at, 'is not an operator: use $eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists');
          }
          return { op: 'range', field, range, bound: this.bound(field, operand, at) };
        }
      }
    });
  }

  /** A value to compare for equality with the field. */
  private scalar(field: Field, value: unknown, path: string): Scalar {
    if (field.kind === 'document') {
      if (field.name === 'createdAt') {
        if (typeof value !== 'string' || isoMillis(value) === null) {
          fail(path, 'must be an ISO date (e.g. 2024-05-01 or 2024-05-01T12:00:00Z)');
        }
        return value;
      }
      if (typeof value !== 'string') fail(path, 'must be a string');
      return value;
    }
    if (typeof value === 'string' || typeof value === 'boolean') return value;
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    if (value === null) fail(path, 'cannot be null: metadata has no nulls (use $exists: false)');
    return fail(path, 'must be a string, a number or a boolean');
  }

  private bound(field: Field, value: unknown, path: string): Bound {
    const ms = typeof value === 'string' ? isoMillis(value) : null;
    if (field.kind === 'document') {
      if (field.name !== 'createdAt') fail(path, 'compares createdAt and metadata values only');
      if (ms === null) fail(path, 'must be an ISO date (e.g. 2024-05-01 or 2024-05-01T12:00:00Z)');
      return { type: 'date', ms };
    }
    if (typeof value === 'number' && Number.isFinite(value)) return { type: 'number', value };
    if (ms !== null) return { type: 'date', ms };
    return fail(path, 'must be a number or an ISO date (e.g. 2024-05-01 or 2024-05-01T12:00:00Z)');
  }
}

/**
 * Parses and validates a filter; a 400 `VALIDATION_ERROR` names the bad part (`filter.year.$gt
 * must be a number or an ISO date …`). `path` is the name of the filter in the request.
 */
export function parseFilter(value: unknown, path = 'filter'): FilterNode {
  if (JSON.stringify(value).length > FILTER_LIMITS.jsonBytes) {
    fail(path, `is longer than ${FILTER_LIMITS.jsonBytes} characters as JSON`);
  }
  return new Parser().object(value, path, 1);
}

/** A filter sent as a JSON text (a query parameter). */
export function parseFilterJson(text: string, path = 'filter'): FilterNode {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    fail(path, 'must be a JSON object');
  }
  return parseFilter(value, path);
}
