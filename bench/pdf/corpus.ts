/**
 * The PDF comparison set, built into a cache directory outside git (bench/.cache/pdf):
 * - real manuals Debian packages ship as documentation (`apt-get download`, `dpkg-deb -x`), plus
 *   the Asymptote manual of test-data/realdocs;
 * - LibreOffice PDFs made here from flat-ODT sources written by lo-source.ts, so their truth is
 *   known (reading order, headings, table rows): with and without the PDF outline;
 * - scanned pages: a LibreOffice PDF rendered to 300-dpi PNGs (pdftoppm).
 * What a missing tool prevents is skipped with a message.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { loDocuments, type Truth } from './lo-source.js';

/** A Debian package and the PDF it ships. */
export interface ManualSource {
  name: string;
  pkg: string;
  /** Path inside the package (`.gz` is decompressed). */
  path: string;
}

export const MANUALS: ManualSource[] = [
  { name: 'bzip2', pkg: 'bzip2-doc', path: 'usr/share/doc/bzip2/manual.pdf.gz' },
  { name: 'nettle', pkg: 'nettle-dev', path: 'usr/share/doc/nettle-dev/nettle.pdf.gz' },
  { name: 'gnuplot', pkg: 'gnuplot-doc', path: 'usr/share/doc/gnuplot/gnuplot.pdf' },
  { name: 'valgrind', pkg: 'valgrind', path: 'usr/share/doc/valgrind/valgrind_manual.pdf.gz' },
  { name: 'libtasn1', pkg: 'libtasn1-doc', path: 'usr/share/doc/libtasn1-doc/libtasn1.pdf' },
];

export interface Corpus {
  manuals: { name: string; file: string }[];
  lo: { name: string; file: string; truth: Truth }[];
  scans: { file: string; text: string }[];
  skipped: string[];
}

export function onPath(program: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function fetchManual(cache: string, m: ManualSource): string {
  const out = join(cache, `${m.name}.pdf`);
  if (existsSync(out)) return out;
  const debs = join(cache, 'debs');
  mkdirSync(debs, { recursive: true });
  if (!readdirSync(debs).some((f) => f.startsWith(`${m.pkg}_`))) {
    execFileSync('apt-get', ['download', m.pkg], { cwd: debs, stdio: 'ignore' });
  }
  const deb = readdirSync(debs).find((f) => f.startsWith(`${m.pkg}_`));
  if (deb === undefined) throw new Error(`apt-get download ${m.pkg} gave no .deb`);
  const tree = join(cache, 'tree', m.pkg);
  mkdirSync(tree, { recursive: true });
  execFileSync('dpkg-deb', ['-x', join(debs, deb), tree]);
  const data = readFileSync(join(tree, m.path));
  writeFileSync(out, m.path.endsWith('.gz') ? gunzipSync(data) : data);
  return out;
}

/** soffice's JSON filter options: a PDF without bookmarks (LibreOffice ≥ 7.4). */
const NO_OUTLINE = 'pdf:writer_pdf_Export:{"ExportBookmarks":{"type":"boolean","value":"false"}}';

function buildLo(cache: string, corpus: Corpus): void {
  const dir = join(cache, 'lo');
  mkdirSync(dir, { recursive: true });
  const docs = loDocuments();
  for (const doc of docs) {
    for (const outline of [true, false]) {
      const name = `${doc.name}${outline ? '' : '-nooutline'}`;
      const file = join(dir, `${name}.pdf`);
      if (!existsSync(file)) {
        const src = join(dir, `${name}.fodt`);
        writeFileSync(src, doc.fodt);
        execFileSync(
          'soffice',
          ['--headless', '--convert-to', outline ? 'pdf' : NO_OUTLINE, '--outdir', dir, src],
          { stdio: 'ignore', timeout: 120_000 },
        );
      }
      corpus.lo.push({ name, file, truth: doc.truth });
    }
  }
}

function buildScans(cache: string, corpus: Corpus, pages: number): void {
  const source = corpus.lo.find((d) => d.name === 'lo-prose');
  if (source === undefined) return;
  const dir = join(cache, 'scans');
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, 'scan-1.png'))) {
    execFileSync('pdftoppm', [
      '-r',
      '300',
      '-gray',
      '-png',
      '-l',
      String(pages),
      source.file,
      join(dir, 'scan'),
    ]);
  }
  const files = readdirSync(dir)
    .filter((f) => /^scan-\d+\.png$/.test(f))
    .sort()
    .slice(0, pages);
  for (const f of files) corpus.scans.push({ file: join(dir, f), text: '' });
}

/** Builds (or reuses) the comparison set under `cache`. */
export function buildCorpus(cache: string, options: { manuals: string[]; scans: number }): Corpus {
  mkdirSync(cache, { recursive: true });
  const corpus: Corpus = { manuals: [], lo: [], scans: [], skipped: [] };
  const asy = 'test-data/realdocs/asymptote.pdf';
  if (options.manuals.includes('asymptote') && existsSync(asy)) {
    corpus.manuals.push({ name: 'asymptote', file: asy });
  }
  const apt = onPath('apt-get') && onPath('dpkg-deb');
  for (const m of MANUALS.filter((s) => options.manuals.includes(s.name))) {
    try {
      if (!apt && !existsSync(join(cache, `${m.name}.pdf`))) throw new Error('no apt-get/dpkg-deb');
      corpus.manuals.push({ name: m.name, file: fetchManual(cache, m) });
    } catch (error) {
      corpus.skipped.push(
        `${m.name} manual (${m.pkg}): ${(error as Error).message.split('\n')[0]}`,
      );
    }
  }
  if (onPath('soffice')) buildLo(cache, corpus);
  else
    corpus.skipped.push(
      'LibreOffice PDFs: soffice not installed (apt-get install libreoffice-writer-nogui)',
    );
  if (options.scans > 0) {
    if (onPath('pdftoppm')) buildScans(cache, corpus, options.scans);
    else corpus.skipped.push('scans: pdftoppm not installed (poppler-utils)');
  }
  return corpus;
}
