/**
 * `npm run bench:convert -- --nesting [--baseline DIR] [--depths 1000,5000,20000,100000]
 * [--timeout S]`: conversion time of deeply nested documents, which must grow linearly with the
 * depth: the last column, time per level, should stay roughly constant.
 *
 * Each file goes through the built CLI (`dist/converter/cli.js`, so `npm run build` first) as the
 * server runs it, one process per file, killed after `--timeout` seconds. "convert ms" is the
 * converter's own figure from meta.json (no Node start-up); a run that fails shows why. With
 * `--baseline DIR` (another checkout, built, e.g. `git archive main | tar -x -C DIR`, a
 * node_modules symlink and `npm run build` there) the same files go through its CLI as well, so
 * before and after come from the same run on the same machine.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

interface Options {
  baseline: string | undefined;
  depths: number[];
  timeoutSeconds: number;
}

const nest = (open: string, inner: string, close: string) => (n: number) =>
  open.repeat(n) + inner + close.repeat(n);

const WORKLOADS: [string, string, (n: number) => string][] = [
  ['HTML <div>', 'html', nest('<div>', 'deepest', '</div>')],
  ['HTML <ul><li>', 'html', nest('<ul><li>', 'deepest', '</li></ul>')],
  ['HTML <table> in <td>', 'html', nest('<table><tr><td>', 'deepest', '</td></tr></table>')],
  ['JSON [[…]]', 'json', nest('[', '"deepest"', ']')],
  ['JSON {"a":{…}}', 'json', nest('{"a":', '"deepest"', '}')],
];

interface Outcome {
  /** What to print: the converter's own time, or why there is none. */
  text: string;
  ms: number | null;
}

function run(cli: string, input: string, out: string, timeoutMs: number): Promise<Outcome> {
  const start = performance.now();
  return new Promise((done) => {
    execFile(
      process.execPath,
      [cli, input, '--output-dir', out],
      { timeout: timeoutMs, killSignal: 'SIGKILL' },
      (error, _stdout, stderr) => {
        const wall = performance.now() - start;
        if (error?.killed === true) {
          done({ text: `killed after ${(wall / 1000).toFixed(0)} s`, ms: null });
        } else if (error !== null) {
          const line = stderr.trim().split('\n').at(-1) ?? '';
          done({ text: `exit ${String(error.code)}: ${line.slice(0, 60)}`, ms: null });
        } else {
          const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8')) as {
            timings: { total: number };
          };
          done({ text: meta.timings.total.toFixed(0), ms: meta.timings.total });
        }
      },
    );
  });
}

export async function benchNesting(options: Options): Promise<void> {
  const ours = resolve(import.meta.dirname, '..', 'dist', 'converter', 'cli.js');
  const theirs =
    options.baseline === undefined
      ? null
      : resolve(options.baseline, 'dist', 'converter', 'cli.js');
  for (const cli of [ours, theirs]) {
    if (cli !== null && !existsSync(cli)) throw new Error(`${cli} is missing: build it first`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'aps-bench-nesting-'));
  const rows: string[][] = [];
  try {
    for (const [name, ext, build] of WORKLOADS) {
      for (const depth of options.depths) {
        const input = join(dir, `deep-${depth}.${ext}`);
        const content = build(depth);
        writeFileSync(input, content);
        const timeout = options.timeoutSeconds * 1000;
        const before = theirs === null ? null : await run(theirs, input, join(dir, 'b'), timeout);
        const after = await run(ours, input, join(dir, 'a'), timeout);
        const perLevel = after.ms === null ? '–' : ((after.ms * 1000) / depth).toFixed(1);
        rows.push([
          name,
          String(depth),
          `${(content.length / 1e6).toFixed(2)} MB`,
          before?.text ?? '–',
          after.text,
          perLevel,
        ]);
        console.error(`${name} ${depth}: before ${before?.text ?? '–'}, after ${after.text}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const day = new Date().toISOString().slice(0, 10);
  console.log(`\nDeeply nested documents through aps-convert (${day}, node ${process.version})\n`);
  console.log('| Workload | Levels | Size | Before ms | After ms | After µs per level |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}
