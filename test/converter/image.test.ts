/** `aps-convert` on images (OCR), as a real process, on images rendered at test time. */
import type { Canvas } from '@napi-rs/canvas';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/converter/contract.js';
import { imageSize } from '../../src/converter/formats/image.js';
import { cer, convert } from './fixtures/documents.js';
import {
  encodeBmp,
  encodeTiff,
  hostileTiff,
  pngBomb,
  renderText,
  SAMPLE_LINES,
  toGray,
} from './fixtures/images.js';
import { ensureConverterBuilt } from './helpers.js';

beforeAll(() => {
  ensureConverterBuilt();
}, 180_000);

const SAMPLE = SAMPLE_LINES.join(' ');

/** Every format the converter OCRs, encoded from one rendering (GIF: canvas's own encoder). */
const ENCODERS: [name: string, format: string, encode: (c: Canvas) => Buffer][] = [
  ['scan.png', 'png', (c) => c.encodeSync('png')],
  ['scan.jpg', 'jpg', (c) => c.encodeSync('jpeg', 90)],
  ['scan.webp', 'webp', (c) => c.encodeSync('webp', 90)],
  ['scan.bmp', 'bmp', encodeBmp],
  ['scan.gif', 'gif', (c) => Buffer.from(c.encodeSync('gif'))],
];

const pageText = (markdown: string | null) =>
  (markdown ?? '').replace(/^<!-- page: \d+ -->$/gm, '').trim();

describe('aps-convert on images', () => {
  it('OCRs PNG, JPEG, WebP, BMP and GIF with a character error rate ≤ 2 %', async () => {
    const canvas = renderText(SAMPLE_LINES);
    const runs = await Promise.all(
      ENCODERS.map(([name, , encode]) => convert(name, encode(canvas))),
    );
    runs.forEach((run, i) => {
      const [name, format] = ENCODERS[i]!;
      expect(run.code, name).toBe(0);
      expect(run.stderr, name).toBe('');
      expect(run.markdown?.startsWith('<!-- page: 1 -->\n\n'), name).toBe(true);
      const error = cer(SAMPLE, pageText(run.markdown));
      console.log(`OCR character error rate, ${format}: ${(error * 100).toFixed(2)} %`);
      expect(error, name).toBeLessThanOrEqual(0.02);
      expect(run.meta, name).toMatchObject({ format, pages: 1, ocrPages: [1], warnings: [] });
      expect(run.meta?.ocrMeanConfidence, name).toBeGreaterThan(80);
    });
  }, 60_000);

  it('gives each frame of a multi-page TIFF its own page', async () => {
    const frames = [SAMPLE_LINES.slice(0, 2), ['Second frame of the TIFF file.']];
    const tiff = encodeTiff(frames.map((lines) => toGray(renderText(lines))));
    const run = await convert('pages.tif', tiff);
    expect(run.code).toBe(0);
    const parts = (run.markdown ?? '').split(/^<!-- page: (\d+) -->$/m);
    expect(parts.filter((_, i) => i % 2 === 1)).toEqual(['1', '2']);
    expect(cer(frames[0]!.join(' '), parts[2]!)).toBeLessThanOrEqual(0.02);
    expect(parts[4]?.trim()).toBe('Second frame of the TIFF file.');
    expect(run.meta).toMatchObject({ format: 'tif', pages: 2, ocrPages: [1, 2] });
  }, 30_000);

  it('refuses an image whose header claims more than APS_CONVERT_MAX_PIXELS, undecoded', async () => {
    const bomb = pngBomb(100_000, 100_000); // 10 gigapixels in 70 bytes
    expect(bomb.length).toBeLessThan(200);
    const run = await convert('bomb.png', bomb);
    expect(run.code).toBe(EXIT_CODES.TOO_LARGE);
    expect(run.stderr).toBe(
      'aps-convert: file too large: the image is 100000×100000 pixels (10000.0 MP); the ' +
        'converter accepts at most 40.0 MP (APS_CONVERT_MAX_PIXELS)\n',
    );
    const small = await convert('scan.png', renderText(['x']).encodeSync('png'), [], {
      APS_CONVERT_MAX_PIXELS: '1000',
    });
    expect(small.code).toBe(EXIT_CODES.TOO_LARGE);
    expect(small.stderr).toContain('accepts at most 0.0 MP');
  });

  it('exits CORRUPT for undecodable images and hostile TIFFs, warns about a truncated one', async () => {
    const png = renderText(SAMPLE_LINES).encodeSync('png');
    const garbage = Buffer.concat([png.subarray(0, 33), Buffer.alloc(2000, 7)]);
    const corrupt = await convert('broken.png', garbage);
    expect(corrupt.code).toBe(EXIT_CODES.CORRUPT);
    expect(corrupt.stderr).toMatch(/^aps-convert: corrupt file: the image cannot be decoded/);
    const tiff = await convert('broken.tif', Buffer.from('II*\0\x08\0\0\0\xff\xff', 'latin1'));
    expect(tiff.code).toBe(EXIT_CODES.CORRUPT);
    for (const kind of ['loop', 'fanOut'] as const) {
      const hostile = await convert(`${kind}.tif`, hostileTiff(kind));
      expect(hostile.code, kind).toBe(EXIT_CODES.CORRUPT);
      expect(hostile.stderr, kind).toContain('the TIFF structure is malformed');
    }
    // Cut off mid-data: decoders show what arrived, so it converts, with a warning.
    const cut = await convert('cut.png', png.subarray(0, Math.round(png.length * 0.6)));
    expect(cut.code).toBe(0);
    expect(cut.meta?.warnings).toEqual([
      "the image file is truncated: only the part that arrived was OCR'd",
    ]);
    expect(pageText(cut.markdown)).toContain(SAMPLE_LINES[0]);
  }, 30_000);

  it('text: an image has no text layer, so nothing to extract', async () => {
    const run = await convert('scan.png', renderText(['x']).encodeSync('png'), [
      '--command',
      'text',
    ]);
    expect(run.code).toBe(EXIT_CODES.NOTHING_EXTRACTABLE);
    expect(run.stderr).toContain('--command auto or ocr');
  });

  it('names a --lang whose traineddata package is not installed', async () => {
    const run = await convert('scan.png', renderText(['x']).encodeSync('png'), [
      '--lang',
      'eng+xyz',
    ]);
    expect(run.code).toBe(EXIT_CODES.USAGE);
    expect(run.stderr).toMatch(
      /^aps-convert: usage: OCR language xyz is not installed \(npm package @tesseract\.js-data\/xyz\); installed: .*eng/,
    );
  });
});

describe('imageSize', () => {
  it('reads dimensions from the headers of every canvas-decoded format', () => {
    const canvas = renderText(['size'], { width: 321 });
    for (const [name, , encode] of ENCODERS) {
      expect(imageSize(encode(canvas)), name).toEqual({ width: 321, height: canvas.height });
    }
    expect(imageSize(Buffer.from('not an image'))).toBeNull();
  });
});
