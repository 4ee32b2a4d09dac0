/**
 * The server's JSON logs go to stdout through a buffered asynchronous destination (logger.ts):
 * lines still in the buffer are written when the process exits, whether it exits on purpose
 * (graceful shutdown ends with `process.exit`) or on an uncaught error.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'aps-logger-flush-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a script that logs `lines` short lines through createLogger, then `ending`. */
function run(
  ending: string,
  lines = 3,
): Promise<{ code: number | null; stdout: string; msBeforeExit: number }> {
  const script = join(dir, `log-${Math.random().toString(36).slice(2)}.mts`);
  writeFileSync(
    script,
    `import { createLogger } from ${JSON.stringify(join(ROOT, 'src/logger.ts'))};
     const log = createLogger({ logLevel: 'info', logFormat: 'json' }, undefined, false);
     for (let i = 0; i < ${lines}; i++) log.info({ i }, 'buffered line');
     ${ending}
    `,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  let firstAt = 0;
  child.stdout.on('data', (d: Buffer) => {
    firstAt ||= Date.now();
    stdout += d.toString();
  });
  return new Promise((ok) =>
    child.on('close', (code) => {
      ok({ code, stdout, msBeforeExit: Date.now() - firstAt });
    }),
  );
}

const logged = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { i: number }).i);

describe('buffered JSON logs on stdout', () => {
  it('are written when the process exits at once (process.exit, as after a graceful shutdown)', async () => {
    const { code, stdout } = await run('process.exit(0);');
    expect(code).toBe(0);
    expect(logged(stdout)).toEqual([0, 1, 2]);
  });

  it('are written when an uncaught error ends the process', async () => {
    const { code, stdout } = await run(`setImmediate(() => { throw new Error('fatal'); });`);
    expect(code).toBe(1);
    expect(logged(stdout)).toEqual([0, 1, 2]);
  });

  it('reach stdout on a quiet process within the flush interval, not only at exit', async () => {
    const { stdout, msBeforeExit } = await run('setTimeout(() => undefined, 1200);', 1);
    expect(logged(stdout)).toEqual([0]);
    expect(msBeforeExit).toBeGreaterThan(600);
  });
});
