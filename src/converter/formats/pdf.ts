/**
 * PDF → markdown with pdf.js, one page at a time (text → or render → OCR → release).
 *
 * Text layer: positioned runs → lines (same baseline) → reading order (XY-cut: columns side by
 * side, bands top to bottom) → paragraphs (line spacing, indents, bullets) with line-end
 * hyphenation repaired. Lines clearly larger than the body text become `#`/`##`/`###` headings,
 * and lines repeated at the top or bottom of most pages (running headers, page numbers) are
 * dropped. Pages without usable text (scans) are rendered and OCR'd under `auto`; `ocr` does that
 * for every page; `text` never OCRs.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { PDFDocumentProxy, PDFPageProxy, TextItem } from 'pdfjs-dist/types/src/display/api.js';
import { EXIT_CODES } from '../contract.js';
import type { BinaryConverter, ConvertLimits } from './binary-types.js';
import { ConvertError } from './convert-error.js';
import {
  addTime,
  escapeParagraph,
  grayFromContext,
  isBlank,
  joinLines,
  OCR_MAX_PIXELS,
  OcrSession,
  type GrayImage,
  type PixelSource,
  withPageMarkers,
} from './ocr.js';

// pdf.js loads its data files (standard fonts, CMaps, wasm decoders) from paths; in Node a plain
// directory path with a trailing slash.
const PDFJS_DIR = `${dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'))}/`;

/** Render resolution for OCR: tesseract is most accurate at ~300 dpi. */
const OCR_DPI = 300;
/** Fewer letters/digits than this on a page: no usable text layer (a scan, or just a number). */
const MIN_TEXT_CHARS = 10;
/** Line size ≥ body size × this: a heading. */
const HEADING_RATIO = 1.2;
/** Above this many lines on a page reading order is a plain sort (XY-cut is quadratic). */
const MAX_XY_CUT_LINES = 1500;
const BULLET = /^[•◦▪‣●■·]\s*/u;

export interface Line {
  text: string;
  x0: number;
  x1: number;
  /** Baseline, PDF units (upwards). */
  y: number;
  size: number;
}

type PageContent = { kind: 'text'; lines: Line[] } | { kind: 'ocr'; markdown: string };

/** The part of pdf.js's (untyped) canvas factory used here. */
interface CanvasFactory {
  create(width: number, height: number): { canvas: object; context: PixelSource };
  destroy(pair: { canvas: object; context: PixelSource }): void;
}

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1];
const topDown = (a: Line, b: Line) => b.y - a.y || a.x0 - b.x0;
const letters = (text: string) => text.match(/[\p{L}\p{N}]/gu)?.length ?? 0;

/** Text runs → lines: runs on one baseline, split where a gap is wide enough to be a gutter. */
export function toLines(items: readonly TextItem[]): Line[] {
  const runs = items
    .filter((item) => item.str.trim() !== '')
    .map((item) => {
      const [, , c = 0, d = 0, x = 0, y = 0] = item.transform as number[];
      const size = Math.hypot(c, d) || item.height || 1;
      return { text: item.str, x0: x, x1: x + item.width, y, size };
    })
    .sort(topDown);
  const lines: Line[] = [];
  let row: Line[] = [];
  const flushRow = () => {
    row.sort((a, b) => a.x0 - b.x0);
    let line: Line | undefined;
    for (const run of row) {
      const gap = line === undefined ? 0 : run.x0 - line.x1;
      if (line === undefined || gap > 1.5 * run.size) {
        line = { ...run };
        lines.push(line);
        continue;
      }
      const space = gap > 0.15 * run.size && !/\s$/.test(line.text) && !/^\s/.test(run.text);
      line.text += (space ? ' ' : '') + run.text;
      line.x1 = Math.max(line.x1, run.x1);
      line.size = Math.max(line.size, run.size);
    }
    row = [];
  };
  for (const run of runs) {
    const first = row[0];
    if (first !== undefined && Math.abs(first.y - run.y) > 0.5 * Math.min(first.size, run.size)) {
      flushRow();
    }
    row.push(run);
  }
  flushRow();
  for (const line of lines) line.text = line.text.replace(/\s+/g, ' ').trim();
  return lines;
}

/** The widest gap between parts of `lines` along one axis, splitting them in two. */
function widestGap(
  lines: readonly Line[],
  start: (l: Line) => number,
  end: (l: Line) => number,
): { gap: number; first: Line[]; second: Line[] } | null {
  const sorted = [...lines].sort((a, b) => start(a) - start(b));
  let reach = -Infinity;
  let best: { gap: number; at: number } | null = null;
  for (const [i, line] of sorted.entries()) {
    const gap = start(line) - reach;
    if (i > 0 && gap > 0 && (best === null || gap > best.gap)) best = { gap, at: i };
    reach = Math.max(reach, end(line));
  }
  if (best === null) return null;
  return { gap: best.gap, first: sorted.slice(0, best.at), second: sorted.slice(best.at) };
}

/** Vertical extent of some lines (bottom, top). */
function extent(lines: readonly Line[]): [number, number] {
  return [
    Math.min(...lines.map((l) => l.y - 0.25 * l.size)),
    Math.max(...lines.map((l) => l.y + l.size)),
  ];
}

/**
 * Reading order by recursive XY-cut: columns (a vertical gutter with text beside it on both
 * sides) are read left to right, else bands (a horizontal gap) top to bottom.
 */
export function readingOrder(lines: readonly Line[]): Line[] {
  if (lines.length <= 1 || lines.length > MAX_XY_CUT_LINES) return [...lines].sort(topDown);
  const em = median(lines.map((l) => l.size)) ?? 0;
  const columns = widestGap(
    lines,
    (l) => l.x0,
    (l) => l.x1,
  );
  if (columns !== null && columns.gap >= em) {
    const [b1, t1] = extent(columns.first);
    const [b2, t2] = extent(columns.second);
    // A right-aligned date above a letter is not a column: require the parts to sit side by side.
    if (Math.min(t1, t2) - Math.max(b1, b2) >= 0.5 * Math.min(t1 - b1, t2 - b2)) {
      return [...readingOrder(columns.first), ...readingOrder(columns.second)];
    }
  }
  const bands = widestGap(
    lines,
    (l) => -(l.y + l.size),
    (l) => -(l.y - 0.25 * l.size),
  );
  if (bands === null) return [...lines].sort(topDown);
  return [...readingOrder(bands.first), ...readingOrder(bands.second)];
}

/**
 * Running headers and footers: the same text at the same height at the top or bottom of a page,
 * in body size or smaller (a heading may repeat: "Chapter 1", "Chapter 2"). Numbers in them may
 * differ only as page numbers do: by the page's index (`Page 3 of 9`, `- 4 -`). "Total 120" on
 * one page and "Total 95" on the next are content.
 */
function repeatKey(line: Line): string {
  const text = line.text.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ');
  return `${text}@${Math.round(line.y / 2)}`;
}

type Sighting = { page: number; numbers: number[] };

function isRunning(seen: readonly Sighting[]): boolean {
  const [first] = seen;
  if (first === undefined) return false;
  return first.numbers.every((n, k) => {
    const at = (s: Sighting) => s.numbers[k] ?? NaN;
    return seen.every((s) => at(s) === n) || seen.every((s) => at(s) - s.page === n - first.page);
  });
}

/** Drops the lines that repeat as a running header or footer. */
export function dropRepeated(pages: Line[][], body: number): Line[][] {
  const edges = pages.map((lines) => {
    const sorted = [...lines].sort(topDown);
    const edge = [...sorted.slice(0, 2), ...sorted.slice(-2)];
    return edge.filter((l) => l.size < body * HEADING_RATIO);
  });
  const seen = new Map<string, Sighting[]>();
  edges.forEach((edge, page) => {
    for (const l of edge) {
      const list = seen.get(repeatKey(l)) ?? [];
      if (list.at(-1)?.page !== page)
        list.push({ page, numbers: (l.text.match(/\d+/g) ?? []).map(Number) });
      seen.set(repeatKey(l), list);
    }
  });
  // On most pages of a short document; on 3 pages of a longer one (chapter titles as headers).
  const needed = Math.min(3, Math.max(2, Math.ceil(pages.length / 2)));
  const running = new Set(
    [...seen].filter(([, list]) => list.length >= needed && isRunning(list)).map(([key]) => key),
  );
  return pages.map((lines, i) =>
    lines.filter((l) => !(edges[i]?.includes(l) && running.has(repeatKey(l)))),
  );
}

/** The body text size: the size most characters are set in. */
function bodySize(pages: readonly Line[][]): number {
  const chars = new Map<number, number>();
  for (const line of pages.flat()) {
    const size = Math.round(line.size * 2) / 2;
    chars.set(size, (chars.get(size) ?? 0) + line.text.length);
  }
  return [...chars].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
}

/** One page's lines → markdown blocks; `levels` maps heading sizes to `#` counts. */
function pageToMarkdown(lines: readonly Line[], body: number, levels: Map<number, number>): string {
  const level = (l: Line) =>
    l.size >= body * HEADING_RATIO && letters(l.text) >= 2
      ? (levels.get(Math.round(l.size * 2) / 2) ?? 3)
      : 0;
  const gaps = lines.flatMap((l, i) => {
    const gap = (lines[i - 1]?.y ?? Infinity) - l.y;
    return gap > 0.8 * body && gap < 3 * body ? [gap] : [];
  });
  const leading = median(gaps) ?? 1.2 * body;
  const blocks: string[] = [];
  let para: Line[] = [];
  const flush = () => {
    const first = para[0];
    if (first === undefined) return;
    const text = joinLines(para.map((l) => l.text));
    const h = level(first);
    if (h > 0 && text.length <= 200) blocks.push(`${'#'.repeat(h)} ${text}`);
    else if (BULLET.test(text)) blocks.push(`- ${text.replace(BULLET, '')}`);
    else blocks.push(escapeParagraph(text));
    para = [];
  };
  for (const line of lines) {
    const [first, prev] = [para[0], para.at(-1)];
    if (first !== undefined && prev !== undefined) {
      const gap = prev.y - line.y;
      const right = Math.max(...para.map((l) => l.x1));
      const ends =
        level(prev) !== level(line) ||
        Math.abs(prev.size - line.size) > 0.15 * body ||
        gap <= 0 ||
        gap > 1.3 * Math.max(leading, prev.size) ||
        BULLET.test(line.text) ||
        (!BULLET.test(first.text) && line.x0 > prev.x0 + line.size) ||
        (para.length > 1 && /[.!?:]$/.test(prev.text) && prev.x1 < right - 3 * prev.size);
      if (ends) flush();
    }
    para.push(line);
  }
  flush();
  return blocks.join('\n\n');
}

/** Markdown of every page, with the text-layer pages laid out against each other. */
export function layoutPages(pages: readonly PageContent[]): string[] {
  const textPages = pages.flatMap((p) => (p.kind === 'text' ? [p.lines] : []));
  const body = bodySize(textPages);
  const kept = dropRepeated(textPages, body);
  const headingSizes = [
    ...new Set(
      kept
        .flat()
        .filter((l) => l.size >= body * HEADING_RATIO)
        .map((l) => Math.round(l.size * 2) / 2),
    ),
  ].sort((a, b) => b - a);
  const levels = new Map(headingSizes.map((s, i) => [s, Math.min(i + 1, 3)]));
  let next = 0;
  return pages.map((p) =>
    p.kind === 'ocr' ? p.markdown : pageToMarkdown(readingOrder(kept[next++] ?? []), body, levels),
  );
}

async function openPdf(data: Uint8Array, limits: ConvertLimits): Promise<PDFDocumentProxy> {
  try {
    return await getDocument({
      data,
      standardFontDataUrl: `${PDFJS_DIR}standard_fonts/`,
      cMapUrl: `${PDFJS_DIR}cmaps/`,
      wasmUrl: `${PDFJS_DIR}wasm/`,
      // Font programs of a hostile file must never become code (CVE-2024-4367).
      isEvalSupported: false,
      // Embedded images above the pixel limit are skipped instead of decoded.
      maxImageSize: limits.maxPixels,
      verbosity: 0,
    }).promise;
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (name === 'PasswordException') {
      throw new ConvertError(EXIT_CODES.ENCRYPTED, 'the PDF is password-protected');
    }
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConvertError(EXIT_CODES.CORRUPT, `the PDF cannot be read (${reason})`);
  }
}

/** Renders a page for OCR at OCR_DPI, lower if that would exceed the pixel limits. */
async function renderPage(
  doc: PDFDocumentProxy,
  page: PDFPageProxy,
  limits: ConvertLimits,
): Promise<{ image: GrayImage; dpi: number }> {
  const base = page.getViewport({ scale: 1 });
  const budget = Math.min(limits.maxPixels, OCR_MAX_PIXELS);
  const scale = Math.min(OCR_DPI / 72, Math.sqrt(budget / (base.width * base.height)));
  const viewport = page.getViewport({ scale });
  const width = Math.max(1, Math.floor(viewport.width));
  const height = Math.max(1, Math.floor(viewport.height));
  const factory = doc.canvasFactory as CanvasFactory;
  const pair = factory.create(width, height);
  try {
    // pdf.js types `canvas` as a DOM canvas; in Node it is its own @napi-rs/canvas one.
    await page.render({ canvas: pair.canvas as never, viewport }).promise;
    return { image: grayFromContext(pair.context, width, height), dpi: Math.round(scale * 72) };
  } finally {
    factory.destroy(pair);
  }
}

interface Run {
  doc: PDFDocumentProxy;
  command: 'auto' | 'text' | 'ocr';
  limits: ConvertLimits;
  ocr: OcrSession;
  timings: Record<string, number>;
  /** Pages by what happened to them, for the warnings. */
  noText: number[];
  lowDpi: number[];
}

/** One page: its text layer if usable (and wanted), else its OCR'd render. */
async function convertPage(run: Run, page: PDFPageProxy): Promise<PageContent> {
  let started = performance.now();
  let lines: Line[] = [];
  if (run.command !== 'ocr') {
    const { items } = await page.getTextContent();
    lines = toLines(items.filter((i): i is TextItem => 'str' in i));
    addTime(run.timings, 'text', started);
  }
  const text = lines.map((l) => l.text).join(' ');
  const junk = text.match(/[\uFFFD\p{Co}]/gu)?.length ?? 0; // unmapped glyphs of broken fonts
  const usable = letters(text) >= MIN_TEXT_CHARS && junk <= letters(text) / 10;
  if (usable && run.command !== 'ocr') return { kind: 'text', lines };
  if (run.command === 'text') {
    run.noText.push(page.pageNumber);
    return { kind: 'text', lines: [] };
  }
  started = performance.now();
  const { image, dpi } = await renderPage(run.doc, page, run.limits);
  addTime(run.timings, 'render', started);
  if (dpi < OCR_DPI / 2) run.lowDpi.push(page.pageNumber);
  const markdown = isBlank(image) ? '' : await run.ocr.recognize(page.pageNumber, image, dpi);
  return { kind: 'ocr', markdown };
}

function pageList(pages: number[]): string {
  return `page${pages.length === 1 ? '' : 's'} ${pages.join(', ')}`;
}

export const convertPdf: BinaryConverter = async (path, { command, lang, limits }) => {
  const timings: Record<string, number> = {};
  const started = performance.now();
  const doc = await openPdf(new Uint8Array(await readFile(path)), limits);
  addTime(timings, 'open', started);
  const count = doc.numPages;
  const run: Run = {
    doc,
    command,
    limits,
    timings,
    ocr: new OcrSession(lang, timings),
    noText: [],
    lowDpi: [],
  };
  const pages: PageContent[] = [];
  const unreadable: number[] = [];
  try {
    if (count > limits.maxPages) {
      throw new ConvertError(
        EXIT_CODES.TOO_LARGE,
        `the PDF has ${count} pages; the converter accepts at most ${limits.maxPages} (APS_CONVERT_MAX_PAGES)`,
      );
    }
    // One page at a time: its text, render and OCR image are released before the next one.
    for (let n = 1; n <= count; n++) {
      let page: PDFPageProxy | undefined;
      try {
        page = await doc.getPage(n);
        pages.push(await convertPage(run, page));
      } catch (error) {
        if (error instanceof ConvertError) throw error;
        unreadable.push(n); // a damaged page costs that page, not the document
        pages.push({ kind: 'text', lines: [] });
      } finally {
        page?.cleanup();
      }
    }
  } finally {
    await run.ocr.close();
    await doc.destroy();
  }
  if (unreadable.length === count) {
    const reason = count === 0 ? 'the PDF has no pages' : 'no page of the PDF can be read';
    throw new ConvertError(EXIT_CODES.CORRUPT, reason);
  }
  const layoutStart = performance.now();
  const markdown = layoutPages(pages);
  addTime(timings, 'layout', layoutStart);
  if (markdown.every((m) => m === '')) {
    throw new ConvertError(
      EXIT_CODES.NOTHING_EXTRACTABLE,
      command === 'text'
        ? 'the PDF has no text layer (scanned?); convert it with --command auto or ocr to OCR it'
        : 'the PDF contains no text, and OCR found none on its pages',
    );
  }
  const warnings: string[] = [];
  if (unreadable.length > 0) warnings.push(`could not read ${pageList(unreadable)} of the PDF`);
  if (run.noText.length > 0) {
    warnings.push(
      `no text layer on ${pageList(run.noText)} (scanned?): not OCR'd with --command text`,
    );
  }
  if (run.lowDpi.length > 0) {
    warnings.push(`OCR at reduced resolution (APS_CONVERT_MAX_PIXELS) on ${pageList(run.lowDpi)}`);
  }
  return {
    markdown: withPageMarkers(markdown),
    pages: count,
    ocrPages: run.ocr.pages,
    ocrMeanConfidence: run.ocr.meanConfidence(),
    warnings: [...warnings, ...run.ocr.warnings()],
    timings,
  };
};
