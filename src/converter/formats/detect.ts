/**
 * Format detection from content first, name second — the client's name and MIME type are never
 * trusted on their own.
 *
 * 1. A binary signature (file-type: PDF, DOCX, PNG, ZIP, …) decides, whatever the name says: a
 *    PNG renamed `notes.txt` is a PNG. Formats with a converter in the binary registry (binary.ts:
 *    PDF, images, …) are `binary`; the others are unsupported. Two exceptions, both because
 *    file-type also matches short magic numbers: signatures of text formats (XML, vCard,
 *    iCalendar, WebVTT) and signatures on content that is plainly text (`BM`, `MZ`, `ID3` starting
 *    a sentence — real BMPs, EXEs and MP3s have NUL bytes in their headers) fall through to the
 *    text rules. Text-based document formats (PDF, RTF, PostScript, PGP armour) keep their
 *    signature even when their bytes are all ASCII.
 * 2. Bytes that are not text (NULs, many control bytes) are unsupported "binary data" — not
 *    "corrupt": the converter cannot tell which format they were meant to be.
 * 3. Text: the extension picks markdown, CSV, TSV, JSON, JSON Lines or HTML. Any other name
 *    (`.txt`, `.log`, none, unknown) is plain text — unless the content starts like an HTML
 *    document (`<!doctype html`, `<html`): then it is HTML, as saved web pages often get renamed.
 *    Structure-promising extensions (`.md`, `.csv`, `.json`) are not overridden by content sniffing.
 */
import { extname } from 'node:path';
import { fileTypeFromBuffer, fileTypeFromFile } from 'file-type';
import { BINARY_FORMATS, isBinaryFormat } from './binary.js';
import { decodeText, looksBinary } from './text.js';

export type TextFormat = 'text' | 'markdown' | 'html' | 'csv' | 'tsv' | 'json' | 'jsonl';

export type Detection =
  | { kind: 'text'; format: TextFormat }
  /** A binary format with a converter; `format` is its key in the binary registry. */
  | { kind: 'binary'; format: string; mime: string; description: string }
  | { kind: 'unsupported'; format: string; mime: string; description: string };

/** What file-type reports for the content (or undefined: no known binary signature). */
interface Signature {
  ext: string;
  mime: string;
}

/** Bytes of the file start that the binary and HTML sniffs look at. */
export const SNIFF_BYTES = 64 * 1024;

/** Text formats file-type recognises by signature; they are handled by the text rules. */
const TEXT_SIGNATURES = new Set(['xml', 'vcf', 'ics', 'vtt']);
/** Formats that can be pure ASCII but are not prose: converting them as text would index noise. */
const TEXT_BASED_DOCUMENTS = new Set(['pdf', 'rtf', 'ps', 'eps', 'pgp']);

const EXTENSIONS: Record<string, TextFormat> = {
  '.txt': 'text',
  '.text': 'text',
  '.log': 'text',
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.mdown': 'markdown',
  '.mkd': 'markdown',
  '.html': 'html',
  '.htm': 'html',
  '.xhtml': 'html',
  '.csv': 'csv',
  '.tsv': 'tsv',
  '.tab': 'tsv',
  '.json': 'json',
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
};

/** Human names of the text formats. */
const TEXT_FORMAT_NAMES: Record<TextFormat, string> = {
  text: 'plain text',
  markdown: 'Markdown',
  html: 'HTML',
  csv: 'CSV',
  tsv: 'TSV',
  json: 'JSON',
  jsonl: 'JSON Lines',
};

/** Human names for the binary formats users most often upload. */
const DESCRIPTIONS: Record<string, string> = {
  pdf: 'PDF document',
  docx: 'Word document',
  docm: 'Word document',
  xlsx: 'Excel workbook',
  xlsm: 'Excel workbook',
  pptx: 'PowerPoint presentation',
  odt: 'OpenDocument text',
  ods: 'OpenDocument spreadsheet',
  odp: 'OpenDocument presentation',
  cfb: 'legacy Microsoft Office document',
  rtf: 'RTF document',
  ps: 'PostScript document',
  eps: 'Encapsulated PostScript',
  pgp: 'PGP-encrypted message',
  epub: 'EPUB e-book',
  png: 'PNG image',
  jpg: 'JPEG image',
  gif: 'GIF image',
  webp: 'WebP image',
  tif: 'TIFF image',
  bmp: 'BMP image',
  apng: 'animated PNG image',
  heic: 'HEIC image',
  zip: 'ZIP archive',
  gz: 'gzip archive',
  '7z': '7-Zip archive',
  rar: 'RAR archive',
  tar: 'tar archive',
  mp3: 'MP3 audio',
  mp4: 'MP4 video',
  exe: 'Windows executable',
  elf: 'ELF executable',
  sqlite: 'SQLite database',
};

const OFFICE_EXTENSIONS = new Set(['docx', 'odt', 'pptx', 'xlsx', 'ods']);

export const BINARY_DATA: Detection = {
  kind: 'unsupported',
  format: 'binary',
  mime: 'application/octet-stream',
  description: 'binary data, not text',
};

/** Classifies a file from its name, the start of its content and its binary signature. */
export function detectFormat(name: string, head: Uint8Array, signature?: Signature): Detection {
  const binary = looksBinary(head);
  const trusted =
    signature !== undefined &&
    !TEXT_SIGNATURES.has(signature.ext) &&
    (binary || TEXT_BASED_DOCUMENTS.has(signature.ext));
  if (trusted) {
    // Office documents are zip files; file-type names them only when their parts are in the
    // order Office writes. A zip with an office extension goes to that converter, which checks it.
    const officeExt = extname(name).toLowerCase().slice(1);
    const ext =
      signature.ext === 'zip' && OFFICE_EXTENSIONS.has(officeExt) ? officeExt : signature.ext;
    return {
      kind: isBinaryFormat(ext) ? 'binary' : 'unsupported',
      format: ext,
      mime: signature.mime,
      description: DESCRIPTIONS[ext] ?? `${ext.toUpperCase()} file`,
    };
  }
  if (binary) return BINARY_DATA;
  const byName = EXTENSIONS[extname(name).toLowerCase()];
  if (byName !== undefined && byName !== 'text') return { kind: 'text', format: byName };
  const html = looksLikeHtml(decodeText(head, { htmlCharset: true }).text);
  return { kind: 'text', format: html ? 'html' : 'text' };
}

/**
 * Every format the converter converts, named for people: the text formats, then the binary
 * registry's (binary.ts), e.g. `Word document (DOCX)`. The server lists them in the `auto`
 * command's description.
 */
export function convertibleFormats(): string[] {
  const binary = BINARY_FORMATS.map((ext) => {
    const name = DESCRIPTIONS[ext] ?? `${ext.toUpperCase()} file`;
    return name.toLowerCase().startsWith(ext) ? name : `${name} (${ext.toUpperCase()})`;
  });
  return [...Object.values(TEXT_FORMAT_NAMES), ...binary];
}

/** The content's binary signature, read from the file itself (only its first bytes are read). */
export async function sniffSignature(path: string): Promise<Signature | undefined> {
  const result = await fileTypeFromFile(path);
  return result === undefined ? undefined : { ext: result.ext, mime: result.mime };
}

/**
 * The signature of a file whose first bytes (`head`, SNIFF_BYTES at most) are all it takes: a
 * text-looking head, where only the leading magic of the text-based documents (PDF, RTF,
 * PostScript, PGP) decides anything. A binary head needs `sniffSignature`: a zip's parts may lie
 * further in.
 */
export async function sniffHead(head: Uint8Array): Promise<Signature | undefined> {
  const result = await fileTypeFromBuffer(head);
  return result === undefined ? undefined : { ext: result.ext, mime: result.mime };
}

/** The line the CLI prints for an unsupported file, e.g. `image/png (PNG image)`. */
export function describeUnsupported(detection: Detection & { kind: 'unsupported' }): string {
  return `${detection.mime} (${detection.description})`;
}

/** Whether text starts like an HTML document (after a BOM, whitespace, comments, `<?xml …?>`). */
export function looksLikeHtml(text: string): boolean {
  const start = text
    .slice(0, 4096)
    .replace(/^\uFEFF/, '')
    .replace(/^(?:\s+|<!--[\s\S]*?-->|<\?xml[^>]*>)*/i, '');
  return /^<!doctype\s+html[\s>]/i.test(start) || /^<html[\s>]/i.test(start);
}
