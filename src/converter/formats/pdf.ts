/**
 * PDF → markdown with pdf.js, one page at a time (text → or render → OCR → release): the I/O half.
 * It opens the document, reads each page's text layer, renders and OCRs the pages without usable
 * text (scans) under `auto` (`ocr` does that for every page; `text` never OCRs), enforces the
 * limits and turns failures into exit codes.
 *
 * What the text layer becomes is decided by the pure half, on plain objects: `pdf/lines.ts`
 * (runs → lines → reading order by XY-cut: columns side by side, bands top to bottom) and
 * `pdf/layout.ts` (running headers and footers dropped, headings by size, paragraphs).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { PDFDocumentProxy, PDFPageProxy, TextItem } from 'pdfjs-dist/types/src/display/api.js';
import { EXIT_CODES } from '../contract.js';
import type { BinaryConverter, ConvertLimits } from './binary-types.js';
import { ConvertError } from './convert-error.js';
import {
  addTime,
  grayImage,
  grayRows,
  isBlank,
  OCR_MAX_PIXELS,
  OcrSession,
  releaseNativeMemory,
  type GrayImage,
  type PixelSource,
} from './ocr.js';
import { withPageMarkers } from './paragraphs.js';
import { layoutPages, type PageContent } from './pdf/layout.js';
import { hasUsableText, toLines, type Line, type TextRun } from './pdf/lines.js';
import { entriesByPage, type OutlineEntry } from './pdf/outline.js';
import { getDocument, withSyncInflate } from './pdfjs.js';

// pdf.js loads its data files (standard fonts, CMaps, wasm decoders) from paths; in Node a plain
// directory path with a trailing slash.
const PDFJS_DIR = `${dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'))}/`;

/** Render resolution for OCR: tesseract is most accurate at ~300 dpi. */
const OCR_DPI = 300;

/** The part of pdf.js's (untyped) canvas factory used here. */
interface CanvasFactory {
  create(width: number, height: number): { canvas: object; context: PixelSource };
  destroy(pair: { canvas: object; context: PixelSource }): void;
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

/**
 * Rows of a page rendered at once: a band of ~8 MB RGBA, so the page's full RGBA canvas (35 MB for
 * A4 at 300 dpi, 4× its grey image) never exists; the bands are written into the grey image.
 */
const BAND_BYTES = 8_000_000;

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
  const image = grayImage(width, height);
  const band = Math.max(1, Math.min(height, Math.floor(BAND_BYTES / (width * 4))));
  const factory = doc.canvasFactory as CanvasFactory;
  const pair = factory.create(width, band);
  try {
    for (let top = 0; top < height; top += band) {
      // The same page, shifted up by `top` device pixels: this band of it lands on the canvas.
      // pdf.js types `canvas` as a DOM canvas; in Node it is its own @napi-rs/canvas one.
      const transform = [1, 0, 0, 1, 0, -top];
      await page.render({ canvas: pair.canvas as never, viewport, transform }).promise;
      grayRows(pair.context, width, Math.min(band, height - top), image.pixels, top * width);
      await releaseNativeMemory();
    }
    return { image, dpi: Math.round(scale * 72) };
  } finally {
    factory.destroy(pair);
  }
}

/** At most this many outline entries are read (a hostile outline may be huge or cyclic). */
const MAX_OUTLINE_ENTRIES = 20_000;

type OutlineNode = Awaited<ReturnType<PDFDocumentProxy['getOutline']>>[number];

/** Named destinations beyond which the outline fetches them all at once (one round trip each). */
const NAMED_DESTS_AT_ONCE = 16;

type Destination = Awaited<ReturnType<PDFDocumentProxy['getDestination']>>;
type PageRef = Parameters<PDFDocumentProxy['getPageIndex']>[0];

function countNamed(nodes: OutlineNode[], limit: number): number {
  let count = 0;
  const stack = [...nodes];
  for (let node = stack.pop(); node !== undefined && count <= limit; node = stack.pop()) {
    if (typeof node.dest === 'string') count++;
    stack.push(...(node.items as OutlineNode[]));
  }
  return count;
}

/**
 * The outline (bookmarks) as entries with the page each points to; [] when there is none or it
 * cannot be read (headings then come from the text alone). A manual's outline names hundreds of
 * destinations (gnuplot's: 648): they are read in one request then, not one each, and each page
 * reference is resolved once.
 */
async function readOutline(doc: PDFDocumentProxy): Promise<OutlineEntry[]> {
  const entries: OutlineEntry[] = [];
  let named: Record<string, Destination> | undefined;
  const pageIndexes = new Map<string, Promise<number>>();
  const destination = async (dest: OutlineNode['dest']): Promise<Destination> => {
    if (typeof dest !== 'string') return dest;
    return named !== undefined ? (named[dest] ?? null) : doc.getDestination(dest);
  };
  const pageIndex = (target: PageRef): Promise<number> => {
    const key = `${target.num} ${target.gen}`;
    let index = pageIndexes.get(key);
    if (index === undefined) pageIndexes.set(key, (index = doc.getPageIndex(target)));
    return index;
  };
  const visit = async (nodes: OutlineNode[], level: number): Promise<void> => {
    for (const node of nodes) {
      if (entries.length >= MAX_OUTLINE_ENTRIES) return;
      try {
        const target: unknown = (await destination(node.dest))?.[0];
        const index =
          typeof target === 'number'
            ? target
            : typeof target === 'object' && target !== null
              ? await pageIndex(target as PageRef)
              : -1;
        if (index >= 0) entries.push({ title: node.title, level, page: index + 1 });
      } catch {
        // a broken destination costs that entry only
      }
      await visit(node.items as OutlineNode[], level + 1);
    }
  };
  try {
    // Typed as an array; null when the PDF has no outline.
    const outline = (await doc.getOutline()) as OutlineNode[] | null;
    if (outline !== null && countNamed(outline, NAMED_DESTS_AT_ONCE) > NAMED_DESTS_AT_ONCE) {
      // Unreadable as a whole: looked up one by one, so a broken one costs that entry only.
      named = await doc.getDestinations().then(
        (all) => all as Record<string, Destination>,
        () => undefined,
      );
    }
    await visit(outline ?? [], 1);
  } catch {
    return [];
  }
  return entries;
}

interface Run {
  doc: PDFDocumentProxy;
  command: 'auto' | 'text' | 'ocr';
  limits: ConvertLimits;
  ocr: OcrSession;
  timings: Record<string, number>;
  outline: Map<number, OutlineEntry[]>;
  /** Pages by what happened to them, for the warnings. */
  noText: number[];
  lowDpi: number[];
}

/**
 * A pdf.js text item as the layout reads it: its origin and font size come from its matrix; its
 * font is pdf.js's id for it (one per font of the document) and whether the font is monospaced.
 */
function textRun(item: TextItem, styles: Record<string, { fontFamily?: string }>): TextRun {
  const [, , c = 0, d = 0, x = 0, y = 0] = item.transform as number[];
  const size = Math.hypot(c, d) || item.height || 1;
  const mono = styles[item.fontName]?.fontFamily === 'monospace';
  return { str: item.str, x, y, width: item.width, size, font: item.fontName, mono };
}

/** One page: its text layer if usable (and wanted), else its OCR'd render. */
async function convertPage(run: Run, page: PDFPageProxy): Promise<PageContent> {
  let started = performance.now();
  let lines: Line[] = [];
  if (run.command !== 'ocr') {
    const { items, styles } = await page.getTextContent();
    lines = toLines(items.filter((i): i is TextItem => 'str' in i).map((i) => textRun(i, styles)));
    addTime(run.timings, 'text', started);
  }
  if (run.command !== 'ocr' && hasUsableText(lines)) {
    return { kind: 'text', lines, outline: run.outline.get(page.pageNumber) };
  }
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

/** PDF → markdown with a page marker before every page; the binary converter for `pdf`. */
export const convertPdf: BinaryConverter = (path, options) =>
  withSyncInflate(() => convertDocument(path, options));

const convertDocument: BinaryConverter = async (path, { command, lang, limits, onProgress }) => {
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
    outline: new Map(),
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
    if (command !== 'ocr') run.outline = entriesByPage(await readOutline(doc));
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
      onProgress?.(n, count);
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
