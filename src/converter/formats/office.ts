/**
 * Office documents → markdown: DOCX and ODT (headings, lists, GFM tables, footnotes), PPTX (a
 * page-marked section per slide with its notes), XLSX and ODS (a section per sheet, GFM tables
 * split by rows). Every format is a zip; it is opened through the guarded reader in
 * `office/zip.ts`, so the entry, size and ratio limits hold before any library parses a part.
 */
import { EXIT_CODES } from '../contract.js';
import type { BinaryConversion, BinaryConverter, BinaryConvertOptions } from './binary-types.js';
import { ConvertError } from './convert-error.js';
import { docxToMarkdown } from './office/docx.js';
import { escapePageMarkers } from './office/markup.js';
import { odsToMarkdown } from './office/ods.js';
import { odtToMarkdown } from './office/odf.js';
import { pptxToMarkdown } from './office/pptx.js';
import { xlsxToMarkdown } from './office/xlsx.js';
import { ZipArchive } from './office/zip.js';

interface OfficeResult {
  markdown: string;
  warnings: string[];
  pages?: number;
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split('\n')[0] ?? message).slice(0, 300);
}

/**
 * Opens the archive, runs `convert` and closes the archive again whatever happens. A failure that
 * is not a ConvertError comes from a parser meeting something it cannot read, so it is CORRUPT.
 */
async function convertOffice(
  path: string,
  options: BinaryConvertOptions,
  what: string,
  convert: (archive: ZipArchive) => Promise<OfficeResult>,
): Promise<BinaryConversion> {
  const archive = await ZipArchive.open(path, options.limits, what);
  try {
    let result: OfficeResult;
    try {
      result = await convert(archive);
    } catch (error) {
      if (error instanceof ConvertError) throw error;
      // mammoth and the XML walkers recurse per element: only absurd nesting exhausts the stack.
      if (error instanceof RangeError && /call stack/i.test(error.message)) {
        throw new ConvertError(
          EXIT_CODES.CORRUPT,
          `the ${what} file nests elements too deeply to be read`,
        );
      }
      throw new ConvertError(
        EXIT_CODES.CORRUPT,
        `the ${what} file could not be read (${firstLine(error)})`,
      );
    }
    // PPTX writes its own markers; elsewhere a marker-like line can only be document text.
    const markdown = (
      result.pages === undefined ? escapePageMarkers(result.markdown) : result.markdown
    ).trim();
    if (markdown === '') {
      throw new ConvertError(EXIT_CODES.NOTHING_EXTRACTABLE, `the ${what} file contains no text`);
    }
    return {
      markdown: `${markdown}\n`,
      pages: result.pages ?? null,
      ocrPages: [],
      ocrMeanConfidence: null,
      warnings: result.warnings,
      timings: { inflate: archive.inflateTime },
    };
  } finally {
    archive.close();
  }
}

export const convertDocx: BinaryConverter = (path, options) =>
  convertOffice(path, options, 'DOCX', docxToMarkdown);

export const convertOdt: BinaryConverter = (path, options) =>
  convertOffice(path, options, 'ODT', odtToMarkdown);

export const convertPptx: BinaryConverter = (path, options) =>
  convertOffice(path, options, 'PPTX', (archive) =>
    pptxToMarkdown(archive, options.limits.maxPages),
  );

export const convertXlsx: BinaryConverter = (path, options) =>
  convertOffice(path, options, 'XLSX', (archive) =>
    xlsxToMarkdown(archive, options.limits.maxCells),
  );

export const convertOds: BinaryConverter = (path, options) =>
  convertOffice(path, options, 'ODS', (archive) => odsToMarkdown(archive, options.limits.maxCells));
