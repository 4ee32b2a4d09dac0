/**
 * The contract of converters for binary formats (PDF, images, office documents). Each reads the
 * file itself (page by page where it can) and stays within `limits`; expected failures are thrown
 * as ConvertError with the matching exit code (ENCRYPTED, CORRUPT, TOO_LARGE, NOTHING_EXTRACTABLE).
 */

export interface ConvertLimits {
  /** Pages (PDF pages, TIFF frames, slides) converted at most; more → TOO_LARGE. */
  maxPages: number;
  /** Pixels of one rendered page or decoded image at most; larger images are downscaled or refused. */
  maxPixels: number;
  /** Total uncompressed bytes read from a zip container (DOCX, XLSX, PPTX, ODT, ODS) at most. */
  maxUncompressedBytes: number;
  /** Entries of a zip container at most. */
  maxZipEntries: number;
  /** Spreadsheet cells converted at most. */
  maxCells: number;
}

export const DEFAULT_LIMITS: ConvertLimits = {
  maxPages: 2000,
  maxPixels: 40_000_000,
  maxUncompressedBytes: 512 * 1024 * 1024,
  maxZipEntries: 10_000,
  maxCells: 2_000_000,
};

export interface BinaryConvertOptions {
  /** `auto`: OCR only pages without usable text; `text`: never OCR; `ocr`: OCR every page. */
  command: 'auto' | 'text' | 'ocr';
  /** Tesseract language(s), e.g. `eng` or `eng+deu`. */
  lang: string;
  limits: ConvertLimits;
  /** Called after each page (PDF page, image frame) with pages done and the page count. */
  onProgress?: (done: number, total: number) => void;
}

export interface BinaryConversion {
  /** Markdown; paged formats put `<!-- page: N -->` (see contract.pageMarker) before each page. */
  markdown: string;
  pages: number | null;
  /** 1-based numbers of the pages that were OCR'd. */
  ocrPages: number[];
  /** Mean OCR confidence (0..100) over the OCR'd pages, null when nothing was OCR'd. */
  ocrMeanConfidence: number | null;
  warnings: string[];
  /** Extra stage timings in ms (e.g. `render`, `ocr`). */
  timings: Record<string, number>;
}

export type BinaryConverter = (
  path: string,
  options: BinaryConvertOptions,
) => Promise<BinaryConversion>;
