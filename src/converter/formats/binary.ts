/**
 * The registry of binary formats: file-type's extension for a signature (`pdf`, `png`, `jpg`,
 * `docx`, …) → the BinaryConverter for it. Converters are imported on first use only: pdf.js,
 * canvas and tesseract.js take a while to load, and a text file should not pay for them.
 *
 * To add a format: one entry below (keyed by the `ext` file-type reports), plus its human name in
 * detect.ts's DESCRIPTIONS if it has none yet. Detection asks `isBinaryFormat`, so nothing else
 * needs to change.
 */
import type { BinaryConverter } from './binary-types.js';

type Loader = () => Promise<BinaryConverter>;

const pdf: Loader = async () => (await import('./pdf.js')).convertPdf;
const image: Loader = async () => (await import('./image.js')).convertImage;
const office =
  (name: 'convertDocx' | 'convertOdt' | 'convertPptx' | 'convertXlsx' | 'convertOds'): Loader =>
  async () =>
    (await import('./office.js'))[name];

const LOADERS: Readonly<Record<string, Loader>> = {
  pdf,
  png: image,
  apng: image, // an animated PNG: its first frame, like any viewer without animation
  jpg: image,
  webp: image,
  bmp: image,
  gif: image,
  tif: image,
  docx: office('convertDocx'),
  odt: office('convertOdt'),
  pptx: office('convertPptx'),
  xlsx: office('convertXlsx'),
  ods: office('convertOds'),
};

/** The binary formats with a converter (file-type `ext`s), in registry order. */
export const BINARY_FORMATS: readonly string[] = Object.keys(LOADERS);

/** Whether content with this signature (file-type `ext`) has a converter. */
export function isBinaryFormat(format: string): boolean {
  return Object.hasOwn(LOADERS, format);
}

const loaded = new Set<string>();

/** The binary formats whose converter this process has loaded (the worker reports them). */
export function loadedBinaryFormats(): string[] {
  return [...loaded];
}

/** The converter for `format`; throws for a format `isBinaryFormat` rejects (a caller bug). */
export async function loadBinaryConverter(format: string): Promise<BinaryConverter> {
  const loader = Object.hasOwn(LOADERS, format) ? LOADERS[format] : undefined;
  if (loader === undefined) throw new Error(`no converter registered for ${format}`);
  const converter = await loader();
  loaded.add(format);
  return converter;
}
