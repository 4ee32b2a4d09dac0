/**
 * Bytes → text, and text → clean text. Every text format goes through here first, so encoding
 * problems are handled (and warned about) once.
 */

interface DecodedText {
  text: string;
  /** The encoding actually used, e.g. `utf-8`, `utf-16le`, `windows-1252`. */
  encoding: string;
  warnings: string[];
}

interface DecodeOptions {
  /** Honour a `<meta charset>` declaration near the start (HTML files are often not UTF-8). */
  htmlCharset?: boolean;
}

const REPLACEMENT = '\uFFFD';

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

/** The charset a `<meta>` tag in the first KiB declares, if the platform can decode it. */
function declaredHtmlCharset(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.subarray(0, 1024)).toString('latin1');
  const match = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head);
  const label = match?.[1]?.toLowerCase();
  if (label === undefined) return null;
  try {
    return new TextDecoder(label).encoding;
  } catch {
    return null; // an unknown label: fall back to UTF-8 as browsers do
  }
}

/**
 * Decodes bytes as text: a BOM wins (UTF-8 or UTF-16), then an HTML charset declaration if asked
 * for, else UTF-8. Invalid UTF-8 is not fatal — it is replaced with U+FFFD and reported, because a
 * mostly readable document is worth indexing.
 */
export function decodeText(bytes: Uint8Array, options: DecodeOptions = {}): DecodedText {
  if (startsWith(bytes, [0xff, 0xfe]) || startsWith(bytes, [0xfe, 0xff])) {
    const encoding = bytes[0] === 0xff ? 'utf-16le' : 'utf-16be';
    return { text: new TextDecoder(encoding).decode(bytes), encoding, warnings: [] };
  }
  const hasUtf8Bom = startsWith(bytes, [0xef, 0xbb, 0xbf]);
  const declared = !hasUtf8Bom && options.htmlCharset ? declaredHtmlCharset(bytes) : null;
  if (declared !== null && declared !== 'utf-8') {
    return { text: new TextDecoder(declared).decode(bytes), encoding: declared, warnings: [] };
  }
  try {
    return {
      text: new TextDecoder('utf-8', { fatal: true }).decode(bytes),
      encoding: 'utf-8',
      warnings: [],
    };
  } catch {
    const text = new TextDecoder('utf-8').decode(bytes);
    let replaced = 0;
    for (const ch of text) if (ch === REPLACEMENT) replaced++;
    return {
      text,
      encoding: 'utf-8',
      warnings: [
        `the file is not valid UTF-8: ${replaced} invalid byte sequence(s) were replaced with U+FFFD`,
      ],
    };
  }
}

/**
 * Line endings → `\n`; a leading BOM, NULs and other C0 control characters (except tab, newline
 * and form feed) removed — they carry no text and confuse markdown renderers and tokenisers.
 */
export function normalizeText(text: string): string {
  return (
    text
      .replace(/^\uFEFF/, '')
      .replace(/\r\n?/g, '\n')
      // eslint-disable-next-line no-control-regex -- removing control characters is the point
      .replace(/[\u0000-\u0008\u000B\u000E-\u001F\u007F]/g, '')
  );
}

/** Plain text and markdown pass through unchanged apart from normalisation. */
export function passThrough(text: string): string {
  const normalized = normalizeText(text);
  // trimEnd, not replace(/\s+$/): that regex retries at every space of a long run (quadratic).
  return normalized.trim() === '' ? '' : `${normalized.trimEnd()}\n`;
}

/** Bytes that count as "control" for the binary sniff: C0 except tab, LF, VT, FF, CR and ESC. */
function isControl(b: number): boolean {
  return (
    (b < 0x20 &&
      b !== 0x09 &&
      b !== 0x0a &&
      b !== 0x0b &&
      b !== 0x0c &&
      b !== 0x0d &&
      b !== 0x1b) ||
    b === 0x7f
  );
}

/**
 * Whether a sample of a file looks like binary data rather than text. UTF-16 with a BOM is text;
 * otherwise any NUL byte, or more than 5 % control bytes, means binary. Invalid UTF-8 alone does
 * not: text in a legacy 8-bit encoding has none of those bytes and is still worth indexing.
 */
export function looksBinary(sample: Uint8Array): boolean {
  if (startsWith(sample, [0xff, 0xfe]) || startsWith(sample, [0xfe, 0xff])) return false;
  let controls = 0;
  for (const b of sample) {
    if (b === 0) return true;
    if (isControl(b)) controls++;
  }
  return sample.length > 0 && controls / sample.length > 0.05;
}
