/**
 * The document's type, from its content first (magic bytes) and its name second; the client's
 * Content-Type header is never trusted. The decision is the converter's own (`detectFormat`), so
 * the stored file's extension always leads the converter to the same format.
 */
import { fileTypeFromBuffer } from 'file-type';
import { detectFormat, type TextFormat } from '../../converter/formats/detect.js';

const TEXT_TYPES: Record<TextFormat, { fileType: string; mimeType: string }> = {
  text: { fileType: 'txt', mimeType: 'text/plain' },
  markdown: { fileType: 'md', mimeType: 'text/markdown' },
  html: { fileType: 'html', mimeType: 'text/html' },
  csv: { fileType: 'csv', mimeType: 'text/csv' },
  tsv: { fileType: 'tsv', mimeType: 'text/tab-separated-values' },
  json: { fileType: 'json', mimeType: 'application/json' },
  jsonl: { fileType: 'jsonl', mimeType: 'application/x-ndjson' },
};

export async function detectFileType(
  head: Uint8Array,
  name: string,
): Promise<{ fileType: string; mimeType: string }> {
  const sniffed = await fileTypeFromBuffer(head);
  const detection = detectFormat(
    name,
    head,
    sniffed === undefined ? undefined : { ext: sniffed.ext, mime: sniffed.mime },
  );
  if (detection.kind === 'text') return TEXT_TYPES[detection.format];
  // Bytes that are not text and match no known signature.
  if (detection.format === 'binary') return { fileType: 'bin', mimeType: detection.mime };
  return { fileType: detection.format, mimeType: detection.mime };
}

/**
 * A display name safe to store and show: the last path segment of what the client sent, without
 * control characters, at most 200 characters. It never becomes part of a storage path.
 */
export function sanitizeFileName(raw: string | undefined): string {
  const last = (raw ?? '').split(/[\\/]/).pop() ?? '';
  const printable = Array.from(last)
    .filter((ch) => ch >= ' ' && ch !== '\u007f')
    .join('');
  const clean = printable.replace(/^\.+/, '').trim();
  return (clean === '' ? 'document' : clean).slice(0, 200);
}

/** A short, safe extension for the stored file name. */
export function safeExtension(fileType: string): string {
  return /^[a-z0-9]{1,10}$/.test(fileType) ? fileType : 'bin';
}
