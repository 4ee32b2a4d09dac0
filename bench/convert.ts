/**
 * `npx tsx bench/convert.ts`: converter throughput in pages per second.
 *
 * Workloads, generated here (fixture builders of test/converter): a 50-page text PDF (text layer,
 * no OCR) and 3 scanned letter pages at 300 dpi, as one PDF and as 3 PNGs (OCR). aps-convert runs
 * in-process through convertFile (no Node start-up in the numbers). Where Debian's `pdftotext`
 * and `tesseract` are on PATH, the same files go through them (one process per file, as they are
 * used) and the table shows how many times faster they are; otherwise "not installed".
 *
 * First, unless `--only throughput`: the PDF comparison of bench/pdf/compare.ts against
 * pdftotext, `pdftotext -layout` and tesseract on real Debian manuals, LibreOffice PDFs with known
 * truth and scans; `--before <git ref>` adds that ref's converter as a column (before/after in one
 * run; `--after <ref>` pins the after column to a ref instead of the working tree),
 * `--manuals a,b` picks manuals, `--no-scans` skips OCR, `--only compare` stops after it.
 *
 * Options: --pages N (text PDF pages, default 50), --scans N (scanned pages, default 3).
 * `--nesting` measures deeply nested documents instead (bench/convert-nesting.ts says how).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { convertFile, DEFAULT_MAX_INPUT_BYTES } from '../src/converter/convert-file.js';
import { benchNesting } from './convert-nesting.js';
import { comparePdf } from './pdf/compare.js';
import type { ConverterMeta } from '../src/converter/contract.js';
import { renderText } from '../test/converter/fixtures/images.js';
import { buildPdf, type PdfPage, type TextRun } from '../test/converter/fixtures/pdf-writer.js';
import { cer, scanPage } from '../test/converter/fixtures/documents.js';

const { values } = parseArgs({
  options: {
    pages: { type: 'string', default: '50' },
    scans: { type: 'string', default: '3' },
    nesting: { type: 'boolean', default: false },
    baseline: { type: 'string' },
    depths: { type: 'string', default: '1000,5000,20000,100000' },
    timeout: { type: 'string', default: '60' },
    only: { type: 'string' },
    before: { type: 'string' },
    after: { type: 'string' },
    manuals: { type: 'string', default: 'asymptote,bzip2,nettle,gnuplot,valgrind,libtasn1' },
    'no-scans': { type: 'boolean', default: false },
    cache: { type: 'string', default: 'bench/.cache/pdf' },
  },
});
if (values.nesting) {
  await benchNesting({
    baseline: values.baseline,
    depths: values.depths.split(',').map(Number),
    timeoutSeconds: Number(values.timeout),
  });
  process.exit(0);
}
if (values.only !== 'throughput') {
  await comparePdf({
    cache: values.cache,
    before: values.before,
    after: values.after,
    manuals: values.manuals.split(','),
    scans: !values['no-scans'],
  });
  if (values.only === 'compare') process.exit(0);
}
const TEXT_PAGES = Number(values.pages);
const SCANS = Number(values.scans);

const WORDS = (
  'the of report revenue growth market customer product quarter year team cost service data ' +
  'result plan risk board share value increase decrease region sales operating margin research'
).split(' ');

/** Deterministic prose: `count` lines of ~70 characters. */
function prose(count: number, seed: number): string[] {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31);
  return Array.from({ length: count }, () => {
    let line = '';
    while (line.length < 65) line += `${WORDS[next() % WORDS.length] ?? 'x'} `;
    return `${line.trim()}.`;
  });
}

function textPage(n: number): PdfPage {
  const lines: TextRun[] = prose(46, n).map((text, i) => ({
    x: 72,
    y: 720 - i * 14,
    size: 11,
    text,
  }));
  return { text: [{ x: 72, y: 750, size: 16, text: `Section ${n}`, bold: true }, ...lines] };
}

/** Full letter pages of text (25 lines), rendered at 300 dpi. */
const scanLines = (n: number) => prose(25, 1000 + n);

function onPath(program: string): boolean {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((d) => d !== '' && existsSync(join(d, program)));
}

async function seconds(fn: () => unknown): Promise<number> {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

async function ours(path: string, command: 'auto' | 'text') {
  return convertFile(path, { command, maxInputBytes: DEFAULT_MAX_INPUT_BYTES });
}

/** CER of OCR'd markdown against the scans' text (page markers dropped). */
function ocrError(markdown: string, pages: number[]): string {
  const text = markdown.replace(/^<!-- page: \d+ -->$/gm, ' ');
  const expected = pages.map((i) => scanLines(i).join(' ')).join(' ');
  return `${(cer(expected, text) * 100).toFixed(2)} %`;
}

interface Row {
  workload: string;
  pages: number;
  ours: number;
  theirs: number | null;
  tool: string;
  note: string;
}

const dir = mkdtempSync(join(tmpdir(), 'aps-bench-convert-'));
const rows: Row[] = [];
try {
  const textPdf = join(dir, 'text.pdf');
  writeFileSync(textPdf, buildPdf(Array.from({ length: TEXT_PAGES }, (_, i) => textPage(i + 1))));
  await ours(textPdf, 'text'); // warm-up: module loading and pdf.js start-up are not throughput
  const textTime = await seconds(() => ours(textPdf, 'text'));
  const hasPdftotext = onPath('pdftotext');
  const popplerTime = hasPdftotext
    ? await seconds(() => execFileSync('pdftotext', [textPdf, join(dir, 'text.txt')]))
    : null;
  rows.push({
    workload: 'text PDF (text layer)',
    pages: TEXT_PAGES,
    ours: textTime,
    theirs: popplerTime,
    tool: 'pdftotext',
    note: '',
  });

  const scanPdf = join(dir, 'scans.pdf');
  writeFileSync(scanPdf, buildPdf(Array.from({ length: SCANS }, (_, i) => scanPage(scanLines(i)))));
  let result: Awaited<ReturnType<typeof ours>> | undefined;
  const ocrPdfTime = await seconds(async () => (result = await ours(scanPdf, 'auto')));
  const meta: ConverterMeta | undefined = result?.meta;
  const all = Array.from({ length: SCANS }, (_, i) => i);
  const hasTesseract = onPath('tesseract');
  const popplerOcrTime =
    hasTesseract && onPath('pdftoppm')
      ? await seconds(() => {
          execFileSync('pdftoppm', ['-r', '300', '-gray', '-png', scanPdf, join(dir, 'page')]);
          for (let i = 1; i <= SCANS; i++) {
            const page = join(dir, `page-${String(i).padStart(String(SCANS).length, '0')}.png`);
            execFileSync('tesseract', [page, '-', '-l', 'eng'], { stdio: 'ignore' });
          }
        })
      : null;
  rows.push({
    workload: 'scanned PDF (render + OCR)',
    pages: SCANS,
    ours: ocrPdfTime,
    theirs: popplerOcrTime,
    tool: 'pdftoppm + tesseract',
    note:
      `CER ${ocrError(result?.markdown ?? '', all)}, confidence ${meta?.ocrMeanConfidence ?? '–'}, ` +
      `worker start ${meta?.timings.ocrInit ?? '–'} ms`,
  });

  const pngs = Array.from({ length: SCANS }, (_, i) => {
    const path = join(dir, `scan-${i + 1}.png`);
    writeFileSync(path, renderText(scanLines(i), { fontSize: 42, margin: 150 }).encodeSync('png'));
    return path;
  });
  const markdown: string[] = [];
  const ocrPngTime = await seconds(async () => {
    for (const png of pngs) markdown.push((await ours(png, 'auto')).markdown);
  });
  let tessNote = `CER ${ocrError(markdown.join('\n'), all)}`;
  const tessTime = hasTesseract
    ? await seconds(() => {
        for (const [i, png] of pngs.entries()) {
          const text = execFileSync('tesseract', [png, '-', '-l', 'eng'], { encoding: 'utf8' });
          if (i === 0)
            tessNote = `tesseract CER ${(cer(scanLines(0).join(' '), text) * 100).toFixed(2)} %`;
        }
      })
    : null;
  rows.push({
    workload: 'PNG scans (OCR, one conversion each)',
    pages: SCANS,
    ours: ocrPngTime,
    theirs: tessTime,
    tool: 'tesseract',
    note: tessNote,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const rate = (pages: number, s: number | null) => (s === null ? '–' : (pages / s).toFixed(2));
const day = new Date().toISOString().slice(0, 10);
console.log(`\nConverter throughput (${day}, node ${process.version})\n`);
console.log(
  '| Workload | Pages | aps-convert s | aps-convert pages/s | Reference | Reference pages/s ' +
    '| aps-convert time ÷ reference time | Notes |',
);
console.log('| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |');
for (const r of rows) {
  const reference =
    r.theirs === null ? `${r.tool}: not installed` : `${r.tool} ${r.theirs.toFixed(2)} s`;
  const ratio = r.theirs === null ? '–' : `${(r.ours / r.theirs).toFixed(1)}×`;
  const cells = [r.workload, r.pages, r.ours.toFixed(2), rate(r.pages, r.ours), reference];
  console.log(`| ${[...cells, rate(r.pages, r.theirs), ratio, r.note].join(' | ')} |`);
}
