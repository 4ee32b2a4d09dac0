/**
 * The document's type, from its content first (magic bytes) and its name second; the client's
 * Content-Type header is never trusted.
 */
import { fileTypeFromBuffer } from 'file-type';

const TEXT = { fileType: 'txt', mimeType: 'text/plain' };
const HTML = { fileType: 'html', mimeType: 'text/html' };
const JSON_TYPE = { fileType: 'json', mimeType: 'application/json' };

const BY_EXTENSION: Record<string, { fileType: string; mimeType: string }> = {
  txt: TEXT,
  text: TEXT,
  log: TEXT,
  md: { fileType: 'md', mimeType: 'text/markdown' },
  markdown: { fileType: 'md', mimeType: 'text/markdown' },
  html: HTML,
  htm: HTML,
  csv: { fileType: 'csv', mimeType: 'text/csv' },
  tsv: { fileType: 'tsv', mimeType: 'text/tab-separated-values' },
  json: JSON_TYPE,
  jsonl: { fileType: 'jsonl', mimeType: 'application/x-ndjson' },
  ndjson: { fileType: 'jsonl', mimeType: 'application/x-ndjson' },
  tab: { fileType: 'tsv', mimeType: 'text/tab-separated-values' },
  xhtml: HTML,
};

/** Zip-based office formats are told apart by their extension (file-type sees a zip or guesses). */
const OFFICE = new Set(['docx', 'xlsx', 'pptx', 'odt', 'ods', 'odp']);

function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
}

/** Bytes that never occur in text: NUL and most C0 controls. */
function looksBinary(head: Uint8Array): boolean {
  let suspicious = 0;
  for (const byte of head) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32)) suspicious += 1;
  }
  return head.length > 0 && suspicious / head.length > 0.1;
}

export async function detectFileType(
  head: Uint8Array,
  name: string,
): Promise<{ fileType: string; mimeType: string }> {
  const ext = extensionOf(name);
  const sniffed = await fileTypeFromBuffer(head);
  if (sniffed !== undefined) {
    if ((sniffed.ext === 'zip' || OFFICE.has(sniffed.ext)) && OFFICE.has(ext)) {
      return { fileType: ext, mimeType: sniffed.mime };
    }
    return { fileType: sniffed.ext, mimeType: sniffed.mime };
  }
  if (looksBinary(head)) return { fileType: 'bin', mimeType: 'application/octet-stream' };
  const known = BY_EXTENSION[ext];
  if (known !== undefined) return known;
  const text = new TextDecoder().decode(head.subarray(0, 512)).trimStart().toLowerCase();
  if (text.startsWith('<!doctype html') || text.startsWith('<html')) return HTML;
  if (text.startsWith('{') || text.startsWith('[')) return JSON_TYPE;
  return TEXT;
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
