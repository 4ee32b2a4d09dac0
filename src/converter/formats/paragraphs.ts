/**
 * Lines and pages of extracted text → markdown: the line-joining rules shared by OCR output and
 * PDF text layers. Pure.
 */
import { PAGE_MARKER_PATTERN, pageMarker } from '../contract.js';
import { normalizeText } from './text.js';

/**
 * Joins the lines of one paragraph. A hyphen between two lowercase letters at a line end is a
 * word split by the layout (`organi-` + `zation` → `organization`); before a capital or a digit it
 * is part of the word (`North-` + `East` → `North-East`). Soft hyphens always go. `keepHyphen`,
 * when given, keeps a hyphen between lowercase letters it says belongs to the word.
 */
export function joinLines(
  lines: readonly string[],
  keepHyphen?: (head: string, tail: string) => boolean,
): string {
  let out = '';
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '') continue;
    if (out === '') out = line;
    else if (
      keepHyphen !== undefined &&
      /\p{Ll}-$/u.test(out) &&
      keepHyphen(/(\p{L}+)-$/u.exec(out)?.[1] ?? '', /^\p{L}+/u.exec(line)?.[0] ?? '')
    ) {
      out += line;
    } else if (out.endsWith('\u00AD') || (/\p{Ll}-$/u.test(out) && /^\p{Ll}/u.test(line))) {
      out = out.slice(0, -1) + line;
    } else if (/[\p{L}\p{N}]-$/u.test(out)) out += line;
    else out += ` ${line}`;
  }
  return out.replace(/\u00AD/g, '').replace(/\s+/g, ' ');
}

/**
 * A paragraph that would read as markup it is not: a `#` heading, or a line the chunker would take
 * for a page marker (which would shift every page number after it).
 */
export function escapeParagraph(text: string): string {
  return PAGE_MARKER_PATTERN.test(text) || /^#{1,6}(?:\s|$)/.test(text) ? `\\${text}` : text;
}

/** Tesseract's text (lines, blank line between paragraphs) → markdown paragraphs. */
export function ocrTextToMarkdown(text: string): string {
  return normalizeText(text)
    .split(/\n[ \t]*\n/)
    .map((p) => escapeParagraph(joinLines(p.split('\n'))))
    .filter((p) => p !== '')
    .join('\n\n');
}

/** Markdown of pages → one document, `<!-- page: n -->` before each page (also an empty one). */
export function withPageMarkers(pages: readonly string[]): string {
  const parts = pages.map((m, i) =>
    m === '' ? pageMarker(i + 1) : `${pageMarker(i + 1)}\n\n${m}`,
  );
  return `${parts.join('\n\n')}\n`;
}
