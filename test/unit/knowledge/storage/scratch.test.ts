import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchName, sweepScratch } from '../../../../src/knowledge/storage/scratch.js';
import { createTestApp, tempDir } from '../../../helpers.js';

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

function scratchWith(names: string[], ageHours = 0): string {
  const dir = join(tempDir(), 'tmp');
  mkdirSync(dir, { recursive: true });
  for (const name of names) {
    writeFileSync(join(dir, name), 'partial upload');
    if (ageHours > 0) {
      const then = new Date(Date.now() - ageHours * 3600_000);
      utimesSync(join(dir, name), then, then);
    }
  }
  return dir;
}

describe('scratch entries after a crash', () => {
  const mine = scratchName('upload');
  const dead = mine.replace(`-p${process.pid}-`, `-p${deadPid()}-`);
  const otherHost = mine.replace(/-h[0-9a-f]{8}-/, '-h00000000-');
  const unowned = 'upload-5f0c6a8e-1b7e-4a57-9d1e-0d6f1c1d2e3f';

  it('names entries after their owner', () => {
    expect(mine).toMatch(new RegExp(`^upload-p${process.pid}-h[0-9a-f]{8}-[0-9a-f-]{36}$`));
  });

  it('on one host: entries of stopped processes and unowned ones go at once, live ones stay', async () => {
    const dir = scratchWith([mine, dead, otherHost, unowned]);
    expect(await sweepScratch(dir, { singleHost: true })).toBe(2);
    expect(readdirSync(dir).sort()).toEqual([mine, otherHost].sort());
  });

  it('shared between hosts: only this host’s stopped processes go at once; the rest after a grace', async () => {
    const fresh = scratchWith([mine, dead, otherHost, unowned]);
    expect(await sweepScratch(fresh, { singleHost: false })).toBe(1);
    expect(readdirSync(fresh).sort()).toEqual([mine, otherHost, unowned].sort());
    const old = scratchWith([otherHost, unowned], 7);
    expect(await sweepScratch(old, { singleHost: false })).toBe(2);
  });

  it('a server starting on a SQLite data directory removes partial files at once', async () => {
    const t = await createTestApp();
    try {
      const dir = join(t.dir, 'tmp');
      mkdirSync(dir, { recursive: true });
      for (const name of [dead, unowned, dead.replace('upload-', 'convert-')])
        mkdirSync(join(dir, name));
      await t.ctx.knowledge.start({ recover: true });
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
