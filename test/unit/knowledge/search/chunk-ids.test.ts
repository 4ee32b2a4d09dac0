/**
 * Chunk ids by row (src/knowledge/search/sqlite/common/chunk-ids.ts), packed UUIDs or strings, against a
 * plain list: any mix of canonical UUIDs and other ids, deletions, copies, truncation, growth,
 * and their snapshot form.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChunkIds, idHash } from '../../../../src/knowledge/search/sqlite/common/chunk-ids.js';

const uuids = Array.from({ length: 40 }, () => randomUUID());
const anyId = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...uuids) },
  // Not canonical: upper case, a dash moved, a non-hex digit, another length, any text.
  fc.constantFrom(...uuids).map((u) => u.toUpperCase()),
  fc.constantFrom(...uuids).map((u) => `${u.slice(0, 7)}-${u.slice(7, 8)}${u.slice(9)}`),
  fc.constantFrom(...uuids).map((u) => `g${u.slice(1)}`),
  fc.constantFrom(...uuids).map((u) => `${u}0`),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

type Op =
  | { kind: 'set'; r: number; id: string }
  | { kind: 'clear'; r: number }
  | { kind: 'copy'; from: number; to: number }
  | { kind: 'truncate'; count: number };

describe('ChunkIds', () => {
  it('holds, compares, hashes and moves ids as a list of strings does', () => {
    const row = fc.nat(2999);
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), r: row, id: anyId }) },
      fc.record({ kind: fc.constant('clear' as const), r: row }),
      fc.record({ kind: fc.constant('copy' as const), from: row, to: row }),
      fc.record({ kind: fc.constant('truncate' as const), count: row }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), anyId, (ops, probe) => {
        const ids = new ChunkIds();
        ids.reserve(3000);
        const model: string[] = Array.from({ length: 3000 }, () => '');
        for (const o of ops) {
          if (o.kind === 'set') {
            ids.set(o.r, o.id);
            model[o.r] = o.id;
          } else if (o.kind === 'clear') {
            ids.clear(o.r);
            model[o.r] = '';
          } else if (o.kind === 'copy') {
            ids.copy(o.from, o.to);
            model[o.to] = model[o.from] ?? '';
          } else {
            ids.truncate(o.count);
            model.fill('', o.count);
          }
        }
        model.forEach((id, r) => {
          expect(ids.get(r)).toBe(id);
          expect(ids.has(r)).toBe(id !== '');
          if (id !== '') {
            expect(ids.equals(r, id)).toBe(true);
            expect(ids.hashAt(r)).toBe(idHash(id));
          }
          expect(ids.equals(r, probe)).toBe(id !== '' && id === probe);
        });
        expect(ids.list(3000)).toEqual(model);
        const { bytes, kinds, others } = ids.packed(3000);
        const restored = ChunkIds.fromPacked(bytes.slice(), kinds.slice(), others);
        expect(restored.list(3000)).toEqual(model);
        expect(ids.clone(1500).list(1500)).toEqual(model.slice(0, 1500));
        expect(ChunkIds.from(model).list(3000)).toEqual(model);
      }),
      { numRuns: 60 },
    );
  });

  it('grows past its room, and keeps a UUID in 16 bytes', () => {
    const ids = new ChunkIds();
    const list = Array.from({ length: 5000 }, () => randomUUID());
    list.forEach((id, r) => {
      ids.reserve(r + 1);
      ids.set(r, id);
    });
    expect(ids.list(5000)).toEqual(list);
    expect(ids.byteLength).toBeLessThan(5000 * 17 * 1.6);
    expect(() => ChunkIds.fromPacked(new Uint8Array(10), new Uint8Array(1), [])).toThrow(
      RangeError,
    );
  });
});
