/**
 * Images → markdown by OCR: PNG, JPEG, WebP, BMP and GIF (first frame) decoded by @napi-rs/canvas,
 * TIFF by utif2 with one page per frame. Dimensions are read from the file header before anything
 * is decoded, so an image above `maxPixels` (a decompression bomb is a few KB on disk) is refused
 * without allocating its pixels. Frames are decoded, OCR'd and released one at a time.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { createCanvas, loadImage, type Canvas, type Image } from '@napi-rs/canvas';
import type * as Utif from 'utif2';
import { EXIT_CODES } from '../contract.js';
import type { BinaryConverter, ConvertLimits } from './binary-types.js';
import { ConvertError } from './convert-error.js';
import {
  addTime,
  grayFromContext,
  isBlank,
  OCR_MAX_PIXELS,
  OcrSession,
  releaseNativeMemory,
  type GrayImage,
} from './ocr.js';
import { withPageMarkers } from './paragraphs.js';

// utif2 is a CommonJS bundle whose exports Node's ESM loader cannot see by name.
const UTIF = createRequire(import.meta.url)('utif2') as typeof Utif;

/** Below this, text is likely small in pixels: tesseract wants glyphs ≳ 20 px tall, so 2× it. */
const UPSCALE_BELOW_PIXELS = 1_000_000;

interface Size {
  width: number;
  height: number;
}

/** One page of an image file; `draw` decodes it (only when its turn comes). */
interface Frame extends Size {
  draw(): Promise<Image | Canvas>;
}

/** Width and height from the header of a PNG, GIF, BMP, WebP or JPEG; null if unreadable. */
export function imageSize(b: Buffer): Size | null {
  const ascii = (start: number, end: number) => b.toString('latin1', start, end);
  if (b.length >= 24 && ascii(1, 4) === 'PNG') {
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  }
  if (b.length >= 10 && ascii(0, 3) === 'GIF') {
    return { width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
  }
  if (b.length >= 26 && ascii(0, 2) === 'BM') {
    if (b.readUInt32LE(14) === 12) return { width: b.readUInt16LE(18), height: b.readUInt16LE(20) };
    // Negative heights mean top-down rows.
    return { width: Math.abs(b.readInt32LE(18)), height: Math.abs(b.readInt32LE(22)) };
  }
  if (b.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') {
    const chunk = ascii(12, 16);
    if (chunk === 'VP8 ') {
      return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
    }
    if (chunk === 'VP8L') {
      const bits = b.readUInt32LE(21);
      return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8X')
      return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
    return null;
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    // Walk the JPEG segments to the frame header (SOF0–SOF15 except DHT, JPG, DAC).
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return null;
      const marker = b[i + 1] ?? 0;
      if (marker === 0xff) i += 1;
      else if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
      } else if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) i += 2;
      else i += 2 + b.readUInt16BE(i + 2);
    }
  }
  return null;
}

/**
 * Whether a PNG, JPEG or GIF lacks its end marker. Decoders show what arrived of a cut-off file
 * (the rest blank or grey) without complaint, so the user is told the text may be incomplete.
 */
function truncated(b: Buffer): boolean {
  const end = b.toString('latin1', Math.max(0, b.length - 12));
  if (b.toString('latin1', 1, 4) === 'PNG') return !end.includes('IEND');
  if (b[0] === 0xff && b[1] === 0xd8) return !end.includes('\xff\xd9');
  if (b.toString('latin1', 0, 3) === 'GIF') return !end.endsWith(';');
  return false;
}

function megapixels(pixels: number): string {
  return `${(pixels / 1e6).toFixed(1)} MP`;
}

function checkPixels(size: Size, limits: ConvertLimits, what: string): void {
  const pixels = size.width * size.height;
  if (pixels > limits.maxPixels) {
    throw new ConvertError(
      EXIT_CODES.TOO_LARGE,
      `${what} is ${size.width}×${size.height} pixels (${megapixels(pixels)}); the converter ` +
        `accepts at most ${megapixels(limits.maxPixels)} (APS_CONVERT_MAX_PIXELS)`,
    );
  }
}

/** Tags whose values point at more IFDs (SubIFDs, EXIF, GPS, …), which utif2 parses too. */
const SUB_IFD_TAGS = new Set([330, 34665, 34853, 50740, 61440]);
/** IFDs utif2 may parse per file, sub-IFDs included; real files have a handful per page. */
const MAX_IFD_VISITS = 10_000;

/**
 * The number of pages of a TIFF, checked before utif2 sees it: utif2 follows the page chain and
 * sub-IFD pointers without cycle checks, so a crafted file could loop forever or, with pointers
 * fanning out level after level, make it parse the same IFDs exponentially often.
 */
function tiffPageCount(b: Buffer, limits: ConvertLimits): number {
  const le = b.toString('latin1', 0, 2) === 'II';
  const u16 = (o: number) => (o + 2 <= b.length ? (le ? b.readUInt16LE(o) : b.readUInt16BE(o)) : 0);
  const u32 = (o: number) => (o + 4 <= b.length ? (le ? b.readUInt32LE(o) : b.readUInt32BE(o)) : 0);
  const memo = new Map<number, number>();
  const open = new Set<number>();
  // How many IFDs parsing the one at `offset` visits, counting repeats as utif2 does.
  const visits = (offset: number): number => {
    const known = memo.get(offset);
    if (known !== undefined) return known;
    if (open.has(offset)) return Infinity;
    open.add(offset);
    let total = 1;
    for (let e = 0; e < u16(offset) && total <= MAX_IFD_VISITS; e++) {
      const entry = offset + 2 + e * 12;
      if (!SUB_IFD_TAGS.has(u16(entry))) continue;
      const count = Math.min(u32(entry + 4), b.length);
      const list = count <= 1 ? entry + 8 : u32(entry + 8);
      for (let k = 0; k < count && total <= MAX_IFD_VISITS; k++) total += visits(u32(list + 4 * k));
    }
    open.delete(offset);
    memo.set(offset, total);
    return total;
  };
  const pages = new Set<number>();
  let total = 0;
  const malformed = () =>
    new ConvertError(EXIT_CODES.CORRUPT, 'the TIFF structure is malformed (looping IFD pointers)');
  for (let offset = u32(4); offset !== 0; offset = u32(offset + 2 + u16(offset) * 12)) {
    if (pages.has(offset)) throw malformed();
    pages.add(offset);
    if (pages.size > limits.maxPages) {
      throw new ConvertError(
        EXIT_CODES.TOO_LARGE,
        `the TIFF has more than ${limits.maxPages} pages (APS_CONVERT_MAX_PAGES)`,
      );
    }
    total += visits(offset);
    if (total > MAX_IFD_VISITS) throw malformed();
  }
  return pages.size;
}

function tiffFrames(bytes: Buffer, limits: ConvertLimits): Frame[] {
  const count = tiffPageCount(bytes, limits);
  const ifds = UTIF.decode(bytes).slice(0, count);
  if (ifds.length === 0) throw new ConvertError(EXIT_CODES.CORRUPT, 'the TIFF has no pages');
  return ifds.map((ifd, i) => {
    const tag = (t: string) => (ifd[t] as number[] | undefined)?.[0] ?? 0;
    const size = { width: tag('t256'), height: tag('t257') };
    if (size.width === 0 || size.height === 0) {
      throw new ConvertError(EXIT_CODES.CORRUPT, `page ${i + 1} of the TIFF has no image size`);
    }
    checkPixels(size, limits, `page ${i + 1} of the TIFF`);
    return {
      ...size,
      async draw() {
        UTIF.decodeImage(bytes, ifd);
        const rgba = UTIF.toRGBA8(ifd);
        const canvas = createCanvas(size.width, size.height);
        const context = canvas.getContext('2d');
        const data = context.createImageData(size.width, size.height);
        data.data.set(rgba);
        context.putImageData(data, 0, 0);
        ifd.data = new Uint8Array(0); // the decoded strips are copied: let them go now
        return canvas;
      },
    };
  });
}

function singleFrame(bytes: Buffer, limits: ConvertLimits): Frame {
  const size = imageSize(bytes);
  if (size === null || size.width === 0 || size.height === 0) {
    throw new ConvertError(EXIT_CODES.CORRUPT, 'the image header cannot be read');
  }
  checkPixels(size, limits, 'the image');
  return {
    ...size,
    // loadImage rejects on undecodable data (an `Image` with `src` set would just stay empty).
    draw: () => loadImage(bytes),
  };
}

/**
 * Draws a frame on white paper at the scale OCR works best at and returns its grey pixels.
 * Decoding happens here, so a decoder failure is the file's fault (CORRUPT).
 */
async function prepare(frame: Frame, page: number, warnings: string[]): Promise<GrayImage> {
  const pixels = frame.width * frame.height;
  let scale = 1;
  if (pixels > OCR_MAX_PIXELS) scale = Math.sqrt(OCR_MAX_PIXELS / pixels);
  else if (pixels < UPSCALE_BELOW_PIXELS) scale = 2;
  const width = Math.max(1, Math.round(frame.width * scale));
  const height = Math.max(1, Math.round(frame.height * scale));
  if (scale < 1) {
    warnings.push(
      `page ${page} (${megapixels(pixels)}) was downscaled to ${width}×${height} for OCR`,
    );
  }
  let source: Image | Canvas;
  try {
    source = await frame.draw();
    if (source.width !== frame.width || source.height !== frame.height) {
      throw new Error(
        `decoded ${source.width}×${source.height}, header ${frame.width}×${frame.height}`,
      );
    }
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConvertError(EXIT_CODES.CORRUPT, `the image cannot be decoded (${reason})`);
  }
  const canvas = createCanvas(width, height);
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, width, height);
  context.drawImage(source, 0, 0, width, height);
  const image = grayFromContext(context, width, height);
  await releaseNativeMemory();
  return image;
}

/** An image has no text layer: every command but `text` OCRs it. */
export const convertImage: BinaryConverter = async (path, options) => {
  if (options.command === 'text') {
    throw new ConvertError(
      EXIT_CODES.NOTHING_EXTRACTABLE,
      'an image has no text layer; convert it with --command auto or ocr to OCR it',
    );
  }
  const timings: Record<string, number> = {};
  const warnings: string[] = [];
  let started = performance.now();
  const bytes = await readFile(path);
  const tiff = /^(?:II\*\0|MM\0\*)/.test(bytes.toString('latin1', 0, 4));
  let frames: Frame[];
  try {
    frames = tiff ? tiffFrames(bytes, options.limits) : [singleFrame(bytes, options.limits)];
  } catch (error) {
    if (error instanceof ConvertError) throw error;
    throw new ConvertError(EXIT_CODES.CORRUPT, 'the TIFF structure cannot be read');
  }
  addTime(timings, 'read', started);
  if (!tiff && truncated(bytes)) {
    warnings.push("the image file is truncated: only the part that arrived was OCR'd");
  }

  const ocr = new OcrSession(options.lang, timings);
  const parts: string[] = [];
  let found = false;
  try {
    for (const [index, frame] of frames.entries()) {
      const page = index + 1;
      started = performance.now();
      const image = await prepare(frame, page, warnings);
      addTime(timings, 'decode', started);
      const markdown = isBlank(image) ? '' : await ocr.recognize(page, image);
      found ||= markdown !== '';
      parts.push(markdown);
      options.onProgress?.(page, frames.length);
    }
  } finally {
    await ocr.close();
  }
  if (!found) {
    throw new ConvertError(EXIT_CODES.NOTHING_EXTRACTABLE, 'OCR found no text in the image');
  }
  return {
    markdown: withPageMarkers(parts),
    pages: frames.length,
    ocrPages: ocr.pages,
    ocrMeanConfidence: ocr.meanConfidence(),
    warnings: [...warnings, ...ocr.warnings()],
    timings,
  };
};
