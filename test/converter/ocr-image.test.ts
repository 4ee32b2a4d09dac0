/**
 * The grey images handed to tesseract (formats/ocr.ts): PGM without a copy, cropped to the ink;
 * canvas pixel reads freed as they go.
 */
import { createCanvas } from '@napi-rs/canvas';
import { describe, expect, it } from 'vitest';
import {
  cropToInk,
  grayImage,
  grayRows,
  releaseNativeMemory,
  type GrayImage,
} from '../../src/converter/formats/ocr.js';

/** A white page with dark rectangles [x, y, w, h]. */
function page(width: number, height: number, boxes: number[][]): GrayImage {
  const image = grayImage(width, height);
  for (const [x = 0, y = 0, w = 0, h = 0] of boxes) {
    for (let row = y; row < y + h; row++)
      image.pixels.fill(0, row * width + x, row * width + x + w);
  }
  return image;
}

describe('grayImage', () => {
  it('is a white PGM whose pixels are the tail of the file', () => {
    const image = grayImage(3, 2);
    const header = 'P5\n3 2\n255\n';
    expect(Buffer.from(image.pgm!.subarray(0, header.length)).toString('latin1')).toBe(header);
    expect([...image.pixels]).toEqual([255, 255, 255, 255, 255, 255]);
    image.pixels[0] = 7;
    expect(image.pgm![header.length]).toBe(7);
  });
});

describe('cropToInk', () => {
  it('keeps the printed area plus a 24-pixel margin, pixels unchanged', () => {
    const image = page(1000, 1400, [
      [200, 300, 100, 50],
      [600, 900, 10, 10],
    ]);
    const cropped = cropToInk(image);
    expect([cropped.width, cropped.height]).toEqual([410 + 48, 610 + 48]);
    // The first box's top-left corner, 24 pixels in from the crop's corner.
    expect(cropped.pixels[24 * cropped.width + 23]).toBe(255);
    expect(cropped.pixels[24 * cropped.width + 24]).toBe(0);
    const dark = (img: GrayImage) => img.pixels.reduce((n, v) => n + (v < 128 ? 1 : 0), 0);
    expect(dark(cropped)).toBe(dark(image));
    expect(cropped.pgm!.length).toBe('P5\n458 658\n255\n'.length + 458 * 658);
  });

  it('returns the page itself when it is blank or when cropping would save little', () => {
    const blank = page(300, 400, []);
    expect(cropToInk(blank)).toBe(blank);
    const full = page(300, 400, [
      [2, 2, 5, 5],
      [290, 390, 5, 5],
    ]);
    expect(cropToInk(full)).toBe(full);
  });
});

describe('releaseNativeMemory', () => {
  it('frees the native buffers of canvas pixel reads at once (they would pile up otherwise)', async () => {
    // 40 bands of 1000×1000 RGBA read (160 MB): without the release each read's 4 MB stays.
    const canvas = createCanvas(1000, 1000);
    const context = canvas.getContext('2d');
    const band = new Uint8Array(1000 * 1000);
    await releaseNativeMemory();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 40; i++) {
      grayRows(context, 1000, 1000, band, 0);
      await releaseNativeMemory();
    }
    expect(process.memoryUsage().rss - before).toBeLessThan(60 * 1024 * 1024);
  });
});
