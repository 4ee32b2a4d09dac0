/**
 * The PDF comparison (`npm run bench:convert`): this checkout's converter, optionally a
 * baseline git ref's (`--before main`), `pdftotext`, `pdftotext -layout` and the `tesseract` CLI on
 * one set (corpus.ts), in one run. Every conversion is a process of its own, as the converter's
 * workers and the command-line tools run. Prints one markdown table with the ratios.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { buildConverter } from './build.js';
import { buildCorpus, onPath, type Corpus } from './corpus.js';
import {
  cellsInRow,
  cer,
  codeBlockCount,
  headingPrecision,
  headingRecall,
  proseTables,
  tableCount,
} from './metrics.js';
import {
  emptiedPages,
  glyphLeaks,
  markdownPages,
  pageAccuracy,
  rowHeadings,
} from './page-metrics.js';

export interface CompareOptions {
  cache: string;
  before?: string;
  /** A git ref for the after column (default: this checkout's working tree). */
  after?: string;
  manuals: string[];
  scans: boolean;
}

interface OursRun {
  markdown: string;
  ms: number;
  pages: number;
  maxRssKb: number;
}

/** A git ref's `src/` unpacked under the cache (node_modules resolve from this checkout). */
function checkoutRef(cache: string, ref: string): string {
  const sha = execFileSync('git', ['rev-parse', ref], { encoding: 'utf8' }).trim();
  const dir = resolve(cache, `ref-${sha.slice(0, 12)}`);
  if (!existsSync(join(dir, 'src'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${sha} src | tar -x -C ${dir}`]);
  }
  return dir;
}

function runOurs(
  root: string,
  file: string,
  command: string,
  cache: string,
  mode: '' | 'no-outline' = '',
): OursRun {
  const out = join(cache, 'out.md');
  const child = spawnSync(
    process.execPath,
    [join(root, 'bench/run-one.js'), root, file, command, out, mode],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  const last = child.stdout.trim().split('\n').at(-1) ?? '';
  if (child.status !== 0 || !last.startsWith('{')) {
    throw new Error(`converting ${file} failed: ${child.stderr.slice(-500)}`);
  }
  const result = JSON.parse(last) as Omit<OursRun, 'markdown'>;
  return { ...result, markdown: readFileSync(out, 'utf8') };
}

/** All `files` converted in one process, one after another (a pool worker's life). */
function runWorker(root: string, files: string[]): { ms: number; pages: number; cpuMs: number } {
  const child = spawnSync(
    process.execPath,
    [join(root, 'bench/run-many.js'), root, 'text', ...files],
    { encoding: 'utf8' },
  );
  const last = child.stdout.trim().split('\n').at(-1) ?? '';
  if (child.status !== 0 || !last.startsWith('{')) {
    throw new Error(`converting ${files.join(', ')} failed: ${child.stderr.slice(-500)}`);
  }
  return JSON.parse(last) as { ms: number; pages: number; cpuMs: number };
}

/** CPU milliseconds (user + system) of one `pdftotext` run, by /usr/bin/time; null without it. */
function pdftotextCpu(file: string, layout: boolean): number | null {
  if (!existsSync('/usr/bin/time')) return null;
  const args = ['-f', '%U %S', 'pdftotext', ...(layout ? ['-layout'] : []), file, '/dev/null'];
  const r = spawnSync('/usr/bin/time', args, { encoding: 'utf8' });
  const [user, system] = (r.stderr.trim().split('\n').at(-1) ?? '').split(' ').map(Number);
  return r.status === 0 && user !== undefined && system !== undefined
    ? (user + system) * 1000
    : null;
}

function pdftotext(file: string, layout: boolean): { text: string; ms: number } {
  const started = performance.now();
  const text = execFileSync('pdftotext', [...(layout ? ['-layout'] : []), file, '-'], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  return { text, ms: performance.now() - started };
}

/**
 * The prose pages of a PDF (1-based), by pdftotext's text: at least 10 lines, 60 % of them
 * sentences' lines (7 words or more). A table the converter makes there is most likely false.
 */
function prosePages(file: string): Set<number> {
  const pages = pdftotext(file, false).text.split('\f');
  const prose = new Set<number>();
  pages.forEach((text, i) => {
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    const long = lines.filter((l) => l.trim().split(/\s+/).length >= 7).length;
    if (lines.length >= 10 && long >= 0.6 * lines.length) prose.add(i + 1);
  });
  return prose;
}

/** The PDF's outline (bookmarks) titles, every level. */
async function outlineTitles(file: string): Promise<string[]> {
  const doc = await getDocument({ data: new Uint8Array(readFileSync(file)), verbosity: 0 }).promise;
  const titles: string[] = [];
  type Node = { title: string; items: Node[] };
  const walk = (nodes: Node[]) => {
    for (const n of nodes) {
      titles.push(n.title);
      walk(n.items);
    }
  };
  // pdf.js types say an array; a PDF without bookmarks gives null.
  const outline = (await doc.getOutline()) as Node[] | null;
  walk(outline ?? []);
  await doc.destroy();
  return titles;
}

type Cell = number | null;
interface Row {
  metric: string;
  better: 'low' | 'high';
  values: Record<string, Cell>;
  digits: number;
}

const TOOLS = ['before', 'after', 'pdftotext', 'pdftotext -layout', 'tesseract'] as const;
const PEERS = ['pdftotext', 'pdftotext -layout', 'tesseract'];

function mean(values: number[]): Cell {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

function print(rows: Row[], corpus: Corpus, before?: string, after?: string): void {
  const cols = TOOLS.filter((t) => t !== 'before' || before !== undefined);
  const fmt = (v: Cell, d: number) => (v === null ? '–' : v.toFixed(d));
  console.log(
    `\nPDF comparison (${new Date().toISOString().slice(0, 10)}, node ${process.version})`,
  );
  if (before !== undefined) console.log(`before = ${before}, after = ${after ?? 'this checkout'}`);
  console.log(`\n| metric | ${cols.join(' | ')} | after ÷ best peer |`);
  console.log(`| --- |${cols.map(() => ' ---: |').join('')} ---: |`);
  for (const r of rows) {
    const peers = PEERS.map((p) => r.values[p]).filter((v): v is number => v != null);
    const best =
      peers.length === 0 ? null : r.better === 'low' ? Math.min(...peers) : Math.max(...peers);
    const after = r.values.after ?? null;
    const ratio =
      best === null || after === null || best === 0 ? '–' : `${(after / best).toFixed(2)}×`;
    console.log(
      `| ${r.metric} | ${cols.map((c) => fmt(r.values[c] ?? null, r.digits)).join(' | ')} | ${ratio} |`,
    );
  }
  for (const s of corpus.skipped) console.log(`skipped: ${s}`);
}

/** Runs the comparison and prints its table. */
export async function comparePdf(options: CompareOptions): Promise<void> {
  const cache = resolve(options.cache);
  const corpus = buildCorpus(cache, { manuals: options.manuals, scans: options.scans ? 3 : 0 });
  // Each column's converter compiled, run by plain node as the pool's workers run it (build.ts).
  const roots: Record<string, string> = {
    after:
      options.after === undefined
        ? buildConverter(resolve('.'), join(cache, 'build-worktree'))
        : buildConverter(checkoutRef(cache, options.after), join(cache, 'build-after')),
  };
  if (options.before !== undefined)
    roots.before = buildConverter(checkoutRef(cache, options.before), join(cache, 'build-before'));
  const poppler = onPath('pdftotext');
  const rows: Row[] = [];
  const add = (
    metric: string,
    better: 'low' | 'high',
    digits: number,
    values: Record<string, Cell>,
  ) => rows.push({ metric, better, digits, values });

  // LibreOffice PDFs: truth known.
  for (const doc of corpus.lo) {
    const text = doc.truth.text.join('\n');
    const outputs: Record<string, string> = {};
    for (const [tool, root] of Object.entries(roots))
      outputs[tool] = runOurs(root, doc.file, 'text', cache).markdown;
    if (poppler) {
      outputs.pdftotext = pdftotext(doc.file, false).text;
      outputs['pdftotext -layout'] = pdftotext(doc.file, true).text;
    }
    const each = (f: (out: string) => number) =>
      Object.fromEntries(Object.entries(outputs).map(([t, o]) => [t, f(o)]));
    if (!doc.name.includes('nooutline'))
      add(
        `${doc.name}: CER`,
        'low',
        4,
        each((o) => cer(text, o)),
      );
    const titles = doc.truth.headings.map((h) => h.text);
    const ours = Object.fromEntries(
      Object.keys(roots).map((t) => [t, headingRecall(outputs[t] ?? '', titles)]),
    );
    add(`${doc.name}: heading recall`, 'high', 2, ours);
    if (doc.name.includes('nooutline'))
      add(
        `${doc.name}: heading precision`,
        'high',
        2,
        Object.fromEntries(
          Object.keys(roots).map((t) => [t, headingPrecision(outputs[t] ?? '', titles)]),
        ),
      );
    if (doc.truth.tables.length > 0 && !doc.name.includes('nooutline')) {
      add(
        `${doc.name}: table cells in the right row`,
        'high',
        2,
        each((o) => cellsInRow(o, doc.truth.tables)),
      );
    }
    if (doc.truth.tables.length > 0)
      add(`${doc.name}: table rows made headings`, 'low', 0, {
        ...Object.fromEntries(
          Object.keys(roots).map((t) => [
            t,
            rowHeadings(outputs[t] ?? '', doc.truth.tables).length,
          ]),
        ),
      });
  }

  // Real manuals: heading recall against the outline, tables found, pages per second.
  const time: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  let pages = 0;
  const recalls: Record<string, number[]> = {};
  const blind: Record<string, { recall: number[]; precision: number[] }> = {};
  const tables: Record<string, number> = {};
  const onProse: Record<string, number> = {};
  const code: Record<string, number> = {};
  const leaks: Record<string, number> = {};
  const accuracies: Record<string, number[]> = {};
  const precisions: Record<string, number[]> = {};
  let proseCount = 0;
  for (const manual of corpus.manuals) {
    const titles = await outlineTitles(manual.file);
    const values: Record<string, Cell> = {};
    const noOutline: Record<string, Cell> = {};
    const precision: Record<string, Cell> = {};
    const prose = poppler ? prosePages(manual.file) : new Set<number>();
    proseCount += prose.size;
    // pdftotext's pages are the truth of which page a text is printed on.
    const truthPages = poppler ? pdftotext(manual.file, false).text.split('\f') : [];
    const accuracy: Record<string, Cell> = {};
    const emptied: Record<string, Cell> = {};
    const used: Record<string, Cell> = {};
    const rate: Record<string, Cell> = {};
    for (const [tool, root] of Object.entries(roots)) {
      const run = runOurs(root, manual.file, 'text', cache);
      time[tool] = (time[tool] ?? 0) + run.ms;
      rate[tool] = (run.pages * 1000) / run.ms;
      leaks[tool] = (leaks[tool] ?? 0) + glyphLeaks(run.markdown);
      if (poppler) {
        const ours = markdownPages(run.markdown);
        accuracy[tool] = pageAccuracy(ours, truthPages);
        (accuracies[tool] ??= []).push(accuracy[tool] ?? 0);
        const empty = emptiedPages(ours, truthPages);
        emptied[tool] = empty.length;
        writeFileSync(join(cache, `emptied-${manual.name}-${tool}.txt`), `${empty.join(', ')}\n`);
      }
      if (titles.length > 0) {
        used[tool] = headingPrecision(run.markdown, titles);
        (precisions[tool] ??= []).push(used[tool] ?? 0);
      }
      if (tool === 'after') pages += run.pages;
      values[tool] = titles.length > 0 ? headingRecall(run.markdown, titles) : null;
      if (titles.length > 0) (recalls[tool] ??= []).push(values[tool] ?? 0);
      tables[tool] = (tables[tool] ?? 0) + tableCount(run.markdown);
      code[tool] = (code[tool] ?? 0) + codeBlockCount(run.markdown);
      const falseTables = proseTables(run.markdown, prose);
      onProse[tool] = (onProse[tool] ?? 0) + falseTables.length;
      writeFileSync(
        join(cache, `prose-tables-${manual.name}-${tool}.md`),
        falseTables.join('\n\n'),
      );
      if (titles.length > 0) {
        // The same manual with its outline hidden: headings from the text alone.
        const bare = runOurs(root, manual.file, 'text', cache, 'no-outline').markdown;
        noOutline[tool] = headingRecall(bare, titles);
        precision[tool] = headingPrecision(bare, titles);
        (blind[tool] ??= { recall: [], precision: [] }).recall.push(noOutline[tool] ?? 0);
        blind[tool].precision.push(precision[tool] ?? 0);
      }
    }
    if (titles.length > 0) {
      add(`${manual.name} (${titles.length} outline titles): heading recall`, 'high', 2, values);
      add(`${manual.name}, outline ignored: heading recall`, 'high', 2, noOutline);
      add(`${manual.name}, outline ignored: heading precision`, 'high', 2, precision);
      add(`${manual.name}, outline used: heading precision vs outline`, 'high', 2, used);
    }
    if (poppler) {
      for (const layout of [false, true]) {
        const tool = layout ? 'pdftotext -layout' : 'pdftotext';
        const out = pdftotext(manual.file, layout);
        time[tool] = (time[tool] ?? 0) + out.ms;
        rate[tool] = ((truthPages.length - 1) * 1000) / out.ms;
        leaks[tool] = (leaks[tool] ?? 0) + glyphLeaks(out.text);
        const ms = pdftotextCpu(manual.file, layout);
        if (ms !== null) cpu[tool] = (cpu[tool] ?? 0) + ms;
      }
      add(`${manual.name}: page accuracy vs pdftotext's pages`, 'high', 3, accuracy);
      add(`${manual.name}: pages with text that come out empty`, 'low', 0, emptied);
    }
    add(`${manual.name}: pages/s, one process per file`, 'high', 1, rate);
  }
  if (corpus.manuals.length > 0) {
    const names = corpus.manuals.map((m) => m.name).join(', ');
    add(
      `manuals (${names}): mean heading recall vs outline`,
      'high',
      2,
      Object.fromEntries(Object.entries(recalls).map(([t, v]) => [t, mean(v)])),
    );
    const meanOf = (pick: (v: { recall: number[]; precision: number[] }) => number[]) =>
      Object.fromEntries(Object.entries(blind).map(([t, v]) => [t, mean(pick(v))]));
    add(
      'manuals, outline ignored: mean heading recall',
      'high',
      2,
      meanOf((v) => v.recall),
    );
    add(
      'manuals, outline ignored: mean heading precision',
      'high',
      2,
      meanOf((v) => v.precision),
    );
    const means = (v: Record<string, number[]>) =>
      Object.fromEntries(Object.entries(v).map(([t, l]) => [t, mean(l)]));
    add("manuals: mean page accuracy vs pdftotext's pages", 'high', 3, means(accuracies));
    add('manuals, outline used: mean heading precision vs outline', 'high', 2, means(precisions));
    add('manuals: leaked glyphs (ligatures, Ã/â€ mojibake, ©c)', 'low', 0, { ...leaks });
    add(`manuals: GFM tables made (${pages} pages)`, 'low', 0, { ...tables });
    add(`manuals: GFM tables on prose pages (${proseCount} pages)`, 'low', 0, { ...onProse });
    add('manuals: fenced code blocks', 'high', 0, { ...code });
    add(
      `manuals: pages/s, one process per file`,
      'high',
      1,
      Object.fromEntries(Object.entries(time).map(([t, ms]) => [t, (pages * 1000) / ms])),
    );
    // As the converter pool runs: one long-lived worker converts file after file (start-up
    // included); pdftotext, one process per file, is its peer.
    const worker: Record<string, Cell> = {};
    const perCpu: Record<string, Cell> = {};
    for (const [tool, root] of Object.entries(roots)) {
      const run = runWorker(
        root,
        corpus.manuals.map((m) => m.file),
      );
      worker[tool] = (run.pages * 1000) / run.ms;
      perCpu[tool] = (run.pages * 1000) / run.cpuMs;
    }
    for (const [tool, ms] of Object.entries(cpu)) perCpu[tool] = (pages * 1000) / ms;
    for (const tool of ['pdftotext', 'pdftotext -layout']) {
      const ms = time[tool];
      if (ms !== undefined) worker[tool] = (pages * 1000) / ms;
    }
    add(`manuals: pages/s, one worker (all files in one process)`, 'high', 1, worker);
    // The same per second of CPU (the worker's whole process; pdftotext's, one process per file):
    // on a loaded machine the figure the load leaves alone.
    add('manuals: pages per CPU second, one worker', 'high', 1, perCpu);
  }

  // Scans: the prose PDF OCR'd page by page (ours) and its 300-dpi renders (tesseract CLI).
  const source = corpus.lo.find((d) => d.name === 'lo-prose');
  if (corpus.scans.length > 0 && source !== undefined) {
    const truth = source.truth.text.join('\n');
    const cerV: Record<string, Cell> = {};
    const rss: Record<string, Cell> = {};
    for (const [tool, root] of Object.entries(roots)) {
      const run = runOurs(root, source.file, 'ocr', cache);
      cerV[tool] = cer(truth, run.markdown);
      rss[tool] = run.maxRssKb / 1024;
    }
    if (onPath('tesseract') && existsSync('/usr/bin/time')) {
      let text = '';
      let peak = 0;
      for (const scan of corpus.scans) {
        const r = spawnSync(
          '/usr/bin/time',
          ['-f', '%M', 'tesseract', scan.file, '-', '-l', 'eng'],
          {
            encoding: 'utf8',
          },
        );
        text += r.stdout;
        peak = Math.max(peak, Number(r.stderr.trim().split('\n').at(-1)));
      }
      cerV.tesseract = cer(truth, text);
      rss.tesseract = peak / 1024;
    }
    add(`OCR (${corpus.scans.length} pages of lo-prose, 300 dpi): CER`, 'low', 4, cerV);
    add('OCR: peak RSS, MB', 'low', 0, rss);
  }
  print(rows, corpus, options.before, options.after);
}
