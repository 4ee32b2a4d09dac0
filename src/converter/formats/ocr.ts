/**
 * OCR with Tesseract (tesseract.js-core, ocr-engine.ts), offline: traineddata comes from the
 * `@tesseract.js-data/<lang>` npm packages (English is a dependency; more languages work once
 * their package is installed), never from a CDN. One engine per conversion, started on the first
 * page that needs it and released at the end.
 */
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EXIT_CODES } from '../contract.js';
import { ConvertError } from './convert-error.js';
import { OcrEngine } from './ocr-engine.js';
import { ocrTextToMarkdown } from './paragraphs.js';

const require = createRequire(import.meta.url);
const DATA_SCOPE = '@tesseract.js-data';
/** Integer LSTM models first (small, fast to load, as accurate as "best"); then the full ones. */
const MODEL_DIRS = ['4.0.0_best_int', '4.0.0'];
const LANG_CODE = /^[A-Za-z_]+$/;

/**
 * Above this many pixels an image is downscaled before OCR: an A4 page at 400 dpi is ~15 MP, and
 * more resolution makes tesseract slower without making it more accurate.
 */
export const OCR_MAX_PIXELS = 16_000_000;
/** Pages whose mean word confidence is below this get a warning. */
const LOW_CONFIDENCE = 60;

/** 8-bit grey pixels, rows top to bottom (what tesseract binarises anyway: RGBA is 4× the copy). */
export interface GrayImage {
  width: number;
  height: number;
  pixels: Uint8Array;
  /** The whole PGM file when `pixels` is its tail (grayImage): tesseract gets it without a copy. */
  pgm?: Uint8Array;
}

function pgmHeader(width: number, height: number): string {
  return `P5\n${width} ${height}\n255\n`;
}

/** A white grey image whose pixels sit right after a PGM header in one buffer. */
export function grayImage(width: number, height: number): GrayImage {
  const header = pgmHeader(width, height);
  const pgm = new Uint8Array(header.length + width * height);
  for (let i = 0; i < header.length; i++) pgm[i] = header.charCodeAt(i);
  const pixels = pgm.subarray(header.length).fill(255);
  return { width, height, pixels, pgm };
}

/** The part of a 2D canvas context the converters read pixels through (any canvas build). */
export interface PixelSource {
  getImageData(x: number, y: number, width: number, height: number): { data: Uint8ClampedArray };
}

/** Adds the milliseconds since `since` to `timings[stage]` (stages repeat once per page). */
export function addTime(timings: Record<string, number>, stage: string, since: number): void {
  const total = (timings[stage] ?? 0) + performance.now() - since;
  timings[stage] = Math.round(total * 10) / 10;
}

/** The language packages installed next to this one, e.g. `['deu', 'eng']`. */
function installedLanguages(): string[] {
  const found = new Set<string>();
  for (const dir of require.resolve.paths(`${DATA_SCOPE}/eng`) ?? []) {
    const scope = join(dir, DATA_SCOPE);
    if (existsSync(scope)) for (const name of readdirSync(scope)) found.add(name);
  }
  return [...found].sort();
}

/** `eng+deu` → each language's traineddata file; a language not installed is a usage error. */
export function resolveLanguages(lang: string): Map<string, string> {
  const files = new Map<string, string>();
  const missing: string[] = [];
  for (const code of lang.split('+')) {
    let file: string | undefined;
    if (LANG_CODE.test(code)) {
      try {
        const dir = dirname(require.resolve(`${DATA_SCOPE}/${code}/package.json`));
        file = MODEL_DIRS.map((m) => join(dir, m, `${code}.traineddata.gz`)).find(existsSync);
      } catch {
        // not installed: reported below together with the others
      }
    }
    if (file === undefined) missing.push(code);
    else files.set(code, file);
  }
  if (missing.length > 0) {
    const installed = installedLanguages().join(', ') || 'none';
    throw new ConvertError(
      EXIT_CODES.USAGE,
      `OCR language ${missing.join(', ')} is not installed (npm package ` +
        `${missing.map((c) => `${DATA_SCOPE}/${c}`).join(', ')}); installed: ${installed}`,
    );
  }
  return files;
}

/**
 * Grey pixels of a canvas, read in strips of ~4 MB so a large page never needs a second full-size
 * RGBA copy. Transparent pixels count as white paper.
 */
export function grayFromContext(context: PixelSource, width: number, height: number): GrayImage {
  const image = grayImage(width, height);
  grayRows(context, width, height, image.pixels, 0);
  return image;
}

/**
 * The top `rows` rows of a canvas as grey into `target` from `offset` (a band of a larger image),
 * in strips of ~4 MB.
 */
export function grayRows(
  context: PixelSource,
  width: number,
  rows: number,
  target: Uint8Array,
  offset: number,
): void {
  const strip = Math.max(1, Math.floor(4_000_000 / (width * 4)));
  for (let top = 0; top < rows; top += strip) {
    const count = Math.min(strip, rows - top);
    const { data } = context.getImageData(0, top, width, count);
    const start = offset + top * width;
    for (let i = 0; i < width * count; i++) {
      const j = i * 4;
      const luma = ((data[j] ?? 0) * 77 + (data[j + 1] ?? 0) * 150 + (data[j + 2] ?? 0) * 29) >> 8;
      const alpha = data[j + 3] ?? 0;
      target[start + i] = 255 - (((255 - luma) * alpha) >> 8);
    }
  }
}

let collectGarbage: (() => void) | null | undefined;

/**
 * Frees the pixels canvas reads left behind, now. @napi-rs/canvas hands `getImageData` out in
 * native buffers V8 does not count, so a small JS heap never triggers the collection that would
 * free them, and their finalizers run only after it, on a later turn of the event loop: every
 * 300-dpi page read kept ~40 MB until the process ended (3 pages: +120 MB; a 100-page scan, GBs).
 * The converter is a process of its own, so it may ask V8 for a collection (jest's leak detector
 * gets `gc` the same way); a collection of its small heap costs a few ms per band.
 */
export async function releaseNativeMemory(): Promise<void> {
  if (collectGarbage === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    try {
      if (exposed === undefined) setFlagsFromString('--expose-gc');
      collectGarbage = exposed ?? (runInNewContext('gc') as () => void);
    } catch {
      collectGarbage = null; // not offered: the pixels are freed whenever V8 collects
    }
  }
  collectGarbage?.();
  await nextTurn();
}

/** Nothing printed on it: rendering noise aside, no dark pixels. OCR'ing it would only cost time. */
export function isBlank(image: GrayImage): boolean {
  const allowed = Math.max(64, image.pixels.length / 100_000);
  let dark = 0;
  for (const value of image.pixels) if (value < 128 && ++dark > allowed) return false;
  return true;
}

/** White kept around the printed area by cropToInk, in pixels (tesseract wants a border). */
const CROP_MARGIN = 24;

/**
 * The part of a page with ink on it, plus a margin: the white paper around it holds nothing to
 * read, and tesseract's memory and time grow with the pixels it is given (an A4 page's margins are
 * ~30 % of it). The page itself when cropping would save little.
 */
export function cropToInk(image: GrayImage): GrayImage {
  const { width, height, pixels } = image;
  let top = height;
  let bottom = -1;
  let left = width;
  let right = -1;
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let first = -1;
    for (let x = 0; x < width; x++) {
      if ((pixels[row + x] ?? 255) < 128) {
        first = x;
        break;
      }
    }
    if (first < 0) continue;
    let last = width - 1;
    while ((pixels[row + last] ?? 255) >= 128) last--;
    if (y < top) top = y;
    bottom = y;
    if (first < left) left = first;
    if (last > right) right = last;
  }
  if (bottom < 0) return image;
  const x0 = Math.max(0, left - CROP_MARGIN);
  const y0 = Math.max(0, top - CROP_MARGIN);
  const cropWidth = Math.min(width, right + CROP_MARGIN + 1) - x0;
  const cropHeight = Math.min(height, bottom + CROP_MARGIN + 1) - y0;
  if (cropWidth * cropHeight > 0.9 * width * height) return image;
  const cropped = grayImage(cropWidth, cropHeight);
  for (let y = 0; y < cropHeight; y++) {
    const from = (y0 + y) * width + x0;
    cropped.pixels.set(pixels.subarray(from, from + cropWidth), y * cropWidth);
  }
  return cropped;
}

/** A PGM file: the simplest format Leptonica reads, and no encoding cost. */
function toPgm(image: GrayImage): Uint8Array {
  if (image.pgm !== undefined) return image.pgm;
  const header = Buffer.from(pgmHeader(image.width, image.height), 'latin1');
  return Buffer.concat([header, image.pixels]);
}

/** OCR of one conversion: records which pages were OCR'd and how confident tesseract was. */
export class OcrSession {
  readonly pages: number[] = [];
  private readonly confidences: number[] = [];
  private readonly lowConfidence: string[] = [];
  private engine: Promise<OcrEngine> | undefined;

  constructor(
    private readonly lang: string,
    private readonly timings: Record<string, number>,
  ) {}

  /**
   * OCRs one page and returns its markdown ('' when nothing was found). `dpi` is the resolution
   * the page was rendered at (0: unknown, tesseract estimates it from the glyphs).
   */
  async recognize(page: number, image: GrayImage, dpi = 0): Promise<string> {
    const engine = await (this.engine ??= this.start());
    const started = performance.now();
    const data = engine.recognize(toPgm(cropToInk(image)), dpi);
    addTime(this.timings, 'ocr', started);
    this.pages.push(page);
    const markdown = ocrTextToMarkdown(data.text);
    if (markdown !== '') {
      this.confidences.push(data.confidence);
      if (data.confidence < LOW_CONFIDENCE) this.lowConfidence.push(`${page} (${data.confidence})`);
    }
    return markdown;
  }

  /** Mean confidence (0..100) over the OCR'd pages that had text; null when none had. */
  meanConfidence(): number | null {
    if (this.confidences.length === 0) return null;
    const sum = this.confidences.reduce((a, b) => a + b, 0);
    return Math.round((sum / this.confidences.length) * 10) / 10;
  }

  warnings(): string[] {
    if (this.lowConfidence.length === 0) return [];
    const pages = `page${this.lowConfidence.length === 1 ? '' : 's'} ${this.lowConfidence.join(', ')}`;
    return [`OCR confidence is low on ${pages}: the text may be inaccurate`];
  }

  /** Releases the engine (also after a failure). */
  async close(): Promise<void> {
    const engine = this.engine;
    this.engine = undefined;
    await engine?.then(
      (e) => {
        e.end();
      },
      () => undefined,
    );
    // The engine's memory (its WebAssembly heap) goes now, not whenever V8 would collect it.
    await releaseNativeMemory();
  }

  private async start(): Promise<OcrEngine> {
    const started = performance.now();
    const files = resolveLanguages(this.lang);
    try {
      const engine = await OcrEngine.start(files);
      addTime(this.timings, 'ocrInit', started);
      return engine;
    } catch (error) {
      // Not the document's fault: without this, every page would count as unreadable.
      const reason = error instanceof Error ? error.message : String(error);
      throw new ConvertError(EXIT_CODES.FAILED, `the OCR engine did not start (${reason})`);
    }
  }
}
