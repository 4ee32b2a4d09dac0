/**
 * The upload sink (storage/spill-file.ts): whatever the size and however the bytes arrive, the
 * file holds exactly them once the pipeline resolves; a failed upload leaves the file closed so
 * that removing it cannot race its open.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SpillFile } from '../../../src/knowledge/storage/spill-file.js';
import { tempDir } from '../../helpers.js';

const MEMORY = 1024;

describe('SpillFile', () => {
  it('writes exactly the bytes received, below and above the memory limit', async () => {
    const dir = tempDir();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 0, maxLength: 700 }), { maxLength: 8 }),
        async (chunks) => {
          const path = join(dir, `f${String(n++)}`);
          await pipeline(
            Readable.from(chunks.map((c) => Buffer.from(c))),
            new SpillFile(path, MEMORY),
          );
          expect(readFileSync(path)).toEqual(Buffer.concat(chunks));
          rmSync(path);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a failed upload: the pipeline rejects, the file is closed, and removing it leaves nothing', async () => {
    for (const before of [100, 5000]) {
      const path = join(tempDir(), 'failed');
      const input = new Readable({ read() {} });
      const sink = new SpillFile(path, MEMORY);
      const done = pipeline(input, sink);
      input.push(Buffer.alloc(before, 1)); // in memory, or already streaming to the file
      await new Promise((resolve) => setImmediate(resolve));
      input.destroy(new Error('the client went away'));
      await expect(done).rejects.toThrow(/went away/);
      if (!sink.closed) await new Promise((resolve) => sink.once('close', resolve));
      rmSync(path, { force: true });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(existsSync(path)).toBe(false);
    }
  });
});
