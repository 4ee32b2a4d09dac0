/**
 * Spawn → listening of real server processes, alternating builds on one data directory:
 *
 *   npm run bench:startup -- [--rounds 5] [--cli dist/cli.js] [--before-cli PATH] [--dir DIR]
 *
 * Each start is timed from spawn to the first answered GET /health. At that moment the process's
 * CPU time is read from /proc: all threads (user + system), and the main thread alone. The embedder
 * worker loads its model in parallel, so the main thread's CPU is what delays `listen`. On a
 * loaded machine, CPU time is steadier than wall time. `--dir` defaults to a fresh directory,
 * migrated by one unmeasured start. The medians go to stdout.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { benchEnv } from './scale/fill.js';
import { freePort, mainThreadCpuMs, processCpu } from './server-process.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    cli: { type: 'string', default: resolve(import.meta.dirname, '../dist/cli.js') },
    'before-cli': { type: 'string' },
    dir: { type: 'string' },
  },
});

const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'aps-bench-startup-'));
const env = benchEnv(dir, 'aps_bench_startup_0123456789abcdefghijklmn');

interface Start {
  wallMs: number;
  cpuMs: number;
  mainMs: number;
}

async function start(cli: string): Promise<Start> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [cli, 'serve'], {
    env: { PATH: process.env.PATH, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.once('exit', r));
  try {
    while (performance.now() - t0 < 120_000) {
      if (child.exitCode !== null) throw new Error(`${cli} exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) {
        const wallMs = performance.now() - t0;
        const pid = child.pid ?? 0;
        return { wallMs, cpuMs: processCpu(pid).selfMs, mainMs: mainThreadCpuMs(pid) };
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${cli} did not listen within 120 s`);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const builds = [values['before-cli'], values.cli].filter((c): c is string => c !== undefined);
const runs = new Map<string, Start[]>(builds.map((b) => [b, []]));
try {
  await start(builds[0] as string); // migrates a fresh directory; not measured
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const build of builds) {
      const run = await start(build);
      runs.get(build)?.push(run);
      process.stderr.write(
        `round ${round} ${build}: wall ${run.wallMs.toFixed(0)} ms, CPU ${run.cpuMs} ms (main thread ${run.mainMs} ms)\n`,
      );
    }
  }
} finally {
  if (values.dir === undefined) rmSync(dir, { recursive: true, force: true });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};
console.log('| build | spawn → listening (median) | CPU, all threads | CPU, main thread |');
console.log('| --- | --- | --- | --- |');
for (const [build, list] of runs) {
  const m = (pick: (s: Start) => number) => `${median(list.map(pick)).toFixed(0)} ms`;
  console.log(
    `| ${build} | ${m((s) => s.wallMs)} | ${m((s) => s.cpuMs)} | ${m((s) => s.mainMs)} |`,
  );
}
