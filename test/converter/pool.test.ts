/**
 * The converter worker pool, with real processes: the bundled `aps-convert --worker`, and
 * fake workers speaking the same protocol that crash, hang, grow or go quiet on demand.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import type { ConverterCommand } from '../../src/knowledge/indexing/converting/commands.js';
import {
  ConverterPool,
  type PoolOptions,
} from '../../src/knowledge/indexing/converting/worker-pool.js';
import { createPooledConverter } from '../../src/knowledge/indexing/converting/pooled-converter.js';
import { buildPdf } from './fixtures/pdf-writer.js';
import {
  allGone,
  CLI,
  ensureConverterBuilt,
  fakeConverter,
  isAlive,
  knowledgeConfig,
  tempDir,
  waitForFile,
} from './helpers.js';

beforeAll(() => {
  ensureConverterBuilt();
});

const pools: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

const RUN = { timeoutMs: 20_000, maxOutputBytes: 1024 * 1024 };

function pool(options: Partial<PoolOptions> = {}): ConverterPool {
  const p = new ConverterPool({
    argv: [process.execPath, CLI],
    size: 1,
    maxJobs: 100,
    maxRssBytes: 1024 * 1024 * 1024,
    env: process.env,
    ...options,
  });
  pools.push(p);
  return p;
}

function markdownFile(dir: string, name = 'a.md'): string {
  const path = join(dir, name);
  writeFileSync(path, '# Title\n\nSome words about owls.\n');
  return path;
}

/**
 * A worker speaking the pool's protocol. The input file's content says what to do: `ok`,
 * `crash`, `hang` (after starting a grandchild that writes its pid to `<input>.child`), `grow`
 * (allocates and holds 300 MB), `noisy` (prints 2 MB to stderr).
 */
function fakeWorker(dir: string): string[] {
  const path = join(dir, 'worker.mjs');
  writeFileSync(
    path,
    `import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
const held = [];
process.on('message', (job) => {
  const what = readFileSync(job.file, 'utf8').trim();
  const done = () => process.send({ type: 'done', id: job.id, code: 0, stderr: '', rss: process.memoryUsage.rss(), loaded: [] });
  if (what === 'crash') process.kill(process.pid, 'SIGSEGV');
  if (what === 'hang') {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    writeFileSync(job.file + '.child', String(child.pid));
    return;
  }
  if (what === 'grow') {
    for (let i = 0; i < 30; i++) held.push(Buffer.alloc(10 * 1024 * 1024, 1));
    return;
  }
  if (what === 'noisy') {
    process.stderr.write('x'.repeat(2 * 1024 * 1024));
    return;
  }
  mkdirSync(job.outputDir, { recursive: true });
  writeFileSync(job.outputDir + '/document.md', '# Done\\n');
  done();
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready' });
`,
  );
  return [process.execPath, path];
}

/** A job whose output is written to files (`inlineMaxBytes` 0), as the CLI writes it. */
function job(dir: string, file: string, name = 'out') {
  return { file, outputDir: join(dir, name), command: 'auto', lang: 'eng', inlineMaxBytes: 0 };
}

function input(dir: string, name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('converter pool (bundled aps-convert --worker)', () => {
  it('reuses one worker across jobs, loading heavy converters only when a file needs them', async () => {
    const dir = tempDir();
    const p = pool();
    const first = await p.run(job(dir, markdownFile(dir), 'o1'), RUN);
    expect(first.code).toBe(0);
    expect(first.loaded).toEqual([]);
    expect(readFileSync(join(dir, 'o1', 'document.md'), 'utf8')).toContain('owls');
    const second = await p.run(job(dir, markdownFile(dir, 'b.md'), 'o2'), RUN);
    expect(second.pid).toBe(first.pid);
    expect(second.loaded).toEqual([]);

    const pdf = join(dir, 'three.pdf');
    writeFileSync(
      pdf,
      buildPdf(
        [1, 2, 3].map((n) => ({
          text: [0, 1, 2, 3, 4, 5].map((i) => ({
            x: 72,
            y: 700 - i * 14,
            size: 11,
            text: `Page ${n}, line ${i}: owls hunt at night and sleep through the day.`,
          })),
        })),
      ),
    );
    const progress: { done: number; total: number | null }[] = [];
    const third = await p.run(
      { ...job(dir, pdf, 'o3'), command: 'text' },
      { ...RUN, onProgress: (x) => progress.push(x) },
    );
    expect(third.stderr).toBe('');
    expect(third.code).toBe(0);
    expect(third.pid).toBe(first.pid);
    expect(third.loaded).toEqual(['pdf']);
    expect(progress).toEqual([
      { done: 1, total: 3 },
      { done: 2, total: 3 },
      { done: 3, total: 3 },
    ]);
    expect(p.workers()).toEqual([{ pid: first.pid, jobs: 3 }]);
  });

  it('sends small output back in its message and writes nothing; larger output goes to files', async () => {
    const dir = tempDir();
    const p = pool();
    const small = await p.run(
      { ...job(dir, markdownFile(dir), 'small'), inlineMaxBytes: 100 },
      RUN,
    );
    expect(small.code).toBe(0);
    expect(small.output?.markdown).toBe('# Title\n\nSome words about owls.\n');
    expect(small.output?.meta).toMatchObject({ converter: 'aps-convert', format: 'markdown' });
    expect(small.output?.meta.timings.total).toBeGreaterThan(0);
    expect(existsSync(join(dir, 'small'))).toBe(false);
    // 31 bytes of markdown over a limit of 30: files, as the CLI writes them.
    const large = await p.run({ ...job(dir, markdownFile(dir), 'large'), inlineMaxBytes: 30 }, RUN);
    expect(large.code).toBe(0);
    expect(large.output).toBeUndefined();
    expect(readFileSync(join(dir, 'large', 'document.md'), 'utf8')).toContain('owls');
    expect(existsSync(join(dir, 'large', 'meta.json'))).toBe(true);
  });

  it('reports the CLI exit code and stderr of a failed conversion, and keeps the worker', async () => {
    const dir = tempDir();
    const p = pool();
    const bad = await p.run(job(dir, input(dir, 'empty.txt', '')), RUN);
    expect(bad.code).toBe(6);
    expect(bad.stderr).toMatch(/aps-convert: nothing to extract: the file is empty/);
    const good = await p.run(job(dir, markdownFile(dir)), RUN);
    expect(good).toMatchObject({ code: 0, pid: bad.pid });
  });

  it('recycles a worker after maxJobs jobs', async () => {
    const dir = tempDir();
    const p = pool({ maxJobs: 2 });
    const file = markdownFile(dir);
    const a = await p.run(job(dir, file, 'a'), RUN);
    const b = await p.run(job(dir, file, 'b'), RUN);
    expect(b.pid).toBe(a.pid);
    expect(await allGone([a.pid])).toBe(true);
    const c = await p.run(job(dir, file, 'c'), RUN);
    expect(c.pid).not.toBe(a.pid);
  });

  it('runs jobs in parallel up to its size, then queues them', async () => {
    const dir = tempDir();
    const p = pool({ size: 2 });
    const file = markdownFile(dir);
    const runs = [1, 2, 3, 4].map((n) => p.run(job(dir, file, `o${n}`), RUN));
    expect(p.stats()).toMatchObject({ size: 2, busy: 2, queued: 2 });
    const outcomes = await Promise.all(runs);
    expect(p.stats()).toMatchObject({ busy: 0, queued: 0, started: 2 });
    expect(outcomes.every((o) => o.code === 0)).toBe(true);
    expect(new Set(outcomes.map((o) => o.pid)).size).toBe(2);
  });

  it('closes: every worker gone, later runs refused', async () => {
    const dir = tempDir();
    const p = pool({ size: 2 });
    const file = markdownFile(dir);
    const outcomes = await Promise.all([1, 2].map((n) => p.run(job(dir, file, `o${n}`), RUN)));
    const pids = outcomes.map((o) => o.pid);
    expect(pids.every(isAlive)).toBe(true);
    await p.close();
    expect(await allGone(pids)).toBe(true);
    await expect(p.run(job(dir, file), RUN)).rejects.toThrow(/closed/);
  });
});

describe('converter pool isolation (fake workers)', () => {
  it('a crash fails the run as a crash and the next run gets a fresh worker', async () => {
    const dir = tempDir();
    const p = pool({ argv: fakeWorker(dir) });
    const crashed = await p.run(job(dir, input(dir, 'c', 'crash')), RUN);
    expect(crashed).toMatchObject({ code: null, signal: 'SIGSEGV', stopped: null });
    const next = await p.run(job(dir, input(dir, 'o', 'ok')), RUN);
    expect(next.code).toBe(0);
    expect(next.pid).not.toBe(crashed.pid);
  });

  it('a hang past the timeout kills the worker and its process tree', async () => {
    const dir = tempDir();
    const p = pool({ argv: fakeWorker(dir) });
    const file = input(dir, 'h', 'hang');
    const outcome = await p.run(job(dir, file), { ...RUN, timeoutMs: 1000 });
    expect(outcome.stopped).toBe('timeout');
    const child = Number(await waitForFile(`${file}.child`));
    expect(await allGone([outcome.pid, child])).toBe(true);
    expect((await p.run(job(dir, input(dir, 'o', 'ok')), RUN)).code).toBe(0);
    // The metrics' counts: a kill for the timeout, and the worker that replaced it.
    expect(p.stats()).toMatchObject({
      busy: 0,
      queued: 0,
      started: 2,
      killed: { timeout: 1, memory: 0, overflow: 0, aborted: 0 },
    });
  });

  it('a worker over the memory limit is killed', async () => {
    const dir = tempDir();
    const p = pool({ argv: fakeWorker(dir), maxRssBytes: 200 * 1024 * 1024, rssCheckMs: 50 });
    const outcome = await p.run(job(dir, input(dir, 'g', 'grow')), RUN);
    expect(outcome.stopped).toBe('memory');
    expect(await allGone([outcome.pid])).toBe(true);
    expect(p.stats().killed.memory).toBe(1);
  });

  it('too much output stops the worker', async () => {
    const dir = tempDir();
    const p = pool({ argv: fakeWorker(dir) });
    const outcome = await p.run(job(dir, input(dir, 'n', 'noisy')), RUN);
    expect(outcome.stopped).toBe('overflow');
  });

  it('an abort kills the worker; the next run gets a fresh one', async () => {
    const dir = tempDir();
    const p = pool({ argv: fakeWorker(dir) });
    const controller = new AbortController();
    const file = input(dir, 'h', 'hang');
    const running = p.run(job(dir, file), { ...RUN, signal: controller.signal });
    await waitForFile(`${file}.child`);
    controller.abort(new Error('stop'));
    const outcome = await running;
    expect(outcome.stopped).toBe('aborted');
    expect(await allGone([outcome.pid])).toBe(true);
    const next = await p.run(job(dir, input(dir, 'o', 'ok')), RUN);
    expect(next.pid).not.toBe(outcome.pid);
  });
});

describe('pooled convert function', () => {
  const builtin = (config = knowledgeConfig()) => {
    const converter = createPooledConverter(config);
    pools.push(converter);
    return converter;
  };
  const command = (name: string): ConverterCommand => ({
    id: name,
    description: name,
    argv: [process.execPath, CLI, '{input}', '--output-dir', '{outputDir}', '--command', name],
    builtin: true,
  });

  it('runs the bundled commands on the pool and maps failures to the usual errors', async () => {
    const dir = tempDir();
    const { convert, pool: p } = builtin(knowledgeConfig({ indexConcurrency: 2 }));
    const html = input(dir, 'a.html', '<h1>Owls</h1><p>Some words about owls.</p>');
    const result = await convert(command('auto'), html, join(dir, 'o1'), RUN);
    expect(result.markdown).toContain('# Owls');
    expect(result.meta).toMatchObject({ converter: 'aps-convert', format: 'html' });
    expect(p?.workers()).toHaveLength(1);
    const error = await convert(
      command('auto'),
      input(dir, 'e.txt', ''),
      join(dir, 'o2'),
      RUN,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      code: 'KNOWLEDGE_CONVERTER_NO_MARKDOWN',
      message: 'The converter found no text to extract from this file: the file is empty.',
    });
  });

  it('still runs a commands-file converter as one process per run', async () => {
    const dir = tempDir();
    const { convert, pool: p } = builtin();
    const external = fakeConverter(
      dir,
      'pid.mjs',
      `import { mkdirSync, writeFileSync } from 'node:fs';
const out = process.argv[3];
mkdirSync(out, { recursive: true });
writeFileSync(out + '/document.md', 'pid ' + process.pid);`,
    );
    const file = markdownFile(dir);
    const a = await convert(external, file, join(dir, 'a'), RUN);
    const b = await convert(external, file, join(dir, 'b'), RUN);
    expect(a.markdown).not.toBe(b.markdown);
    expect(p?.workers()).toEqual([]);
    expect(existsSync(join(dir, 'b', 'document.md'))).toBe(true);
  });

  it('converts small plain text and markdown in this process, as a worker would', async () => {
    const dir = tempDir();
    const { convert, pool: p } = builtin();
    const jobs = () => (p?.workers() ?? []).reduce((n, w) => n + w.jobs, 0);
    const files = [
      input(dir, 'note.md', '\uFEFF# Owls\r\n\r\nOwls hunt at night.\r\n'),
      input(dir, 'plain.txt', 'Caf\u00e9 notes\n\n\n\nabout owls\n'),
      input(dir, 'latin1.txt', Buffer.from('Caf\xe9 au lait\n', 'latin1')),
    ];
    for (const file of files) {
      const here = await convert(command('auto'), file, join(dir, 'here'), RUN);
      expect(jobs()).toBe(0);
      // The same file through a worker (a pool the in-process path does not know).
      const worker = await pool().run({ ...job(dir, file, 'w'), inlineMaxBytes: 1024 * 1024 }, RUN);
      const output = worker.output;
      expect(output).toBeDefined();
      expect(here.markdown).toBe(output?.markdown.replace(/^\uFEFF/, ''));
      // Everything but the timings is the same.
      expect({ ...here.meta, timings: {} }).toEqual({ ...(output?.meta as object), timings: {} });
    }
    expect(existsSync(join(dir, 'here'))).toBe(false);
  });

  it('leaves larger text, other formats and unreadable files to the workers', async () => {
    const dir = tempDir();
    const { convert, pool: p } = builtin();
    const jobs = () => (p?.workers() ?? []).reduce((n, w) => n + w.jobs, 0);
    const large = input(dir, 'large.md', `# Big\n\n${'word '.repeat(13_200)}\n`);
    expect(readFileSync(large).length).toBeGreaterThan(64 * 1024);
    await convert(command('auto'), large, join(dir, 'o1'), RUN);
    expect(jobs()).toBe(1);
    await convert(command('auto'), input(dir, 'rows.csv', 'a,b\n1,2\n'), join(dir, 'o2'), RUN);
    expect(jobs()).toBe(2);
    // Text named .txt that is HTML is converted as HTML, by a worker.
    const page = input(dir, 'page.txt', '<!DOCTYPE html><html><body><p>Owls</p></body></html>');
    const converted = await convert(command('auto'), page, join(dir, 'o3'), RUN);
    expect(converted.meta).toMatchObject({ format: 'html' });
    expect(jobs()).toBe(3);
    const error = await convert(
      command('auto'),
      join(dir, 'missing.md'),
      join(dir, 'o4'),
      RUN,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(jobs()).toBe(4);
  });
});
