/**
 * Shared by the office converters that go through HTML (DOCX, ODT, PPTX): HTML escaping and GFM
 * footnotes. A note reference is written into the HTML as a private-use placeholder, because
 * turndown would escape a literal `[^1]`; it becomes `[^1]` after conversion, and the notes are
 * appended as `[^1]: text` definitions under their own heading.
 */
import { PAGE_MARKER_PATTERN } from '../../contract.js';
import { htmlToMarkdown } from '../html.js';

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/**
 * Document text that happens to read `<!-- page: 3 -->` on a line of its own would be taken for
 * a page marker by the chunker; a backslash keeps it text (markdown shows `\<` as `<`).
 */
export function escapePageMarkers(markdown: string): string {
  if (!markdown.includes('<!--')) return markdown;
  return markdown.replace(/^.*<!--.*$/gm, (line) =>
    PAGE_MARKER_PATTERN.test(line) ? line.replace('<', '\\<') : line,
  );
}

const OPEN = '\uE000';
const CLOSE = '\uE001';
const PLACEHOLDER = /\uE000([\w-]+)\uE001/g;
const NOTE_START = /\uE002([\w-]+)\uE003/;

/** Where a note is referenced; `label` is letters, digits and `-` only. */
export function noteRef(label: string): string {
  return `${OPEN}${label}${CLOSE}`;
}

export interface Note {
  label: string;
  html: string;
}

/** The heading level of the document's top sections, so `Footnotes` sits beside them. */
function topHeadingLevel(markdown: string): number {
  let level = 7;
  for (const m of markdown.matchAll(/^(#{1,6})[ \t]/gm)) level = Math.min(level, m[1]?.length ?? 7);
  return level === 7 ? 2 : level;
}

/**
 * HTML (with note placeholders) → markdown with GFM footnotes. Notes whose text is empty are
 * dropped together with their references.
 */
export function htmlWithNotesToMarkdown(html: string, notes: readonly Note[]): string {
  const body = htmlToMarkdown(html).markdown.trim();
  // All notes go through turndown at once (one converter per note is slow with thousands), each
  // introduced by a private-use label line to split the result at.
  const joined = notes.map((n) => `<p>\uE002${n.label}\uE003</p>${n.html}`).join('');
  const pieces = notes.length === 0 ? [] : htmlToMarkdown(joined).markdown.split(NOTE_START);
  const definitions: string[] = [];
  const defined = new Set<string>();
  for (let i = 1; i + 1 < pieces.length; i += 2) {
    const label = pieces[i] ?? '';
    // One line per definition: GFM continues a footnote only on indented lines.
    // (?<!\s): a match starts only at the first blank of a run, so long runs cost linear time.
    const text = (pieces[i + 1] ?? '').replace(/(?<!\s)\s*\n\s*/g, ' ').trim();
    if (text === '' || defined.has(label)) continue;
    defined.add(label);
    definitions.push(`[^${label}]: ${text}`);
  }
  const linked = body.replace(PLACEHOLDER, (_m, label: string) =>
    defined.has(label) ? `[^${label}]` : '',
  );
  if (definitions.length === 0) return linked;
  const heading = `${'#'.repeat(topHeadingLevel(linked))} Footnotes`;
  return `${linked}\n\n${heading}\n\n${definitions.join('\n\n')}`;
}
