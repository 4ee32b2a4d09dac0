/**
 * The vector index's chunk id → row table (src/knowledge/search/sqlite/vector/id-table.ts) against a
 * Map, over random adds, deletes, look-ups and rebuilds (growth past its slots, tombstones).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idHash } from '../../../../src/knowledge/search/sqlite/common/chunk-ids.js';
import { IdTable } from '../../../../src/knowledge/search/sqlite/vector/id-table.js';

type Op = { kind: 'add' | 'delete' | 'get'; key: number } | { kind: 'clear' };

describe('IdTable', () => {
  it('finds, adds and forgets ids as a Map does', () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.nat(3000) }) },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.nat(3000) }),
      },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('get' as const), key: fc.nat(3000) }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 4000 }), (ops) => {
        // Rows hold ids as an index's rows do: a row's id is fixed once it is added.
        const ids: string[] = [];
        const table = new IdTable({
          equals: (row, id) => ids[row] === id,
          hashAt: (row) => idHash(ids[row] ?? ''),
        });
        const map = new Map<string, number>();
        for (const o of ops) {
          if (o.kind === 'clear') {
            table.clear(map.size);
            map.clear();
            continue;
          }
          const id = `chunk-${o.key}`;
          if (o.kind === 'add' && !map.has(id)) {
            ids.push(id);
            table.add(id, ids.length - 1);
            map.set(id, ids.length - 1);
          } else if (o.kind === 'delete') {
            table.delete(id);
            map.delete(id);
          }
          expect(table.get(id)).toBe(map.get(id));
          expect(table.size).toBe(map.size);
        }
        for (const [id, row] of map) expect(table.get(id)).toBe(row);
      }),
      { numRuns: 60 },
    );
  });
});
