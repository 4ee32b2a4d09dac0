/** The runner's process handling with real processes: hangs, grandchildren, aborts, crashes, floods. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runConverter } from '../../src/knowledge/indexing/converting/runner.js';
import {
  allGone,
  fakeConverter,
  rejection,
  runnerSetup as setup,
  SPAWN_GRANDCHILD,
  waitForFile,
  WRITE_MD,
} from './helpers.js';

const opts = { timeoutMs: 10_000, maxOutputBytes: 64 * 1024 * 1024 };
const failure = rejection;

describe('runConverter process handling', () => {
  it('kills the whole process tree on timeout', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'hang.mjs',
      `${SPAWN_GRANDCHILD}\nsetInterval(() => {}, 1000);`,
    );
    const error = await failure(runConverter(command, input, out, { ...opts, timeoutMs: 1500 }));
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_TIMEOUT');
    expect(error.message).toBe('The converter did not finish within 1.5 s and was stopped.');
    const pids = JSON.parse(readFileSync(join(out, 'pids.json'), 'utf8')) as number[];
    expect(pids).toHaveLength(2);
    expect(await allGone(pids)).toBe(true);
  });

  it('kills helpers left behind by a converter that exits normally', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'leaky.mjs',
      `${SPAWN_GRANDCHILD}\nwriteFileSync(out + '/document.md', 'done');\nprocess.exit(0);`,
    );
    expect((await runConverter(command, input, out, opts)).markdown).toBe('done');
    const pids = JSON.parse(readFileSync(join(out, 'pids.json'), 'utf8')) as number[];
    expect(await allGone(pids)).toBe(true);
  });

  it('kills the tree when aborted and rejects with the abort reason', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'slow.mjs',
      `${SPAWN_GRANDCHILD}\nsetInterval(() => {}, 1000);`,
    );
    const controller = new AbortController();
    const running = runConverter(command, input, out, { ...opts, signal: controller.signal });
    const pids = JSON.parse(await waitForFile(join(out, 'pids.json'))) as number[];
    const reason = new Error('document deleted');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(await allGone(pids)).toBe(true);
    await expect(
      runConverter(command, input, out, { ...opts, signal: controller.signal }),
    ).rejects.toBe(reason);
  });

  it('reports a crash (signal or exit code 139) as a converter failure', async () => {
    const { dir, input, out } = setup();
    const segv = fakeConverter(
      dir,
      'segv.mjs',
      `console.error('about to crash');\nprocess.kill(process.pid, 'SIGSEGV');`,
      { builtin: true },
    );
    const error = await failure(runConverter(segv, input, out, opts));
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_FAILED');
    expect(error.message).toBe('The converter crashed (killed by SIGSEGV): about to crash.');
    const exit139 = fakeConverter(dir, '139.mjs', 'process.exit(139);', { builtin: true });
    expect((await failure(runConverter(exit139, input, out, opts))).message).toBe(
      'The converter crashed (exit code 139).',
    );
  });

  it('keeps only the tail of a flood of output', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'flood.mjs',
      `${WRITE_MD}
      const block = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 10; i++) process.stdout.write(block);
      process.stderr.write('e'.repeat(512 * 1024) + '\\nlast line\\n');
      writeFileSync(out + '/document.md', 'ok');`,
    );
    const result = await runConverter(command, input, out, opts);
    expect(result.markdown).toBe('ok');
    expect(result.stderr.length).toBeLessThanOrEqual(64 * 1024);
    expect(result.stderr.endsWith('last line\n')).toBe(true);
  });

  it('stops a converter whose output passes the limit', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'endless.mjs',
      `const block = 'x'.repeat(64 * 1024);
      const pump = () => { while (process.stdout.write(block)); };
      process.stdout.on('drain', pump); pump();`,
    );
    const error = await failure(
      runConverter(command, input, out, { ...opts, maxOutputBytes: 1024 * 1024 }),
    );
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_FAILED');
    expect(error.message).toBe(
      'The converter printed more than 1.0 MiB of output and was stopped.',
    );
  });
});
