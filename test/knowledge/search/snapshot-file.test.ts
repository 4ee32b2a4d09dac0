/**
 * The snapshot file (snapshot-file.ts): what is written reads back equal, each array section in
 * an array of its own (the indexes keep them without a copy), and a file with any byte changed
 * or cut short is refused with a SnapshotError, never returned.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  readSnapshot,
  SnapshotError,
  writeSnapshot,
  type Section,
} from '../../../src/knowledge/search/sqlite/copies/snapshot-file.js';
import { tempDir } from '../../helpers.js';

const sections = (): Map<string, Section> =>
  new Map<string, Section>([
    ['ids', { type: 'strings', list: ['a', 'b', '', 'ünïcödé'] }],
    ['rows', { type: 'f64', parts: [Float64Array.from([1.5, -2, 3e10])] }],
    ['counts', { type: 'i32', parts: [Int32Array.from([1, 2]), Int32Array.from([3])] }],
    ['bytes', { type: 'u8', parts: [Uint8Array.from([1, 2, 3, 4, 5])] }],
    ['empty', { type: 'f32', parts: [] }],
    ['signed', { type: 'i8', parts: [Int8Array.from([-128, 0, 127])] }],
  ]);

describe('snapshot files', () => {
  it('read back what was written, each array section an array of its own', async () => {
    const path = join(tempDir(), 'a.snapshot');
    expect(await writeSnapshot(path, { count: 3, note: 'x' }, sections(), () => true)).toBe(true);
    const snapshot = await readSnapshot(path);
    expect(snapshot.meta).toEqual({ count: 3, note: 'x' });
    expect(snapshot.strings.get('ids')).toEqual(['a', 'b', '', 'ünïcödé']);
    expect([...(snapshot.arrays.get('rows') ?? [])]).toEqual([1.5, -2, 3e10]);
    expect(snapshot.arrays.get('counts')).toEqual(Int32Array.from([1, 2, 3]));
    expect(snapshot.arrays.get('bytes')).toEqual(Uint8Array.from([1, 2, 3, 4, 5]));
    expect(snapshot.arrays.get('empty')).toEqual(new Float32Array(0));
    expect(snapshot.arrays.get('signed')).toEqual(Int8Array.from([-128, 0, 127]));
    // Kept by the indexes as they are: no array may share its memory with another.
    for (const array of snapshot.arrays.values()) {
      expect(array.byteOffset).toBe(0);
      expect(array.buffer.byteLength).toBe(array.byteLength);
    }
  });

  it('refuses a file with any byte changed, or cut short anywhere', async () => {
    const dir = tempDir();
    const path = join(dir, 'good.snapshot');
    await writeSnapshot(path, { count: 3 }, sections(), () => true);
    const good = readFileSync(path);
    const bad = join(dir, 'bad.snapshot');
    await fc.assert(
      fc.asyncProperty(
        fc.nat(good.length - 1),
        fc.integer({ min: 1, max: 255 }),
        fc.boolean(),
        async (at, flip, cut) => {
          const bytes = Buffer.from(good);
          bytes[at] = (bytes[at] ?? 0) ^ flip;
          writeFileSync(bad, cut ? good.subarray(0, at) : bytes);
          await expect(readSnapshot(bad)).rejects.toBeInstanceOf(SnapshotError);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('leaves out the sections asked to skip, still checking their bytes', async () => {
    const dir = tempDir();
    const path = join(dir, 'skip.snapshot');
    // Larger than one read batch (8 MiB), so that it is skipped in several reads.
    const big = new Float32Array(3 << 20).map((_, i) => i);
    const all = sections().set('big', { type: 'f32', parts: [big] });
    await writeSnapshot(path, { count: 3 }, all, () => true);
    const snapshot = await readSnapshot(path, { skip: ['big', 'rows'] });
    expect([...snapshot.arrays.keys()].sort()).toEqual(['bytes', 'counts', 'empty', 'signed']);
    expect(snapshot.arrays.get('counts')).toEqual(Int32Array.from([1, 2, 3]));
    expect(snapshot.strings.get('ids')).toEqual(['a', 'b', '', 'ünïcödé']);
    // A changed byte in a skipped section: refused all the same.
    const bytes = readFileSync(path);
    const at = bytes.length - 4 - 5 * 4096;
    bytes[at] = (bytes[at] ?? 0) ^ 1;
    writeFileSync(path, bytes);
    await expect(readSnapshot(path, { skip: ['big'] })).rejects.toBeInstanceOf(SnapshotError);
  });
});
